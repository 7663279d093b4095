package characterize

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
)

const crashChildEnv = "WAYSIDE_CHARACTERIZE_CRASH_CHILD"

// crashChild is the ingesting process TestCrashKill kills (the test
// binary re-executed with crashChildEnv set: TestMain runs it instead of
// the tests). It opens the store (catching up on what a previous child
// left undone), then delivers every capture of the WARC files as the
// ingester does, printing "ACK file offset puid" for each record once the
// store has fsynced it. spec is "STORE|WARCS|FAILPOINT-SPEC": the armed
// point kills it (internal/failpoint).
func crashChild(spec string) error {
	f := strings.SplitN(spec, "|", 3)
	if len(f) != 3 {
		return fmt.Errorf("bad spec %q", spec)
	}
	storeDir, warcDir := f[0], f[1]
	st, err := OpenStore(storeDir, StoreOptions{CompactAt: 16 << 10}) // compactions happen while it is killed
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	// The point is armed once the first durable batch is acknowledged
	// (its ACK lines written), so a kill at it always leaves acknowledged
	// results to check, whatever batches the timing made before.
	armed := false // OnCommit runs on one goroutine, batch after batch
	c, err := New(Options{Store: st, Dirs: []string{warcDir}, Workers: 2, CatchUp: true, OnCommit: func(rs []Record) {
		for _, r := range rs {
			fmt.Fprintf(out, "ACK %s %d %s\n", r.File, r.Offset, r.PUID)
		}
		out.Flush()
		if !armed {
			armed = true
			if _, err := failpoint.Arm(f[2]); err != nil {
				fmt.Fprintln(os.Stderr, "crash child:", err)
				os.Exit(3)
			}
		}
	}})
	if err != nil {
		return err
	}
	if err := deliver(warcDir, c); err != nil {
		return err
	}
	c.Flush(context.Background())
	fmt.Fprintln(out, "DONE")
	out.Flush()
	io.Copy(io.Discard, os.Stdin) // wait to be killed
	return nil
}

// TestCrashKill kills an ingesting child process with SIGKILL at random
// failpoints of the store (before a log write, before its fsync, before a
// snapshot is written), three times in a row (each child catches up on
// what the previous one left; a child that finishes before its point is
// killed at rest), and checks after each kill that every acknowledged result is
// in the store as acknowledged and the store's invariants hold; finally a
// catch-up makes the store equal to characterizing the files afresh.
func TestCrashKill(t *testing.T) {
	warcDir := t.TempDir()
	for _, src := range append(testenv.CorpusWARCs(t), nestedWARC(t)) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(warcDir, filepath.Base(src)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	storeDir := t.TempDir()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	acked := map[string]string{} // "file offset" → PUID
	for round := range 3 {
		// The nth hit after the child's first acknowledged batch (it arms
		// the point then): n >= 2 for the log points, so that the kill
		// also leaves results acknowledged since the arming behind.
		points := []struct {
			name string
			max  int
		}{{"characterize.log-write", 12}, {"characterize.log-sync", 12}, {"characterize.snapshot-write", 3}}
		p := points[rnd.IntN(len(points))]
		nth := 2 + rnd.IntN(p.max)
		if p.name == "characterize.snapshot-write" {
			nth = 1 + rnd.IntN(p.max)
		}
		n, done := 0, false
		atPoint := testenv.CrashChild(t, fmt.Sprintf("%s=%s|%s|%s=%d*kill", crashChildEnv, storeDir, warcDir, p.name, nth), func(l string) bool {
			f := strings.Fields(l)
			if len(f) >= 3 && f[0] == "ACK" {
				puid := ""
				if len(f) == 4 {
					puid = f[3]
				}
				acked[f[1]+" "+f[2]] = puid
				n++
			}
			done = l == "DONE" // the point was hit fewer than nth times: killed at rest
			return done
		})
		if !atPoint && !done {
			t.Fatalf("round %d: child neither died at %s #%d nor finished", round, p.name, nth)
		}
		t.Logf("round %d: killed at %s #%d (finished first: %v) after %d acknowledgements (%d distinct so far)", round, p.name, nth, done, n, len(acked))
		if atPoint && n == 0 {
			t.Fatalf("round %d: the child was killed at %s before acknowledging anything (the point is armed after the first acknowledgement)", round, p.name)
		}

		st, err := OpenStore(storeDir, StoreOptions{})
		if err != nil {
			t.Fatalf("reopen after kill: %v", err)
		}
		for k, puid := range acked {
			file, off, _ := strings.Cut(k, " ")
			o, _ := strconv.ParseInt(off, 10, 64)
			r, ok := st.Get(file, o)
			if !ok {
				t.Fatalf("round %d: acknowledged result %s lost", round, k)
			}
			if r.PUID != puid && !r.IsRevisit() { // a revisit may have been resolved since
				t.Fatalf("round %d: %s acknowledged as %q, stored as %q", round, k, puid, r.PUID)
			}
		}
		if err := st.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if d := st.Damaged(); len(d) > 0 {
			t.Fatalf("round %d: damaged entries after kill -9: %v", round, d)
		}
		st.Close()
	}

	// Catch up in-process; the result equals a fresh characterization.
	st := openStore(t, storeDir, StoreOptions{})
	c := newCharacterizer(t, st, Options{Dirs: []string{warcDir}})
	if err := c.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := openStore(t, "", StoreOptions{})
	fc := newCharacterizer(t, fresh, Options{Dirs: []string{warcDir}})
	if err := fc.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := render(st, true), render(fresh, true); got != want {
		t.Fatalf("after the kills and a catch-up the store differs from a fresh characterization:\n%s\nwant:\n%s", got, want)
	}
}
