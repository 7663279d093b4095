package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile"
)

const crashChildEnv = "WAYSIDE_INGEST_CRASH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		if err := crashChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild is the ingesting process TestCrashKill kills (the test binary
// re-executed; spec "DATA|WARCS|FAILPOINT-SPEC"): it arms the failpoint,
// follows WARCS with its checkpoint, index and CDXJ files in DATA, prints
// "DONE" once every file is finished and waits to be killed.
func crashChild(spec string) error {
	f := strings.SplitN(spec, "|", 3)
	if len(f) != 3 {
		return fmt.Errorf("bad spec %q", spec)
	}
	data, warcDir := f[0], f[1]
	if _, err := failpoint.Arm(f[2]); err != nil {
		return err
	}
	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		return err
	}
	in, err := ingest.New(ingest.Config{Dirs: []string{warcDir}, PollInterval: 10 * time.Millisecond,
		Checkpoint: filepath.Join(data, "checkpoint.json"), CDXJDir: filepath.Join(data, "cdxj"),
		Policy: dedupindex.Policy{Scope: "corpus"}}, idx, nil)
	if err != nil {
		return err
	}
	var ents []string
	if warcfile.IsURL(warcDir) { // a bucket prefix (TestCrashKillBucket)
		objs, err := warcfile.NewLocations(nil).List(context.Background(), warcDir)
		if err != nil {
			return err
		}
		for _, o := range objs {
			ents = append(ents, o.Name)
		}
	} else {
		des, err := os.ReadDir(warcDir)
		if err != nil {
			return err
		}
		for _, e := range des {
			ents = append(ents, e.Name())
		}
	}
	done := make(chan error, 1)
	go func() { done <- in.Run(context.Background()) }()
	for range 6000 { // bounded: 10 ms polls for at most a minute
		finished := 0
		for _, fp := range in.Status().Files {
			if fp.Done || fp.Truncated {
				finished++
			}
		}
		if finished == len(ents) {
			fmt.Println("DONE")
			io.Copy(io.Discard, os.Stdin) // wait to be killed
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("ingest stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("ingest did not finish: %+v", in.Status())
}

// TestCrashKill kills an ingesting child process with SIGKILL at the
// failpoint between a batch becoming durable (index entries, CDXJ lines, a
// sorted CDXJ file) and its checkpoint, at a random hit, three times in a
// row, then lets a fourth child finish. The CDXJ files and the dedup index
// must then be exactly those of an ingest that was never interrupted: no
// line lost or written twice, no original missing.
func TestCrashKill(t *testing.T) {
	_, warcDir := corpusDir(t)
	// A WARC of several batches (512 records each), so that a kill lands
	// between batches of one file too: six copies of pywb's iana crawl,
	// one gzip member per record, one after the other; named to be read
	// first, so that the first hits of the failpoint fall between its
	// batches.
	iana, err := os.ReadFile(filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(warcDir, "0-iana-x6.warc.gz"), bytes.Repeat(iana, 6), 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	for round := range 4 {
		arm, nth := "", 0
		if round < 3 {
			nth = 1 + rng.IntN(8)
			if round == 0 {
				nth = 1 + rng.IntN(3) // between batches of the first file
			}
			arm = fmt.Sprintf("ingest.before-checkpoint=%d*kill", nth)
		}
		finished := false
		atPoint := testenv.CrashChild(t, crashChildEnv+"="+data+"|"+warcDir+"|"+arm, func(l string) bool {
			finished = l == "DONE"
			return finished
		})
		if round < 3 && !atPoint && !finished {
			t.Fatalf("round %d: child (%s) neither died at its point nor finished", round, arm)
		}
		if round == 3 && !finished {
			t.Fatal("the last child, with no failpoint armed, did not finish")
		}
		t.Logf("round %d: %s killed (finished first: %v)", round, arm, finished)
	}

	want := runIngest(t, warcDir, dedupindex.Policy{Scope: "corpus"})
	ents, err := os.ReadDir(want.cdxjDir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("uninterrupted ingest wrote no CDXJ files: %v", err)
	}
	for _, e := range ents {
		name := e.Name()
		got, exp := readLines(t, filepath.Join(data, "cdxj", name)), readLines(t, filepath.Join(want.cdxjDir, name))
		if strings.Join(got, "\n") != strings.Join(exp, "\n") {
			t.Errorf("%s: after the kills %d lines, an uninterrupted ingest %d (or they differ)", name, len(got), len(exp))
		}
	}
	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ctx := context.Background()
	got, err := idx.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := want.idx.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(data, "cdxj", "0-iana-x6*.cdxj")); len(m) != 1 || len(readLines(t, m[0])) < 1024 {
		t.Errorf("the multi-batch WARC's CDXJ file %v does not hold more than two batches", m)
	}
	if got.Originals != exp.Originals || got.Originals == 0 {
		t.Errorf("index after the kills holds %d originals, an uninterrupted ingest %d", got.Originals, exp.Originals)
	}
}
