package pebble_test

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/digest"
)

const crashChildEnv = "WAYSIDE_DEDUPINDEX_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(deleteChildEnv); dir != "" {
		if err := deleteChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "delete child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := crashChild(dir, os.Getenv(crashChildEnv+"_RUN")); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func crashPayload(run string, w, i int) string { return fmt.Sprintf("payload-%s-%d-%d", run, w, i) }

func crashURI(payload string) string { return "http://crash.example/" + payload }

// crashChild commits originals from 4 goroutines (plus a seeding batch
// writer) until it is killed, printing each digest after Commit returned.
func crashChild(dir, run string) error {
	ix, err := pebble.Open(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	report := func(line string) {
		mu.Lock()
		out.WriteString(line + "\n")
		out.Flush()
		mu.Unlock()
	}
	report("ready")
	errc := make(chan error, 5)
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				p := crashPayload(run, w, i)
				k := dedupindex.Key{Scope: "crash", Digest: digest.Of(digest.SHA1, []byte(p)).String()}
				r, err := ix.Claim(ctx, k)
				if err != nil {
					errc <- err
					return
				}
				if i%7 == 3 {
					if err := ix.Cancel(ctx, r.Ticket); err != nil {
						errc <- err
						return
					}
					continue
				}
				o := dedupindex.Original{TargetURI: crashURI(p), Date: time.Now(), RecordID: fmt.Sprintf("<urn:crash:%s:%d:%d>", run, w, i), File: "crash-" + run + ".warc.gz", Offset: int64(i), PayloadLength: int64(len(p)), Status: 200}
				if err := ix.Commit(ctx, r.Ticket, o); err != nil {
					errc <- err
					return
				}
				report("committed " + p)
			}
		}()
	}
	go func() {
		for b := 0; ; b++ {
			var es []dedupindex.Entry
			for i := range 50 {
				p := crashPayload(run, 100+b, i)
				es = append(es, dedupindex.Entry{
					Key:      dedupindex.Key{Scope: "seed", Digest: digest.Of(digest.SHA1, []byte(p)).String()},
					Original: dedupindex.Original{TargetURI: crashURI(p), Date: time.Now(), MIME: fmt.Sprintf("application/x-%d", i%5)},
				})
			}
			if _, err := ix.PutBatch(ctx, es); err != nil {
				errc <- err
				return
			}
			for _, e := range es {
				report("seeded " + strings.TrimPrefix(e.Original.TargetURI, "http://crash.example/"))
			}
		}
	}()
	return <-errc
}

// TestCrashSafety kills a committing child process with SIGKILL at random
// moments and checks after each kill that every original the child reported
// as committed is present and intact and that Check passes.
func TestCrashSafety(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 5
	}
	dir := t.TempDir()
	deadline := time.Now().Add(60 * time.Second)
	total := 0
	for run := range runs {
		if time.Now().After(deadline) && run >= 5 {
			t.Logf("time bound reached after %d runs", run)
			break
		}
		runID := fmt.Sprint(run)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildEnv+"_RUN="+runID)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1<<16)
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// Wait for the child to open the index, then let it work a while.
		select {
		case l := <-lines:
			if l != "ready" {
				t.Fatalf("run %d: child said %q", run, l)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("run %d: child never became ready: %s", run, stderr.String())
		}
		// Then for its first durable original (so every run has reports to
		// check however loaded the machine), then a random while more.
		var first string
		select {
		case first = <-lines:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("run %d: child committed nothing: %s", run, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-readDone
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: child did not die of SIGKILL: %v\n%s", run, err, stderr.String())
		}
		close(lines)
		var committed, seeded []string
		for l := range seqOf(first, lines) {
			if p, ok := strings.CutPrefix(l, "committed "); ok {
				committed = append(committed, p)
			} else if p, ok := strings.CutPrefix(l, "seeded "); ok {
				seeded = append(seeded, p)
			}
		}
		total += len(committed) + len(seeded)
		verifyAfterCrash(t, dir, run, committed, seeded)
	}
	t.Logf("%d originals reported durable across the runs were all found", total)
	if total == 0 {
		t.Fatal("the children never committed anything")
	}
}

// seqOf yields first, then what is left in lines.
func seqOf(first string, lines <-chan string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if !yield(first) {
			return
		}
		for l := range lines {
			if !yield(l) {
				return
			}
		}
	}
}

func verifyAfterCrash(t *testing.T, dir string, run int, committed, seeded []string) {
	t.Helper()
	ctx := context.Background()
	ix, err := pebble.Open(dir)
	if err != nil {
		t.Fatalf("run %d: reopen after SIGKILL: %v", run, err)
	}
	defer ix.Close()
	if err := ix.Check(ctx); err != nil {
		t.Fatalf("run %d: Check after SIGKILL: %v", run, err)
	}
	for scope, ps := range map[string][]string{"crash": committed, "seed": seeded} {
		for _, p := range ps {
			k := dedupindex.Key{Scope: scope, Digest: digest.Of(digest.SHA1, []byte(p)).String()}
			o, ok, err := ix.Lookup(ctx, k)
			if err != nil {
				t.Fatalf("run %d: Lookup: %v", run, err)
			}
			if !ok {
				t.Fatalf("run %d: %s original %s was reported durable but is missing", run, scope, p)
			}
			if o.TargetURI != crashURI(p) || o.Digest != k.Digest {
				t.Fatalf("run %d: %s original %s came back as %+v", run, scope, p, o)
			}
		}
	}
	// Nothing is pending after a restart: a claim on a fresh key succeeds
	// and every reported original is a duplicate for Claim too.
	if len(committed) > 0 {
		k := dedupindex.Key{Scope: "crash", Digest: digest.Of(digest.SHA1, []byte(committed[0])).String()}
		if r, err := ix.Claim(ctx, k); err != nil || r.State != dedupindex.Duplicate {
			t.Fatalf("run %d: Claim of a committed key = %v, %v", run, r.State, err)
		}
	}
}
