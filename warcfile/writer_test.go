package warcfile

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warctest"
	"github.com/wayside-archive/wayside/warcio"
)

func testRecord(uri string, body []byte) *warcio.Draft {
	r := &warcio.Draft{Type: "resource", ID: warcio.NewRecordID(), Date: warcio.RecordDate(time.Now(), warcio.Version11)}
	r.Fields = []warcio.Field{{Name: "WARC-Target-URI", Value: uri}, {Name: "Content-Type", Value: "application/octet-stream"}}
	r.Block = body
	return r
}

// TestGroupCommit: many concurrent writers share fsyncs, every capture is
// returned only after its fsync, and CDXJ lines appear for durable records.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(WriterOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr, err := w.Write(testRecord(fmt.Sprintf("http://example.org/%d", i), bytes.Repeat([]byte{byte(i)}, 1000)))
			if err != nil {
				t.Error(err)
				return
			}
			caps, err := w.WaitDurable(context.Background(), wr)
			if err != nil || len(caps) != 1 {
				t.Errorf("WaitDurable: %v, %d captures", err, len(caps))
				return
			}
			w.mu.Lock()
			synced := w.synced
			w.mu.Unlock()
			if synced < wr.seq {
				t.Errorf("capture returned before its fsync (synced %d < seq %d)", synced, wr.seq)
			}
			if err := recordAt(dir, caps[0]); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d concurrent records, %d fsyncs", n, w.Stats().Syncs)
	// Deterministic group commit: records written while nobody waits are
	// all covered by the one fsync of the first waiter.
	var batch []Written
	for i := 0; i < n; i++ {
		wr, err := w.Write(testRecord(fmt.Sprintf("http://example.org/b/%d", i), []byte("b")))
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, wr)
	}
	before := w.Stats().Syncs
	for _, wr := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.WaitDurable(context.Background(), wr); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := w.Stats().Syncs - before; got != 1 {
		t.Errorf("%d fsyncs for %d records written before anyone waited, want 1", got, n)
	}
	if err := w.Check(); err != nil {
		t.Error(err)
	}
	// Check notices a file that does not hold what the writer wrote.
	w.mu.Lock()
	w.f.Write([]byte("garbage"))
	w.mu.Unlock()
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "writer wrote") {
		t.Errorf("Check after an outside write: %v", err)
	}
	w.mu.Lock()
	w.f.Truncate(w.size)
	w.f.Seek(w.size, 0)
	w.mu.Unlock()
	if err := w.Check(); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cdx, _ := filepath.Glob(filepath.Join(dir, "*.cdxj"))
	if len(cdx) != 1 {
		t.Fatalf("CDXJ files %v", cdx)
	}
	b, _ := os.ReadFile(cdx[0])
	if lines := strings.Count(string(b), "\n"); lines != 2*n {
		t.Errorf("%d CDXJ lines, want %d", lines, 2*n)
	}
	if got := len(readDir(t, dir)); got != 2*n+1 {
		t.Errorf("%d records on disk, want %d", got, 2*n+1)
	}
}

