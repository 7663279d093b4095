package crawl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/mementomap"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

const (
	crashChildEnv = "WAYSIDE_CRAWL_CRASH_CHILD"
	crashReady    = "wayside-crash-child-crawling"
	crashInRecord = "wayside-crash-child-inside-a-record"
	crashDurable  = "wayside-crash-child-durable" // then the record type
)

// TestMain runs the crawler child process TestCrashRecovery starts and
// kills (the test binary re-executed with crashChildEnv set), or the tests.
func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		err := crashChild(spec)
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3) // the parent expects to kill it: any exit is a failure
	}
	os.Exit(m.Run())
}

// crashChild crawls the site again and again, as `wayside crawl` does,
// with the live map enabled, until it is killed; it returns only on error.
func crashChild(spec string) error {
	dir, rest, _ := strings.Cut(spec, "|")
	base, mode, _ := strings.Cut(rest, "|")
	seed, err := ParseSeed(base + "/")
	if err != nil {
		return err
	}
	big, err := ParseSeed(base + "/big.bin")
	if err != nil {
		return err
	}
	var inRecord sync.Once
	for i := 0; ; i++ {
		cons, err := consumers.Open(consumers.Config{CDXJDirs: []string{dir},
			LiveMap: consumers.LiveMapConfig{Path: filepath.Join(dir, crashMap), MergeInterval: 20 * time.Millisecond}})
		if err != nil {
			return err
		}
		s, err := Open(Config{WARCDir: dir, Writer: warcfile.WriterOptions{MaxFileSize: 1 << 20, CompressionLevel: 1},
			Recorder: Options{Conditional: i%2 == 1}, Subscriber: reportDurable{cons.Fanout}})
		if err != nil {
			return err
		}
		if err := cons.CatchUp(context.Background()); err != nil {
			return err
		}
		if i == 0 {
			// Between the write(2) calls of a record: say so once, then
			// dawdle (mode "hold": stay there until killed, so the
			// parent's kill lands inside a record however slow it is).
			failpoint.Enable(warcfile.PointChunk, func(n int) (int, error) {
				first := false
				inRecord.Do(func() { first = true; fmt.Println(crashInRecord) })
				if first && mode == "hold" {
					select {}
				}
				time.Sleep(time.Millisecond)
				return n, nil
			})
			fmt.Println(crashReady) // recovery done, crawling starts
		}
		c, err := NewCrawler(CrawlConfig{Seeds: []*url.URL{seed, big}, Recorder: s.Recorder, MaxDepth: -1, Parallel: 4})
		if err != nil {
			return err
		}
		if err := c.Run(context.Background()); err != nil {
			return err
		}
		if err := s.Close(); err != nil {
			return err
		}
		if err := cons.Close(); err != nil {
			return err
		}
	}
}

// reportDurable passes captures on to the crawl's Fanout and prints
// crashDurable and the record type of each once it is durable (the
// Subscriber gets it after the fsync), so the parent can wait for one.
type reportDurable struct{ *wayside.Fanout }

func (r reportDurable) OnCapture(ctx context.Context, c wayside.Capture) error {
	err := r.Fanout.OnCapture(ctx, c)
	fmt.Println(crashDurable, c.Type)
	return err
}

// crashMap is the live MementoMap the crash child keeps beside its WARCs.
const crashMap = "live.ukvs"

