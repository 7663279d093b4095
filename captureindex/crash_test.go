package captureindex

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
)

const crashChildEnv = "WAYSIDE_CAPTUREINDEX_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(deleteChildEnv); dir != "" {
		if err := deleteChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "delete child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(crashChildEnv); spec != "" {
		// TestCrashKill9's child: "DIR|FAILPOINT-SPEC".
		dir, arm, _ := strings.Cut(spec, "|")
		if _, err := failpoint.Arm(arm); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashCapture is capture i of the crash workload: every third one a
// revisit of the capture before it.
func crashCapture(i int) wayside.Capture {
	base := t0.Add(time.Duration(i) * time.Second)
	uri := fmt.Sprintf("http://crash.example/p%d", i/3)
	if i%3 == 2 {
		return revisit(uri, base, "crash.warc.gz", int64(i)*1000, crashCapture(i-1))
	}
	return capture(uri, base, "crash.warc.gz", int64(i)*1000, fmt.Sprint("body", i/3))
}

// crashChild does what a producer does, until it is killed: it appends
// each capture's CDXJ line to a file and fsyncs it, then delivers the
// capture to the index, and reports how far it got.
func crashChild(dir string) error {
	ctx := context.Background()
	cdxjDir := filepath.Join(dir, "cdxj")
	ix, err := Open(filepath.Join(dir, "ci"), WithCDXJDirs(cdxjDir))
	if err != nil {
		return err
	}
	if err := ix.Resync(ctx); err != nil {
		return err
	}
	path := filepath.Join(cdxjDir, "crash.cdxj")
	prev, _ := os.ReadFile(path)
	start := strings.Count(string(prev), "\n") // continue where the last run was killed
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for i := start; ; i++ {
		c := crashCapture(i)
		if _, err := f.WriteString(lineOf(c) + "\n"); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := ix.OnCapture(ctx, c); err != nil {
			return err
		}
		if i%50 == 49 {
			fmt.Fprintln(out, i+1-start)
			out.Flush()
		}
	}
}

// TestCrashKill9 kills a process that is feeding the index (kill -9 by a
// failpoint, before or after an add's commit, after a random amount of
// work), reopens the index, catches
// up (Resync, as consumers.Set.CatchUp does at start) and finds every
// capture whose CDXJ line was written — so after any crash the index covers
// the CDXJ files — with every revisit resolved and the invariants intact.
func TestCrashKill9(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cdxj"), 0o755); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		point := []string{"captureindex.add-before-commit", "captureindex.add-after-commit"}[rand.IntN(2)]
		target := 200 + rand.IntN(800)
		done := 0
		if !testenv.CrashChild(t, fmt.Sprintf("%s=%s|%s=%d*kill", crashChildEnv, dir, point, target), func(l string) bool {
			fmt.Sscan(l, &done)
			return false // the child feeds the index until its failpoint kills it
		}) {
			t.Fatalf("round %d: child not killed at %s #%d", round, point, target)
		}
		if done+100 < target { // progress is printed every 50 captures
			t.Fatalf("round %d: child killed at %s #%d reported only %d captures", round, point, target, done)
		}
		ctx := context.Background()
		ix, err := Open(filepath.Join(dir, "ci"), WithCDXJDirs(filepath.Join(dir, "cdxj")))
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Resync(ctx); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "cdxj", "crash.cdxj"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		have := map[string]bool{}
		unresolved := 0
		ix.Scan(ctx, Query{End: "\xff"}, func(e *Entry) error {
			c := e.Capture
			c.RevisitOf = nil
			have[lineOf(c)] = true
			if e.IsRevisit() && e.Original == nil {
				unresolved++
			}
			return nil
		})
		for _, l := range lines {
			if !have[l] {
				t.Errorf("round %d: CDXJ line not in the index after kill -9: %s", round, l)
			}
		}
		if len(have) != len(lines) || unresolved != 0 {
			t.Errorf("round %d: %d entries for %d lines, %d revisits unresolved", round, len(have), len(lines), unresolved)
		}
		if err := ix.Check(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		ix.Close()
		t.Logf("round %d: killed at %s #%d; %d lines, all indexed", round, point, target, len(lines))
	}
}

// TestPowerLoss drops every index write that was not fsynced (Pebble's
// strict in-memory file system) while the CDXJ files, which producers
// fsync, survive: reopening catches up from them.
func TestPowerLoss(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewStrictMem()
	cdxjDir := t.TempDir()
	open := func() *Index {
		ix, err := Open("/ci", withFS(mem), WithCDXJDirs(cdxjDir))
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Resync(ctx); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	var lines []string
	for round := range 3 {
		ix := open()
		f, err := os.OpenFile(filepath.Join(cdxjDir, "pl.cdxj"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for i := round * 30; i < (round+1)*30; i++ {
			c := crashCapture(i)
			l := lineOf(c)
			lines = append(lines, l)
			f.WriteString(l + "\n")
			if err := ix.OnCapture(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		mem.SetIgnoreSyncs(true)
		ix.Close()
		mem.ResetToSyncedState()
		mem.SetIgnoreSyncs(false)

		ix = open()
		n := 0
		ix.Scan(ctx, Query{End: "\xff"}, func(e *Entry) error { n++; return nil })
		if n != len(lines) {
			t.Fatalf("round %d: %d captures after power loss, %d CDXJ lines", round, n, len(lines))
		}
		if err := ix.Check(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		ix.Close()
	}
}
