package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcfile/s3"
	"github.com/wayside-archive/wayside/warcio"
)

// follower runs Ingesters over one data directory (index, checkpoint,
// CDXJ files), one after another, as daemon restarts do.
type follower struct {
	t       *testing.T
	data    string
	idx     *pebble.Index
	watch   []string
	mu      sync.Mutex
	got     []wayside.Capture
	onFirst func() // called (once) from the first capture delivered
}

func newFollower(t *testing.T, watch ...string) *follower {
	data := t.TempDir()
	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return &follower{t: t, data: data, idx: idx, watch: watch}
}

func (f *follower) cdxjDir() string { return filepath.Join(f.data, "cdxj") }

// run follows the watch entries until done(status) holds, checking
// check(status) on the way (bounded: two minutes), then stops.
func (f *follower) run(done func(ingest.Status) bool) ingest.Status {
	t := f.t
	t.Helper()
	sub := wayside.SubscriberFunc(func(_ context.Context, c wayside.Capture) error {
		f.mu.Lock()
		f.got = append(f.got, c)
		first := f.onFirst
		f.onFirst = nil
		f.mu.Unlock()
		if first != nil {
			first()
		}
		return nil
	})
	in, err := ingest.New(ingest.Config{Dirs: f.watch, PollInterval: 10 * time.Millisecond,
		Checkpoint: filepath.Join(f.data, "checkpoint.json"), CDXJDir: f.cdxjDir(), Policy: dedupindex.Policy{Scope: "s3"}}, f.idx, sub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- in.Run(ctx) }()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := in.Status()
		if done(st) {
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			return st
		}
		if time.Now().After(deadline) {
			cancel()
			<-errc
			t.Fatalf("ingest did not get there: %+v", st)
		}
		select {
		case err := <-errc:
			t.Fatalf("ingest stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// allDone is a condition of run: n files, all read to their end.
func allDone(n int) func(ingest.Status) bool {
	return func(st ingest.Status) bool {
		d := 0
		for _, f := range st.Files {
			if f.Done && f.Offset == f.Size {
				d++
			}
		}
		return d == n && st.Paused == ""
	}
}

// remoteLines reads the CDXJ file the ingester wrote for name; every
// line's filename must be loc, and is replaced by the base name (as a
// local ingest names it) in the lines returned, sorted.
func remoteLines(t *testing.T, cdxjDir, name, loc string) []string {
	t.Helper()
	var out []string
	for _, s := range readLines(t, filepath.Join(cdxjDir, cdxj.SideFileName(name))) {
		l, err := cdxj.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if l.Filename != loc {
			t.Fatalf("%s: a line names %q, want the object's location %q", name, l.Filename, loc)
		}
		l.Filename = name
		out = append(out, l.String())
	}
	sort.Strings(out)
	return out
}

// prefixUpload puts the corpus files named into the bucket prefix.
func prefixUpload(t *testing.T, b *s3.Bucket, files ...string) {
	t.Helper()
	for _, f := range files {
		if _, err := b.Upload(context.Background(), f, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
}

func pick(t *testing.T, names ...string) []string {
	t.Helper()
	var out []string
	for _, p := range testenv.CorpusWARCs(t) {
		for _, n := range names {
			if filepath.Base(p) == n {
				out = append(out, p)
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("corpus files %v: found %v", names, out)
	}
	return out
}

// TestFollowBucketPrefix follows an s3:// prefix on SeaweedFS as a
// directory: every record of every object is indexed once with the
// object's location URL as its file, with exactly the lines `wayside
// cdxj` gives for the local files; a grown object (replaced by a longer
// one, as a re-upload of a growing file is) is read on from the
// checkpoint; and a restart over the same checkpoint re-ingests nothing.
func TestFollowBucketPrefix(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	prefix := srv.URL("coll/warcs")
	b, err := s3.Open(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	files := pick(t, "pywb-iana.warc.gz", "aut-example.docs.warc.gz", "npmwarc-CC-MAIN-20140820021334-00006.warc", "warcio-example.warc.gz")
	// The first file is uploaded cut after its first half of records: it
	// grows later.
	grow := files[0]
	recs := readLocal(t, grow)
	cut := recs[len(recs)/2].Offset
	data, err := os.ReadFile(grow)
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(t.TempDir(), filepath.Base(grow))
	os.WriteFile(part, data[:cut], 0o644)
	prefixUpload(t, b, part)
	prefixUpload(t, b, files[1:]...)

	f := newFollower(t, prefix)
	f.run(allDone(len(files)))
	half := len(f.got)
	if half == 0 {
		t.Fatal("nothing ingested")
	}
	prefixUpload(t, b, grow) // grown: same name, longer, another ETag
	f.run(func(st ingest.Status) bool {
		return allDone(len(files))(st) && fileSize(st, filepath.Base(grow)) == int64(len(data))
	})

	total := 0
	seen := map[[2]any]bool{}
	for _, c := range f.got {
		k := [2]any{c.File, c.Offset}
		if seen[k] {
			t.Errorf("capture %s offset %d delivered twice", c.File, c.Offset)
		}
		seen[k] = true
		if !warcfile.IsURL(c.File) || c.Dir != "" {
			t.Errorf("capture of a remote file has File %q Dir %q", c.File, c.Dir)
		}
	}
	for _, p := range files {
		name := filepath.Base(p)
		want := indexLines(t, p)
		got := remoteLines(t, f.cdxjDir(), name, b.Location(name))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: lines from the bucket differ from `wayside cdxj` of the local file:\n got %.500s\nwant %.500s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		total += len(want)
	}
	if total < 100 {
		t.Fatalf("only %d lines: the test checks too little", total)
	}

	// Restart: nothing is read again.
	before := len(f.got)
	side := readLines(t, filepath.Join(f.cdxjDir(), cdxj.SideFileName(filepath.Base(grow))))
	f.run(allDone(len(files)))
	if len(f.got) != before {
		t.Errorf("a restart re-ingested %d captures", len(f.got)-before)
	}
	if again := readLines(t, filepath.Join(f.cdxjDir(), cdxj.SideFileName(filepath.Base(grow)))); strings.Join(again, "\n") != strings.Join(side, "\n") {
		t.Error("a restart changed a CDXJ file")
	}
}

func fileSize(st ingest.Status, name string) int64 {
	for _, f := range st.Files {
		if f.Name == name {
			return f.Offset
		}
	}
	return -1
}

// TestFollowBucketStoreDown stops SeaweedFS (SIGKILL) while the ingester
// delivers the first capture of a bucket prefix: status says the store
// cannot be read, and once it is back ingest resumes and ends with every
// line once, as `wayside cdxj` gives them.
func TestFollowBucketStoreDown(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	prefix := srv.URL("down")
	b, err := s3.Open(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	files := pick(t, "aut-example.pdf.warc.gz", "pywb-iana.warc.gz", "aut-example.docs.warc.gz", "iagowarc-test.warc.gz")
	prefixUpload(t, b, files...)
	f := newFollower(t, prefix)
	stopped := make(chan struct{})
	f.onFirst = func() { srv.Stop(); close(stopped) }
	st := f.run(func(st ingest.Status) bool {
		select {
		case <-stopped:
			return strings.Contains(st.Paused, "s3://wayside/down") && strings.Contains(st.Paused, "resumes")
		default:
			return false
		}
	})
	if strings.Contains(st.Paused, srvSecret) {
		t.Fatalf("status shows the secret key: %s", st.Paused)
	}
	t.Logf("status while the store is down: %s", st.Paused)
	srv.Restart(t)
	f.run(allDone(len(files)))
	seen := map[[2]any]bool{}
	for _, c := range f.got {
		k := [2]any{c.File, c.Offset}
		if seen[k] {
			t.Errorf("capture %s offset %d delivered twice", c.File, c.Offset)
		}
		seen[k] = true
	}
	n := 0
	for _, p := range files {
		name := filepath.Base(p)
		want := indexLines(t, p)
		got := remoteLines(t, f.cdxjDir(), name, b.Location(name))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: after the outage the lines differ from `wayside cdxj` (%d vs %d)", name, len(got), len(want))
		}
		n += len(want)
	}
	if n < 100 {
		t.Fatalf("only %d lines: the test checks too little", n)
	}
}

const srvSecret = s3test.SecretKey

func readLocal(t *testing.T, path string) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*warcio.Record
	for {
		rec, err := r.Next()
		if err != nil {
			return out
		}
		out = append(out, rec)
	}
}

// TestCrashKillBucket is TestCrashKill on a bucket prefix: children
// following it on SeaweedFS are killed (SIGKILL) between a batch becoming
// durable and its checkpoint, three times, then one finishes; the CDXJ
// files are then exactly those of a follow never interrupted.
func TestCrashKillBucket(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	prefix := srv.URL("crash")
	b, err := s3.Open(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	files := pick(t, "pywb-iana.warc.gz", "aut-example.docs.warc.gz", "iagowarc-test.warc.gz", "warcio-example.warc.gz")
	// Several batches in one object: six copies of the iana crawl, read first.
	iana, err := os.ReadFile(pick(t, "pywb-iana.warc.gz")[0])
	if err != nil {
		t.Fatal(err)
	}
	x6 := filepath.Join(t.TempDir(), "0-iana-x6.warc.gz")
	os.WriteFile(x6, bytes.Repeat(iana, 6), 0o644)
	prefixUpload(t, b, append(files, x6)...)
	data := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 24))
	for round := range 4 {
		arm := ""
		if round < 3 {
			arm = fmt.Sprintf("ingest.before-checkpoint=%d*kill", 1+rng.IntN(3))
		}
		finished := false
		atPoint := testenv.CrashChild(t, crashChildEnv+"="+data+"|"+prefix+"|"+arm, func(l string) bool {
			finished = l == "DONE"
			return finished
		})
		if round < 3 && !atPoint && !finished {
			t.Fatalf("round %d: child (%s) neither died at its point nor finished", round, arm)
		}
		if round == 3 && !finished {
			t.Fatal("the last child, with no failpoint armed, did not finish")
		}
	}
	want := newFollower(t, prefix)
	want.run(allDone(len(files) + 1))
	n := 0
	for _, p := range append(files, x6) {
		name := cdxj.SideFileName(filepath.Base(p))
		got, exp := readLines(t, filepath.Join(data, "cdxj", name)), readLines(t, filepath.Join(want.cdxjDir(), name))
		if strings.Join(got, "\n") != strings.Join(exp, "\n") {
			t.Errorf("%s: after the kills %d lines, an uninterrupted follow %d (or they differ)", name, len(got), len(exp))
		}
		n += len(exp)
	}
	if n < 1024+100 {
		t.Fatalf("only %d lines: the test checks too little", n)
	}
}
