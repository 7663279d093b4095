package ingest_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// A WARC written under its final name (no ".open", as wget writes) that is
// still growing is not taken as finished when the ingester reaches its end
// at a record boundary: only once it has been quiet. Before, the status said
// Done with part of the records, and a restart could trust that.
func TestGrowingFileWithoutOpenSuffixIsNotDoneUntilQuiet(t *testing.T) {
	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := warcio.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, rec.End())
	}
	r.Close()
	half := ends[len(ends)/2]

	dir, data2 := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "growing.warc.gz")
	if err := os.WriteFile(path, data[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	// Still being written: its mtime stays fresh.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	idx, err := pebble.Open(filepath.Join(data2, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	cdxjDir := filepath.Join(data2, "cdxj")
	in, err := ingest.New(ingest.Config{Dirs: []string{dir}, PollInterval: 10 * time.Millisecond,
		Checkpoint: filepath.Join(data2, "checkpoint.json"), CDXJDir: cdxjDir}, idx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	file := func() ingest.FileProgress {
		for _, f := range in.Status().Files {
			return f
		}
		return ingest.FileProgress{}
	}
	wait := func(what string, ok func(ingest.FileProgress) bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(file()); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v", what, file())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("first half read", func(f ingest.FileProgress) bool { return f.Offset == half })
	// Many polls later it is still not Done (the old code marked it Done in
	// the same pass that read the half).
	for i := 0; i < 50; i++ {
		if f := file(); f.Done {
			t.Fatalf("a file still being written was marked Done at offset %d of %d", f.Offset, len(data))
		}
		time.Sleep(10 * time.Millisecond)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[half:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	wait("whole file done", func(f ingest.FileProgress) bool { return f.Done })
	if f := file(); f.Offset != int64(len(data)) {
		t.Fatalf("Done at offset %d, want %d", f.Offset, len(data))
	}
	b, err := os.ReadFile(filepath.Join(cdxjDir, "growing.warc.gz.cdxj"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := cdxj.IndexFile(context.Background(), src, cdxj.IndexOptions{}, func(*cdxj.Line) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != st.Lines || n == 0 {
		t.Fatalf("%d CDXJ lines, want %d", n, st.Lines)
	}
}
