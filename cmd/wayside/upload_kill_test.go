package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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

// TestCrawlUploadKill9 kills `wayside crawl --upload s3://…` (SIGKILL at a
// failpoint) while it uploads its second WARC file: before the object is
// put, after it is put but before it is proved, after it is proved but
// before the local copies go, and between removing the side file and the
// WARC file. After each kill nothing is lost: every WARC file the crawl
// wrote is either local (whole) or proved in the bucket, and a local file
// whose copy is not proved was not removed. The next run of the same
// crawl first finishes the upload: afterwards every WARC file of the
// killed run is in the bucket with the bytes it had locally and every
// record of it reads back (0 records lost), each with its CDXJ, and
// nothing of the killed run is left locally.
func TestCrawlUploadKill9(t *testing.T) {
	srv := s3test.Start(t)
	site, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	ctx := context.Background()
	for i, point := range []string{"s3.upload-before-put", "s3.upload-after-put", "s3.mirror-before-remove", "s3.mirror-between-removes"} {
		t.Run(point, func(t *testing.T) {
			warcs := filepath.Join(t.TempDir(), "warcs")
			prefix := fmt.Sprintf("kill%d", i)
			args := []string{"crawl", "--warc-dir", warcs, "--delay", "0", "--quiet", "--max-file-size", "40000",
				"--upload", srv.URL(prefix), site.URL + "/"}
			js, _ := json.Marshal(args)
			t.Setenv(failpointsEnv, point+"=2*kill")
			if !testenv.CrashChild(t, cliChildEnv+"="+string(js), func(string) bool { return false }) {
				t.Fatalf("the crawl was not killed at %s", point)
			}
			t.Setenv(failpointsEnv, "")
			b, err := s3.Open(ctx, srv.URL(prefix))
			if err != nil {
				t.Fatal(err)
			}
			// What the killed run left: local files, and proved objects.
			local, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
			snapshot := map[string][]byte{}
			for _, p := range local {
				raw, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				snapshot[filepath.Base(p)] = raw
			}
			remote := map[string]bool{}
			list, err := b.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range list {
				if strings.HasSuffix(o.Name, ".warc.gz") {
					remote[o.Name] = true
				}
			}
			if len(snapshot) == 0 || len(remote) == 0 && point != "s3.upload-before-put" {
				t.Fatalf("after the kill: local %v, remote %v", keys(snapshot), keys(remote))
			}
			t.Logf("after the kill: local %v, in the bucket %v", keys(snapshot), keys(remote))
			// Every remote object not also local must have been proved:
			// it reads back whole, its records complete.
			for name := range remote {
				if _, ok := snapshot[name]; !ok {
					readBucketWARC(t, b, name)
				}
			}
			// The next run finishes the upload before it crawls.
			if _, stderr, err := runCLI(ctx, args...); err != nil {
				t.Fatalf("the next run: %v\n%s", err, stderr)
			}
			for name, raw := range snapshot {
				if _, err := os.Stat(filepath.Join(warcs, name)); err == nil {
					t.Errorf("%s still local after the next run", name)
				}
				got := readBucketWARC(t, b, name)
				if sha256.Sum256(got) != sha256.Sum256(raw) {
					t.Errorf("%s in the bucket differs from the local file the killed run left", name)
				}
			}
			list, _ = b.List(ctx)
			names := map[string]bool{}
			for _, o := range list {
				names[o.Name] = true
			}
			for name := range names {
				if strings.HasSuffix(name, ".warc.gz") && !names[name+".cdxj"] {
					t.Errorf("%s is in the bucket without its CDXJ (%v)", name, keys(names))
				}
			}
			for name := range remote {
				if !names[name] {
					t.Errorf("%s was in the bucket after the kill and is gone", name)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz*")); len(left) != 0 {
				t.Errorf("left locally after the next run: %v", left)
			}
		})
	}
}

// readBucketWARC reads the object name whole and every record of it,
// failing the test on any error; it returns the bytes.
func readBucketWARC(t *testing.T, b *s3.Bucket, name string) []byte {
	t.Helper()
	o, err := b.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer o.Close()
	raw, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r := warcio.NewReader(bytes.NewReader(raw), name, warcio.Options{BlockDigest: true})
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s in the bucket, record %d: %v", name, n, err)
		}
		if rec.BlockDigest != "" && !strings.EqualFold(rec.BlockDigest, rec.Headers.Get("WARC-Block-Digest")) {
			t.Errorf("%s offset %d: block digest %s, header %s", name, rec.Offset, rec.BlockDigest, rec.Headers.Get("WARC-Block-Digest"))
		}
		n++
	}
	if n == 0 {
		t.Errorf("%s in the bucket holds no record", name)
	}
	return raw
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
