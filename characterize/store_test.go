package characterize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// sampleRecords characterizes the nested test WARC and the corpus once
// and returns the records (revisits included).
func sampleRecords(t *testing.T) []Record {
	t.Helper()
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{})
	scanAll(t, c, nestedWARC(t))
	var out []Record
	for _, f := range st.Files() {
		out = append(out, st.Records(f.File)...)
	}
	if len(out) < 10 {
		t.Fatalf("only %d sample records", len(out))
	}
	return out
}

func putAll(t *testing.T, st *Store, recs []Record) {
	t.Helper()
	for _, r := range recs {
		if err := st.Put(r); err != nil {
			t.Fatal(err)
		}
	}
}

func reopen(t *testing.T, st *Store, dir string) *Store {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return openStore(t, dir, StoreOptions{})
}

// TestStoreReopen: what was stored is there after a reopen, byte for byte
// in its rendering, whether it came from the log or from snapshots.
func TestStoreReopen(t *testing.T) {
	recs := sampleRecords(t)
	for _, compactAt := range []int64{64 << 20, 2 << 10} {
		t.Run(fmt.Sprint(compactAt), func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, dir, StoreOptions{CompactAt: compactAt})
			putAll(t, st, recs)
			if err := st.MarkScanned("x.warc.gz", 1234); err != nil {
				t.Fatal(err)
			}
			want := render(st, true)
			st2 := reopen(t, st, dir)
			if got := render(st2, true); got != want {
				t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
			}
			if sum, _, ok := st2.Container("x.warc.gz"); !ok || sum.ScannedSize != 1234 {
				t.Errorf("scan mark lost: %+v", sum)
			}
			if compactAt < 1<<20 {
				if _, err := os.Stat(filepath.Join(dir, snapshotName)); err != nil {
					t.Errorf("no snapshot written: %v", err)
				}
			}
			if err := st2.Compact(); err != nil {
				t.Fatal(err)
			}
			if got := render(reopen(t, st2, dir), true); got != want {
				t.Fatalf("after compaction and reopen:\n%s", got)
			}
		})
	}
}

// TestStoreCompactionAskedForSurvivesClose: a compaction the log's size
// asked for still runs when Close begins before it does (it used to give
// up, leaving the log uncompacted), and only one is queued at a time.
func TestStoreCompactionAskedForSurvivesClose(t *testing.T) {
	recs := sampleRecords(t)
	dir := t.TempDir()
	release := make(chan struct{})
	var queued atomic.Int32
	defer failpoint.Enable("characterize.compact-queued", func(n int) (int, error) {
		queued.Add(1)
		<-release
		return n, nil
	})()
	st := openStore(t, dir, StoreOptions{CompactAt: 2 << 10})
	putAll(t, st, recs)
	want := render(st, true)
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	// Let the compaction go once Close has begun (bounded wait).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
		st.mu.Lock()
		c := st.closed
		st.mu.Unlock()
		if c {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not begin")
		}
	}
	if n := queued.Load(); n != 1 {
		t.Errorf("%d compactions queued while one waited, want 1", n)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotName)); err != nil {
		t.Fatalf("the compaction asked for was not done: %v", err)
	}
	if got := render(openStore(t, dir, StoreOptions{}), true); got != want {
		t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
	}
}

