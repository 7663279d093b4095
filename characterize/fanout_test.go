package characterize

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestFanoutDropsAndResync: behind a Fanout whose queue is too small, the
// consumer misses captures; once the queue drains the Fanout has it
// Resync, and the store then equals a characterization of the files
// read whole.
func TestFanoutDropsAndResync(t *testing.T) {
	dir := t.TempDir()
	for _, src := range testenv.CorpusWARCs(t) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644)
	}
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{Dirs: []string{dir}, Workers: 1, Queue: 1})
	fan := wayside.NewFanout(wayside.WithQueueSize(2))
	fan.Add("characterize", c)
	deliverAll(t, dir, fan)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := fan.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s := fan.Stats()[0]
	if s.Dropped == 0 || s.Resyncs == 0 || s.Behind {
		t.Fatalf("fanout stats %+v: the test wants drops and a resync", s)
	}
	if err := fan.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := openStore(t, "", StoreOptions{})
	scanAll(t, newCharacterizer(t, fresh, Options{}), testenv.CorpusWARCs(t)...)
	if got, want := render(st, true), render(fresh, true); got != want {
		t.Fatalf("after drops and a resync:\n%s\nwant:\n%s", got, want)
	}
}
