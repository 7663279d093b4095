package s3_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/warcfile/s3"
)

// TestMirror: closed WARC files and their CDXJ go to the bucket and leave
// the directory only once proved; a file still written (.open) stays;
// with the server down nothing local is removed and the next Sync after
// it is back finishes the job; KeepLocal records the proof beside the file.
func TestMirror(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("A-1.warc.gz", "first warc")
	write("A-1.cdxj", "cdxj of A-1\n")
	write("A-2.warc.gz", "second warc")
	write("A-2.warc.gz.cdxj", "cdxj of A-2\n")
	write("A-3.warc.gz.open", "still written")
	b, err := s3.Open(ctx, srv.URL("crawl"))
	if err != nil {
		t.Fatal(err)
	}
	m := &s3.Mirror{Dir: dir, Bucket: b}

	srv.Stop()
	cctx, cancel := context.WithTimeout(ctx, 60e9)
	rep, err := m.Sync(cctx)
	cancel()
	if err != nil || len(rep.Failed) != 2 || len(rep.Uploaded) != 0 {
		t.Fatalf("sync with the server down: %+v, %v", rep, err)
	}
	for _, n := range []string{"A-1.warc.gz", "A-1.cdxj", "A-2.warc.gz", "A-2.warc.gz.cdxj"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("%s removed although its upload failed", n)
		}
	}
	srv.Restart(t)
	rep, err = m.Sync(ctx)
	if err != nil || len(rep.Uploaded) != 2 || len(rep.Failed) != 0 {
		t.Fatalf("sync: %+v, %v", rep, err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "A-3.warc.gz.open" {
		t.Errorf("left in the directory: %v", left)
	}
	list, _ := b.List(ctx)
	var names []string
	for _, i := range list {
		names = append(names, i.Name)
	}
	if strings.Join(names, " ") != "A-1.cdxj A-1.warc.gz A-2.warc.gz A-2.warc.gz.cdxj" {
		t.Errorf("bucket holds %v", names)
	}
	o, _ := b.Open(ctx, "A-2.warc.gz")
	p := make([]byte, 11)
	if n, _ := o.ReadAt(p, 0); string(p[:n]) != "second warc" {
		t.Errorf("remote A-2 = %q", p[:n])
	}

	// KeepLocal: the file stays, its proof beside it; a second Sync does
	// not upload it again.
	write("A-3.warc.gz", "third warc")
	m.KeepLocal = true
	if rep, err := m.Sync(ctx); err != nil || len(rep.Uploaded) != 1 {
		t.Fatalf("keep-local sync: %+v %v", rep, err)
	}
	proof, err := os.ReadFile(filepath.Join(dir, "A-3.warc.gz"+s3.UploadedSuffix))
	if err != nil || !strings.Contains(string(proof), "s3://wayside/crawl/A-3.warc.gz") {
		t.Errorf("proof %q, %v", proof, err)
	}
	if rep, err := m.Sync(ctx); err != nil || len(rep.Uploaded) != 0 {
		t.Errorf("second keep-local sync uploaded again: %+v %v", rep, err)
	}
}