// TestStoreTornTail: a partial last line (a crash inside a write) is cut
// at open; everything before it is kept and the store goes on.
func TestStoreTornTail(t *testing.T) {
	recs := sampleRecords(t)
	dir := t.TempDir()
	st := openStore(t, dir, StoreOptions{})
	putAll(t, st, recs[:len(recs)-1])
	want := render(st, true)
	st.Close()
	gens, _ := listLogs(dir)
	p := filepath.Join(dir, logName(gens[len(gens)-1]))
	line, err := appendEntry(nil, entry{Rec: &recs[len(recs)-1]})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(line[:len(line)/2])
	f.Close()
	st2 := openStore(t, dir, StoreOptions{})
	if got := render(st2, true); got != want {
		t.Fatalf("torn tail changed the store:\n%s", got)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != before.Size() {
		t.Errorf("torn log not cut back to %d bytes: %v %v", before.Size(), fi.Size(), err)
	}
	putAll(t, st2, recs[len(recs)-1:])
	want = render(st2, true)
	if got := render(reopen(t, st2, dir), true); got != want {
		t.Fatal("entries after a cut tail were lost")
	}
}

// TestStoreDamagedLine: a damaged line in the middle (bit rot) is skipped
// and reported; the lines after it are kept and scan marks are dropped so
// that Resync reads the files again.
func TestStoreDamagedLine(t *testing.T) {
	recs := sampleRecords(t)
	dir := t.TempDir()
	st := openStore(t, dir, StoreOptions{})
	putAll(t, st, recs)
	if err := st.MarkScanned(recs[0].File, 99); err != nil {
		t.Fatal(err)
	}
	st.Close()
	gens, _ := listLogs(dir)
	p := filepath.Join(dir, logName(gens[len(gens)-1]))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"offset":`) // in the first line
	b[i+10] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st2 := openStore(t, dir, StoreOptions{})
	if d := st2.Damaged(); len(d) != 1 || !strings.Contains(d[0], "checksum mismatch") {
		t.Fatalf("damaged lines reported: %q", d)
	}
	if st2.Has(recs[0].File, recs[0].Offset) {
		t.Error("the damaged entry was applied")
	}
	if !st2.Has(recs[len(recs)-1].File, recs[len(recs)-1].Offset) {
		t.Error("entries after the damaged one were lost")
	}
	if sum, _, _ := st2.Container(recs[0].File); sum.ScannedSize != 0 {
		t.Error("scan mark kept although an entry was lost")
	}
}

// TestStoreWriteFaults injects ENOSPC into the log write and into the
// fsync: the Put fails naming the cause, nothing of it is applied or left
// in the log, and later Puts and a reopen work.
func TestStoreWriteFaults(t *testing.T) {
	recs := sampleRecords(t)
	for _, point := range []string{"characterize.log-write", "characterize.log-sync"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, dir, StoreOptions{})
			putAll(t, st, recs[:3])
			want := render(st, true)
			fault := failpoint.Error(fmt.Errorf("fsync: %w", syscall.ENOSPC))
			if point == "characterize.log-write" {
				// Part of the entry reaches the disk, as when a disk fills.
				fault = failpoint.ShortWrite(7, fmt.Errorf("write: %w", syscall.ENOSPC))
			}
			off := failpoint.Enable(point, failpoint.Nth(1, fault))
			err := st.Put(recs[3])
			off()
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "log.") {
				t.Fatalf("Put under ENOSPC: %v", err)
			}
			if st.Has(recs[3].File, recs[3].Offset) || render(st, true) != want {
				t.Fatal("a failed Put changed the store")
			}
			putAll(t, st, recs[3:5])
			want = render(st, true)
			if got := render(reopen(t, st, dir), true); got != want {
				t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestStoreCompactionFault: a snapshot that cannot be written leaves the
// logs in place; nothing is lost.
func TestStoreCompactionFault(t *testing.T) {
	recs := sampleRecords(t)
	dir := t.TempDir()
	off := failpoint.Enable("characterize.snapshot-write", failpoint.Error(syscall.ENOSPC))
	defer off()
	st := openStore(t, dir, StoreOptions{})
	putAll(t, st, recs)
	if err := st.Compact(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Compact: %v", err)
	}
	putAll(t, st, recs[:2])
	want := render(st, true)
	off() // the reopened store's disk has room again
	if got := render(reopen(t, st, dir), true); got != want {
		t.Fatal("a failed compaction lost entries")
	}
}

// TestCharacterizerStoreFailure: when the store cannot write, the
// consumer reports it (Stats, OnCapture, Close) instead of pretending.
func TestCharacterizerStoreFailure(t *testing.T) {
	path := nestedWARC(t)
	defer failpoint.Enable("characterize.log-sync", failpoint.Error(syscall.ENOSPC))()
	st := openStore(t, t.TempDir(), StoreOptions{})
	c, err := New(Options{Store: st, Identifier: testIdentifier(t, Limits{}), Dirs: []string{filepath.Dir(path)}})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := c.ScanFile(t.Context(), path, false, nil)
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if len(fs.Problems) == 0 && err == nil {
		t.Error("scan reported no problem although nothing could be stored")
	}
	if s := c.Stats(); s.Failed == 0 || !strings.Contains(s.LastError, "no space") {
		t.Errorf("stats %+v", s)
	}
	if err := c.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v", err)
	}
	if len(st.Files()) != 0 {
		t.Error("results applied without being stored")
	}
}
