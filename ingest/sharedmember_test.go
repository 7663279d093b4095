package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/warcio"
)

// TestSharedMemberCapturesMatchCDXJRebuild: the ingester put the records
// of shared gzip members (a WARC compressed as one gzip stream, a member
// holding several records) into the capture index with length 0 while
// its CDXJ side files left them out, so a capture index rebuilt from the
// side files lost those rows, and replay read the member's first record
// for each of them. Now such records get neither a CDXJ line nor a
// capture (as `wayside cdxj` skips them) and are reported: the live
// capture index equals one rebuilt from the side files (Resync), and
// every entry reads back, at its offset and length, as the very record
// the second framing (internal/framescan) finds in its own gzip member.
func TestSharedMemberCapturesMatchCDXJRebuild(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	var stream []byte
	for i := range 12 {
		stream = append(stream, testRecord(i, "stream")...)
	}
	writeQuiet(t, filepath.Join(dir, "onestream.warc.gz"), gz(stream))
	var multi []byte
	multi = append(multi, gz(testRecord(0, "multi"))...)
	multi = append(multi, gz(append(testRecord(1, "multi"), testRecord(2, "multi")...))...)
	multi = append(multi, gz(testRecord(3, "multi"))...)
	multi = append(multi, gz(append(append(testRecord(4, "multi"), testRecord(5, "multi")...), testRecord(6, "multi")...))...)
	multi = append(multi, gz(testRecord(7, "multi"))...)
	writeQuiet(t, filepath.Join(dir, "multi.warc.gz"), multi)

	cdxjDir := filepath.Join(data, "cdxj")
	live, err := captureindex.Open(filepath.Join(data, "captures"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	in, err := ingest.New(ingest.Config{Dirs: []string{dir}, PollInterval: 5 * time.Millisecond,
		Checkpoint: filepath.Join(data, "checkpoint.json"), CDXJDir: cdxjDir}, idx, live)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		n := 0
		for _, f := range in.Status().Files {
			if f.Done {
				n++
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("files not done: %+v", in.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := in.Status()
	if st.Errors != 3 || !strings.Contains(st.LastError, "share it with another record") {
		t.Errorf("%d errors (last %q), want 3: one report per shared gzip member", st.Errors, st.LastError)
	}

	rebuilt, err := captureindex.Open(filepath.Join(data, "rebuilt"), captureindex.WithCDXJDirs(cdxjDir))
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if err := rebuilt.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := func(ix *captureindex.Index) []string {
		var out []string
		err := ix.ScanAll(context.Background(), dedupindex.Selector{}, func(e *captureindex.Entry) error {
			out = append(out, fmt.Sprintf("%s %s %s %d %d %s", e.Key, e.Timestamp(), e.File, e.Offset, e.Length, e.URI))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(out)
		return out
	}
	got, want := rows(live), rows(rebuilt)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("live capture index:\n%s\nrebuilt from the CDXJ side files:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The records alone in their members: multi 0, 3 and 7.
	if len(got) != 3 {
		t.Errorf("%d captures, want the 3 records alone in their gzip members:\n%s", len(got), strings.Join(got, "\n"))
	}

	// Every entry reads back as the record the second framing finds alone
	// in the member at that offset.
	scans := map[string]*framescan.Result{}
	for _, name := range []string{"onestream.warc.gz", "multi.warc.gz"} {
		if scans[name], err = framescan.File(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(scans["onestream.warc.gz"].Records) + len(scans["multi.warc.gz"].Records); n != 20 {
		t.Fatalf("second framing finds %d records, want 20", n)
	}
	err = live.ScanAll(context.Background(), dedupindex.Selector{}, func(e *captureindex.Entry) error {
		var inMember []framescan.Record
		for _, r := range scans[e.File].Records {
			if r.Member == e.Offset {
				inMember = append(inMember, r)
			}
		}
		if len(inMember) != 1 {
			t.Errorf("%s offset %d (%s): the second framing finds %d records in that member, want 1", e.File, e.Offset, e.URI, len(inMember))
			return nil
		}
		f, err := os.Open(filepath.Join(dir, e.File))
		if err != nil {
			return err
		}
		defer f.Close()
		rec, err := warcio.ReadAt(f, e.File, e.Offset, e.Length, warcio.Options{})
		if err != nil {
			t.Errorf("%s offset %d length %d: %v", e.File, e.Offset, e.Length, err)
			return nil
		}
		if fs := inMember[0]; rec.RecordID != fs.ID || rec.TargetURI != fs.URI || rec.ContentLength != fs.Length || e.URI != fs.URI {
			t.Errorf("%s offset %d: read %s %s (%d bytes), index has %s, the second framing %s %s (%d bytes)",
				e.File, e.Offset, rec.RecordID, rec.TargetURI, rec.ContentLength, e.URI, fs.ID, fs.URI, fs.Length)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
