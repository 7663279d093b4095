package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile/s3"
	"github.com/wayside-archive/wayside/warcio"
)

// TestCrawlUpload crawls the example site with --upload to a real S3
// server (SeaweedFS) and --max-file-size small enough for several files:
// every closed WARC and its CDXJ are in the bucket, the local copies are
// gone only for those, and the objects read back (by range, as replay
// reads them) hold the same records the crawl wrote. With the server
// stopped, the crawl fails naming the bucket and keeps everything local;
// `wayside upload` then finishes the job.
func TestCrawlUpload(t *testing.T) {
	srv := s3test.Start(t)
	site, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	ctx := context.Background()
	warcs := filepath.Join(t.TempDir(), "warcs")
	// A keep-local crawl first: its files are the reference.
	ref := filepath.Join(t.TempDir(), "ref")
	args := func(dir, prefix string, extra ...string) []string {
		return append(append([]string{"crawl", "--warc-dir", dir, "--delay", "0", "--quiet", "--max-file-size", "40000"}, extra...), site.URL+"/")
	}
	if _, stderr, err := runCLI(ctx, args(ref, "", "--upload", srv.URL("ref"), "--keep-local")...); err != nil {
		t.Fatalf("crawl --keep-local: %v\n%s", err, stderr)
	}
	refWARCs, _ := filepath.Glob(filepath.Join(ref, "*.warc.gz"))
	if len(refWARCs) < 2 {
		t.Fatalf("want several WARC files, got %v", refWARCs)
	}
	for _, w := range refWARCs {
		if _, err := os.Stat(w + s3.UploadedSuffix); err != nil {
			t.Errorf("%s has no upload proof beside it: %v", w, err)
		}
	}
	if _, stderr, err := runCLI(ctx, args(warcs, "", "--upload", srv.URL("crawl"))...); err != nil {
		t.Fatalf("crawl --upload: %v\n%s", err, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz*")); len(left) != 0 {
		t.Errorf("closed WARC files or side files left locally after a proved upload: %v", left)
	}
	b, err := s3.Open(ctx, srv.URL("crawl"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	records := 0
	for _, o := range list {
		names = append(names, o.Name)
		if !strings.HasSuffix(o.Name, ".warc.gz") {
			continue
		}
		obj, err := b.Open(ctx, o.Name)
		if err != nil {
			t.Fatal(err)
		}
		r := warcio.NewReader(io.NewSectionReader(obj, 0, o.Size), o.Name, warcio.Options{BlockDigest: true})
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s in the bucket: %v", o.Name, err)
			}
			if rec.BlockDigest != "" && !strings.EqualFold(rec.BlockDigest, rec.Headers.Get("WARC-Block-Digest")) {
				t.Errorf("%s offset %d: block digest %s, header %s", o.Name, rec.Offset, rec.BlockDigest, rec.Headers.Get("WARC-Block-Digest"))
			}
			records++
		}
		obj.Close()
	}
	sort.Strings(names)
	nWARC, nCDXJ := 0, 0
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, ".warc.gz"):
			nWARC++
		case strings.HasSuffix(n, ".cdxj"):
			nCDXJ++
		}
	}
	if nWARC < 2 || nCDXJ != nWARC || records < 20 {
		t.Errorf("bucket holds %d WARC files, %d CDXJ files, %d records: %v", nWARC, nCDXJ, records, names)
	}

	// The server down: the crawl fails at start-up naming the bucket, and
	// writes nothing.
	srv.Stop()
	down := filepath.Join(t.TempDir(), "down")
	cctx, cancel := context.WithTimeout(ctx, 60e9)
	_, stderr, err := runCLI(cctx, args(down, "", "--upload", srv.URL("down"))...)
	cancel()
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error()+stderr, "s3://wayside/down") {
		t.Errorf("crawl --upload with the server down: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(down); err == nil {
		t.Errorf("a crawl that could not reach its bucket wrote %s", down)
	}
	srv.Restart(t)
	// `wayside upload` sends what a keep-local crawl kept only after
	// removing their proofs (as if the uploads had failed).
	for _, w := range refWARCs {
		os.Remove(w + s3.UploadedSuffix)
	}
	out, stderr, err := runCLI(ctx, "upload", "--to", srv.URL("again"), ref)
	if err != nil {
		t.Fatalf("upload: %v\n%s", err, stderr)
	}
	if strings.Count(out, " proved") != len(refWARCs) {
		t.Errorf("upload proved %d files, want %d:\n%s", strings.Count(out, " proved"), len(refWARCs), out)
	}
}

// TestReadingCommandsTakeS3Inputs: `cdxj` of a bucket prefix, of an object
// URL and of the same files on local disk print the same index (the
// filename fields name the same files), and nothing fetched is left in
// TMPDIR; a prefix holding no archive is an error naming it.
func TestReadingCommandsTakeS3Inputs(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	files := testenv.CopyFiles(t, dir, filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz"),
		filepath.Join(testenv.SharedDir(t), "corpus", "warc", "warcio-example.warc.gz"))
	if _, stderr, err := runCLI(ctx, "upload", "-q", "--keep-local", "--to", srv.URL("coll"), dir); err != nil {
		t.Fatalf("upload: %v\n%s", err, stderr)
	}
	local, stderr, err := runCLI(ctx, append([]string{"cdxj"}, files...)...)
	if err != nil {
		t.Fatalf("cdxj of local files: %v\n%s", err, stderr)
	}
	remote, stderr, err := runCLI(ctx, "cdxj", srv.URL("coll"))
	if err != nil {
		t.Fatalf("cdxj of a prefix: %v\n%s", err, stderr)
	}
	if remote != local || strings.Count(local, "\n") < 10 {
		t.Errorf("cdxj of the bucket prefix differs from the local files' (%d vs %d lines)", strings.Count(remote, "\n"), strings.Count(local, "\n"))
	}
	one, stderr, err := runCLI(ctx, "cdxj", "s3://wayside/coll/pywb-iana.warc.gz?endpoint="+srv.Endpoint)
	if err != nil {
		t.Fatalf("cdxj of an object URL: %v\n%s", err, stderr)
	}
	if !strings.Contains(local, one) || !strings.Contains(one, `"filename": "pywb-iana.warc.gz"`) {
		t.Errorf("cdxj of one object:\n%s", one)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("fetched inputs left in TMPDIR: %v", left)
	}
	_, _, err = runCLI(ctx, "cdxj", srv.URL("empty"))
	if err == nil || !strings.Contains(err.Error(), "s3://wayside/empty/") {
		t.Errorf("cdxj of an empty prefix: %v", err)
	}
}