// TestRecoverPartialTail simulates a crash inside a record: the complete
// records are kept, the tail is saved aside and reported, the file is
// renamed and its CDXJ rebuilt; a second recovery finds nothing.
func TestRecoverPartialTail(t *testing.T) {
	for _, cut := range []int{1, 10, 100, -1} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			w, err := OpenWriter(WriterOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			var last Written
			for i := 0; i < 3; i++ {
				if last, err = w.Write(testRecord(fmt.Sprintf("http://example.org/%d", i), bytes.Repeat([]byte("x"), 5000+i))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.WaitDurable(context.Background(), last); err != nil {
				t.Fatal(err)
			}
			open := filepath.Join(dir, w.name+OpenSuffix)
			good, _ := os.Stat(open)
			// Append part of another record, as a crash mid-write leaves it.
			more, err := w.compress([]*warcio.Draft{testRecord("http://example.org/partial", bytes.Repeat([]byte("y"), 9000))}, "", false, new(int64))
			if err != nil {
				t.Fatal(err)
			}
			tail := more[0].member
			if cut > 0 {
				tail = tail[:cut]
			} else {
				tail = tail[:len(tail)-3] // all but the gzip trailer's end
			}
			f, _ := os.OpenFile(open, os.O_WRONLY|os.O_APPEND, 0)
			f.Write(tail)
			f.Close()
			// The process "dies": no Close. Recovery runs on the next open.
			rep, err := Recover(dir, RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.PartialTails != 1 || len(rep.Files) != 1 {
				t.Fatalf("report %+v", rep)
			}
			rf := rep.Files[0]
			if rf.Records != 4 || rf.KeptBytes != good.Size() || rf.TailBytes != int64(len(tail)) || rf.Problem == "" {
				t.Errorf("recovered %+v, want 4 records, %d bytes kept, %d tail bytes", rf, good.Size(), len(tail))
			}
			saved, err := os.ReadFile(filepath.Join(dir, rf.TailFile))
			if err != nil || !bytes.Equal(saved, tail) {
				t.Errorf("tail not saved intact: %v", err)
			}
			if _, err := os.Stat(open); !os.IsNotExist(err) {
				t.Errorf(".open file still there")
			}
			r, err := warcio.Open(filepath.Join(dir, rf.Final))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				if _, err := r.Next(); err != nil {
					if err.Error() != "EOF" {
						t.Errorf("recovered file: %v", err)
					}
					break
				}
				n++
			}
			r.Close()
			if n != 4 {
				t.Errorf("%d records readable after recovery, want 4", n)
			}
			cdx, _ := os.ReadFile(filepath.Join(dir, cdxj.SideFileName(rf.Final)))
			if strings.Count(string(cdx), "\n") != 3 {
				t.Errorf("rebuilt CDXJ:\n%s", cdx)
			}
			for _, p := range warctest.Files(t, dir, false) {
				testenv.StrictWARC(t, p)
			}
			if rep2, err := Recover(dir, RecoverOptions{}); err != nil || len(rep2.Files) != 0 {
				t.Errorf("second recovery: %+v %v", rep2, err)
			}
		})
	}
}

