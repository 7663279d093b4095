package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/framescan"
)

func testRecord(i int, tag string) []byte {
	body := fmt.Sprintf("payload %s %d %s", tag, i, bytes.Repeat([]byte{'a' + byte(i%26)}, 100+i))
	block := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:%08x-0000-4000-8000-%012d>\r\nWARC-Target-URI: http://example.org/%s/%d\r\nWARC-Date: 2024-05-06T07:08:%02dZ\r\nContent-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n",
		crc32.ChecksumIEEE([]byte(tag)), i, tag, i, i%60, len(block), block)
}

func gz(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// TestOneStreamAndDamagedFilesIngestedOnce: `wayside serve` re-ingested a
// WARC compressed as one gzip stream on every poll, without end. A
// one-stream WARC and a damaged one (junk between gzip members, a member
// holding two records with junk between them) are each ingested exactly
// once, however many polls follow: the record counts equal what the
// second framing (internal/framescan) finds, the damaged stretches are
// reported once each, and later polls (made visible by marker files
// ingested after them) add nothing.
func TestOneStreamAndDamagedFilesIngestedOnce(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	var stream []byte
	for i := range 30 {
		stream = append(stream, testRecord(i, "stream")...)
	}
	writeQuiet(t, filepath.Join(dir, "onestream.warc.gz"), gz(stream))
	var damaged []byte
	damaged = append(damaged, gz(testRecord(0, "damaged"))...)
	damaged = append(damaged, gz(testRecord(1, "damaged"))...)
	damaged = append(damaged, "not gzip at all\n"...)
	damaged = append(damaged, gz(append(append(testRecord(2, "damaged"), "junk line in the member\n"...), testRecord(3, "damaged")...))...)
	damaged = append(damaged, gz(testRecord(4, "damaged"))...)
	writeQuiet(t, filepath.Join(dir, "damaged.warc.gz"), damaged)
	want := map[string]int64{}
	for _, name := range []string{"onestream.warc.gz", "damaged.warc.gz"} {
		res, err := framescan.File(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want[name] = int64(len(res.Records))
	}
	if want["onestream.warc.gz"] != 30 || want["damaged.warc.gz"] != 5 {
		t.Fatalf("second framing finds %v", want)
	}

	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	in, err := ingest.New(ingest.Config{Dirs: []string{dir}, PollInterval: 5 * time.Millisecond,
		Checkpoint: filepath.Join(data, "checkpoint.json"), CDXJDir: filepath.Join(data, "cdxj")}, idx, nil)
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
	files := func() map[string]ingest.FileProgress {
		m := map[string]ingest.FileProgress{}
		for _, f := range in.Status().Files {
			m[f.Name] = f
		}
		return m
	}
	wait := func(what string, ok func(map[string]ingest.FileProgress) bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !ok(files()); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v", what, files())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("both files done", func(m map[string]ingest.FileProgress) bool {
		return m["onestream.warc.gz"].Done && m["damaged.warc.gz"].Done
	})
	// Each marker is ingested by a later poll than the one before it: by
	// the second, the two files have been looked at again at least once.
	for i := range 3 {
		name := fmt.Sprintf("marker%d.warc.gz", i)
		writeQuiet(t, filepath.Join(dir, name), gz(testRecord(i, fmt.Sprintf("marker%d", i))))
		wait(name+" done", func(m map[string]ingest.FileProgress) bool { return m[name].Done })
	}
	m := files()
	for name, n := range want {
		if m[name].Records != n {
			t.Errorf("%s: %d records ingested, the file holds %d", name, m[name].Records, n)
		}
		if fi, _ := os.Stat(filepath.Join(dir, name)); m[name].Offset != fi.Size() {
			t.Errorf("%s: checkpoint at offset %d of %d", name, m[name].Offset, fi.Size())
		}
	}
	st := in.Status()
	if st.Records != want["onestream.warc.gz"]+want["damaged.warc.gz"]+3 {
		t.Errorf("%d records ingested in all, want %d", st.Records, want["onestream.warc.gz"]+want["damaged.warc.gz"]+3)
	}
	if st.Errors != 4 {
		t.Errorf("%d errors reported (last %q), want 4: the junk between members and the junk line, once each, and the records in shared gzip members, once per file", st.Errors, st.LastError)
	}
}

func writeQuiet(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
}