// TestCrashRecovery kills a crawling process with SIGKILL at random points
// (every fourth crash is left for the next child to recover at start-up)
// and checks, after the kills, that nothing durable was lost: leftover
// ".open" files are recovered (a partial tail is detected exactly when
// warcio sees one), complete records stay readable, every revisit resolves
// to a response with the same payload digest, and every index entry points
// at a complete record.
func TestCrashRecovery(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	site := sitetest.New()
	// A large resource that changes on every fetch: a full multi-megabyte
	// response each crawl, written in many write(2) calls, so kills land
	// inside a record.
	site.Add(&sitetest.Resource{Path: "/big.bin", ContentType: "application/octet-stream", Body: sitetest.Blob(5, 3<<20), Dynamic: true})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	const runs = 20
	partials, revisits := 0, 0
	for run := 0; run < runs; run++ {
		cmd := exec.Command(exe)
		// Odd runs are killed right after the child reports being inside
		// a record, where it then stays (a partial tail for sure); even
		// runs once the child has crawled (start-up and recovery done)
		// and made a record durable — run 0 a revisit, so the crawls
		// checked below hold one however slow the machine — and then at a
		// random point after that.
		mode, stages := "dawdle", []func(string) bool{
			func(l string) bool { return l == crashReady },
			func(l string) bool { return strings.HasPrefix(l, crashDurable+" ") },
		}
		if run == 0 {
			stages[1] = func(l string) bool { return l == crashDurable+" revisit" }
		}
		if run%2 == 1 {
			mode, stages = "hold", []func(string) bool{func(l string) bool { return l == crashInRecord }}
		}
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+"|"+srv.URL+"|"+mode)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			next := 0
			for sc.Scan() { // read to the end: the child never blocks on stdout
				if next < len(stages) && stages[next](sc.Text()) {
					if next++; next == len(stages) {
						ready <- true
					}
				}
			}
			if next < len(stages) {
				ready <- false
			}
		}()
		select {
		case ok := <-ready:
			if !ok {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("run %d: crawler child exited before it got where it is killed", run)
			}
		case <-time.After(2 * time.Minute): // only catches a hang
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: crawler child never got where it is killed", run)
		}
		if run%2 == 0 {
			time.Sleep(time.Duration(rnd.IntN(500)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run %d: child ended on its own: %v", run, err)
		}

		if run%4 == 2 {
			// Leave this crash to the next child: its OpenWriter recovers
			// the .open files at start-up (and may itself be killed while
			// doing so); the checks after the next kill cover both.
			continue
		}
		// Which .open files does warcio see ending in a partial record?
		truncated := map[string]bool{}
		for _, p := range warcFiles(t, dir, true) {
			if !strings.HasSuffix(p, warcfile.OpenSuffix) {
				continue
			}
			r, err := warcio.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if errors.Is(err, warcio.ErrTruncated) {
					truncated[filepath.Base(p)] = true
					continue
				}
				if err != nil {
					t.Fatalf("run %d: %s: %v", run, p, err)
				}
			}
			r.Close()
		}
		rep, err := warcfile.Recover(dir, warcfile.RecoverOptions{})
		if err != nil {
			t.Fatalf("run %d: recover: %v", run, err)
		}
		for _, f := range rep.Files {
			if (f.Problem != "") != truncated[f.Open] {
				t.Errorf("run %d: %s: recovery problem %q, warcio saw a partial tail: %v", run, f.Open, f.Problem, truncated[f.Open])
			}
			if f.Problem != "" {
				partials++
				if f.TailBytes <= 0 || f.TailFile == "" {
					t.Errorf("run %d: partial tail of %s not saved: %+v", run, f.Open, f)
				}
			}
		}
		if rep.PartialTails != len(truncated) {
			t.Errorf("run %d: %d partial tails reported, warcio found %d", run, rep.PartialTails, len(truncated))
		}
		if left := len(warcFiles(t, dir, true)) - len(warcFiles(t, dir, false)); left != 0 {
			t.Fatalf("run %d: %d .open files left after recovery", run, left)
		}
		validateStrict(t, dir)
		ix, err := dipebble.Open(filepath.Join(dir, IndexSubdir))
		if err != nil {
			t.Fatalf("run %d: reopen index after kill: %v", run, err)
		}
		checkReferences(t, dir, ix, siteURLs(srv))
		if err := ix.Check(context.Background()); err != nil {
			t.Errorf("run %d: index check: %v", run, err)
		}
		ix.Close()
		checkSpineAfterCrash(t, run, dir)
		if t.Failed() {
			t.Fatalf("run %d failed", run)
		}
	}
	for _, wr := range readDir(t, dir) {
		if wr.rec.Type == "revisit" {
			revisits++
		}
	}
	t.Logf("%d kills, %d partial tails recovered, %d revisits checked", runs, partials, revisits)
	if partials == 0 {
		t.Error("no kill landed inside a record: the partial-tail path was not exercised")
	}
	if revisits == 0 {
		t.Fatal("the crashed crawls wrote no revisits: the test checked nothing")
	}
}

// checkSpineAfterCrash checks, after a kill and recovery, what the capture
// spine keeps beside the WARCs: every closed WARC's CDXJ is `wayside cdxj`
// of it and sorted (no CDXJ rewrite left half-done), and the live map —
// reopened and caught up from the CDXJ files, as the next crawl does —
// answers present for every URI the CDXJ files index.
func checkSpineAfterCrash(t *testing.T, run int, dir string) {
	t.Helper()
	var sides []string
	for _, w := range warcFiles(t, dir, false) {
		side := filepath.Join(dir, cdxj.SideFileName(filepath.Base(w)))
		if _, err := os.Stat(side); err != nil {
			t.Errorf("run %d: %s has no CDXJ file: %v", run, filepath.Base(w), err)
			continue
		}
		sides = append(sides, side)
		if got, want := readFile(t, side), indexOf(t, w); got != want {
			t.Errorf("run %d: %s is not `wayside cdxj` of its WARC after recovery:\n%s", run, side, lineDiff(got, want))
		}
	}
	lines := cdxjtest.CheckSorted(t, sides)
	l, err := mementomap.OpenLive(filepath.Join(dir, crashMap), mementomap.LiveOptions{CDXJDirs: []string{dir}})
	if err != nil {
		t.Fatalf("run %d: reopen the live map after the kill: %v", run, err)
	}
	defer l.Close()
	if err := l.Resync(context.Background()); err != nil {
		t.Fatalf("run %d: live map catch-up: %v", run, err)
	}
	if err := l.Check(); err != nil {
		t.Errorf("run %d: %v", run, err)
	}
	for _, s := range lines {
		ln, err := cdxj.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		m, err := l.Lookup(ln.URL)
		if err != nil || !m.Present {
			t.Errorf("run %d: live map has no %s after the kill (%v)", run, ln.URL, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("run %d: temporary file %s left after recovery", run, e.Name())
		}
	}
}

// lineDiff lists the lines only in a ("-") and only in b ("+").
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