// TestDirLock: a second writer on a directory in use is refused (its
// recovery would otherwise finalise the live writer's .open file).
func TestDirLock(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(WriterOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(testRecord("http://example.org/", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWriter(WriterOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second writer on %s: %v, want refusal", dir, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) != 1 {
		t.Fatalf("live .open file disturbed: %v", m)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, err := OpenWriter(WriterOptions{Dir: dir})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	w2.Close()
}

// FuzzScanMembers: the recovery scanner never panics, reports records
// back to back from offset 0, and stops at the first damaged byte.
func FuzzScanMembers(f *testing.F) {
	dir := f.TempDir()
	w, err := OpenWriter(WriterOptions{Dir: dir, NoCDXJ: true})
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := w.Write(testRecord(fmt.Sprintf("http://example.org/%d", i), bytes.Repeat([]byte("z"), 100*i))); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	good, err := os.ReadFile(m[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(append(append([]byte{}, good...), 0x1f, 0x8b, 8))
	f.Add([]byte("WARC/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var end int64
		err := warcio.ScanMembers(bytes.NewReader(b), func(off, length int64, hdr http.Header, head []byte) {
			if off != end || length <= 0 {
				t.Fatalf("record at %d+%d, previous ended at %d", off, length, end)
			}
			end = off + length
		})
		if end > int64(len(b)) || (err == nil && end != int64(len(b))) {
			t.Fatalf("scanned to %d of %d bytes, err %v", end, len(b), err)
		}
	})
}

// TestRotationUnderConcurrency: with many writers and a small file size,
// files rotate while other records are being written and synced. Every
// record written to a file is durable and has its CDXJ line before the
// file is closed: each closed file's CDXJ is exactly `wayside cdxj` of it,
// sorted, and every capture is delivered once, in file order.
func TestRotationUnderConcurrency(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	last := map[string]int64{}
	delivered := 0
	sub := wayside.SubscriberFunc(func(_ context.Context, c wayside.Capture) error {
		mu.Lock()
		defer mu.Unlock()
		if off, ok := last[c.File]; ok && c.Offset <= off {
			t.Errorf("capture at %s offset %d delivered after offset %d", c.File, c.Offset, off)
		}
		last[c.File] = c.Offset
		delivered++
		return nil
	})
	w, err := OpenWriter(WriterOptions{Dir: dir, MaxFileSize: 20 << 10, CompressionLevel: 1, Subscriber: sub})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := sitetest.Blob(uint64(g*1000+i), 500+97*i)
				wr, err := w.Write(testRecord(fmt.Sprintf("http://example.org/%d/%d", g, i), body))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := w.WaitDurable(context.Background(), wr); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Check(); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warctest.Files(t, dir, false)
	if len(files) < 10 {
		t.Fatalf("only %d files: the test did not rotate enough", len(files))
	}
	var sides []string
	for _, f := range files {
		side := filepath.Join(dir, cdxj.SideFileName(filepath.Base(f)))
		sides = append(sides, side)
		if got, want := readFile(t, side), indexOf(t, f); got != want {
			t.Errorf("%s is not the index of its WARC file", side)
		}
	}
	if n := len(cdxjtest.CheckSorted(t, sides)); n != writers*each || delivered != writers*each {
		t.Errorf("%d CDXJ lines, %d captures delivered, want %d", n, delivered, writers*each)
	}
}

// recordAt checks that c points at its record in dir.
func recordAt(dir string, c wayside.Capture) error { return warctest.RecordAt(dir, c) }

// readDir reads every WARC file in dir (final and .open) with warcio.
func readDir(t testing.TB, dir string) []warctest.Record {
	t.Helper()
	return warctest.ReadDirs(t, dir)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// indexOf is `wayside cdxj` of one WARC file: its index lines, sorted.
func indexOf(t testing.TB, warc string) string { return cdxjtest.IndexOf(t, warc) }

// TestGroupCommitBatched: WaitDurableBatched waiters share one fsync:
// with a CommitWindow too long to matter, the fsync starts when
// CommitBatchRecords waiters have gathered, and covers them all; no
// capture is returned before its fsync. A lone waiter is made durable by
// the window's timer, and Close makes durable the records of waiters
// still gathering.
func TestGroupCommitBatched(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(WriterOptions{Dir: dir, CommitWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WaitDurable(context.Background(), mustWrite(t, w, "http://example.org/first")); err != nil {
		t.Fatal(err)
	}
	before := w.Stats().Syncs
	var wg sync.WaitGroup
	for i := range CommitBatchRecords {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr := mustWrite(t, w, fmt.Sprintf("http://example.org/%d", i))
			caps, err := w.WaitDurableBatched(context.Background(), wr)
			if err != nil || len(caps) != 1 {
				t.Errorf("WaitDurableBatched: %v, %d captures", err, len(caps))
				return
			}
			w.mu.Lock()
			synced := w.synced
			w.mu.Unlock()
			if synced < wr.seq {
				t.Errorf("capture returned before its fsync (synced %d < seq %d)", synced, wr.seq)
			}
		}()
	}
	wg.Wait()
	if got := w.Stats().Syncs - before; got != 1 {
		t.Errorf("%d fsyncs for %d batched waiters, want 1", got, CommitBatchRecords)
	}

	// Waiters still gathering when the writer closes: Close syncs them.
	before = w.Stats().Syncs
	const gathering = 3
	for i := range gathering {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.WaitDurableBatched(context.Background(), mustWrite(t, w, fmt.Sprintf("http://example.org/c/%d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		w.mu.Lock()
		n := w.batched
		w.mu.Unlock()
		if n == gathering {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d waiters gathered", n, gathering)
		}
		runtime.Gosched()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := w.Stats().Syncs - before; got != 1 {
		t.Errorf("%d fsyncs for %d gathering waiters at Close, want 1", got, gathering)
	}
	if got := len(readDir(t, dir)); got != 1+1+CommitBatchRecords+gathering {
		t.Errorf("%d records on disk, want %d", got, 1+1+CommitBatchRecords+gathering)
	}

	// A lone waiter: the window's timer makes it durable.
	w, err = OpenWriter(WriterOptions{Dir: t.TempDir(), CommitWindow: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if caps, err := w.WaitDurableBatched(context.Background(), mustWrite(t, w, "http://example.org/lone")); err != nil || len(caps) != 1 {
		t.Fatalf("lone WaitDurableBatched: %v, %d captures", err, len(caps))
	}
	if s := w.Stats().Syncs; s != 1 {
		t.Errorf("%d fsyncs for a lone waiter, want 1", s)
	}
}

// mustWrite writes a record (an error fails the test; it is called from
// goroutines, so it does not stop it).
func mustWrite(t *testing.T, w *Writer, uri string) Written {
	t.Helper()
	wr, err := w.Write(testRecord(uri, []byte("payload of "+uri)))
	if err != nil {
		t.Error(err)
	}
	return wr
}
