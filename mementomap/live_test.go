package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/zipfgen"
)

func captures(n int, seed uint64) []wayside.Capture {
	present, _ := zipfgen.Generate(zipfgen.Config{Keys: n, Seed: seed})
	cs := make([]wayside.Capture, 0, n)
	for i, e := range present {
		u := zipfgen.URI(e.Key)
		if i%3 == 0 {
			u += fmt.Sprintf("?page=%d", i)
		}
		cs = append(cs, wayside.Capture{URI: u, Type: "response", Status: 200, MIME: "text/html",
			Date: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), RecordID: fmt.Sprintf("<urn:uuid:%d>", i), File: "a.warc.gz", Offset: int64(i), Length: 1})
	}
	return cs
}

func mustPresent(t *testing.T, l *Live, cs []wayside.Capture, what string) {
	t.Helper()
	for _, c := range cs {
		got, err := l.Lookup(c.URI)
		if err != nil || !got.Present {
			t.Fatalf("%s: captured %s answered %+v %v", what, c.URI, got, err)
		}
	}
}

// TestLiveNeverFalseNegative feeds captures while merging and compacting
// concurrently with lookups, then simulates a crash (no Close, a stale
// temporary file) and rebuilds from CDXJ: no captured URI is ever answered
// negatively.
func TestLiveNeverFalseNegative(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.ukvs")
	opts := LiveOptions{Compact: &CompactOptions{Wh: 0.5, Wp: 0.5}, Name: "test"}
	l, err := OpenLive(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := captures(3000, 5)
	var acked atomic.Int64 // captures [0, acked) have been delivered
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; ; round++ {
			select {
			case <-stop:
				return
			default:
			}
			n := int(acked.Load())
			for _, c := range cs[:n] {
				got, err := l.Lookup(c.URI)
				if err != nil || !got.Present {
					select {
					case errs <- fmt.Errorf("round %d: %s answered %+v %v", round, c.URI, got, err):
					default:
					}
					return
				}
			}
		}
	}()
	ctx := context.Background()
	for i, c := range cs[:2000] {
		l.OnCapture(ctx, c)
		acked.Store(int64(i + 1))
		if i%500 == 499 {
			if err := l.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if l.Pending() != 0 {
		t.Fatalf("%d keys still pending after the last merge", l.Pending())
	}
	// Captured after the last merge, then the process dies: no Close, and
	// a half-written temporary file is left beside the map.
	for _, c := range cs[2000:] {
		l.OnCapture(ctx, c)
	}
	mustPresent(t, l, cs, "before the crash")
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".live.ukvs.tmp-123"), []byte("com,half"), 0o644); err != nil {
		t.Fatal(err)
	}

	l2, err := OpenLive(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := os.Stat(filepath.Join(dir, ".live.ukvs.tmp-123")); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file not removed: %v", err)
	}
	mustPresent(t, l2, cs[:2000], "after restart, merged captures")
	// Rebuild from the CDXJ index of every capture (the crawler's index).
	var idx bytes.Buffer
	for _, c := range cs {
		line := cdxj.FromCapture(c)
		idx.Write(line.Format(nil))
	}
	n, err := l2.FeedCDXJ(&idx, "index.cdxj")
	if err != nil || n != int64(len(cs)) {
		t.Fatalf("fed %d of %d: %v", n, len(cs), err)
	}
	mustPresent(t, l2, cs, "after replay")
	if err := l2.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	mustPresent(t, l2, cs, "after replay and compaction")
	if err := l2.Check(); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMap(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m.Data(), []byte("-")) {
		t.Fatal("replayed counts are not marked as upper bounds")
	}
}

func TestLiveRunAndWriteTo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.ukvs")
	l, err := OpenLive(path, LiveOptions{Interval: 20 * time.Millisecond, MaxPending: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	for _, u := range []string{"http://example.com/", "http://example.com/a?x=1", "http://example.com/a?x=2", "https://www.example.com/", "dns:example.com", "http://localhost/x"} {
		l.OnCapture(ctx, wayside.Capture{URI: u, Type: "response"})
	}
	l.OnCapture(ctx, wayside.Capture{URI: "http://example.com/req", Type: "request"})
	deadline := time.Now().Add(2 * time.Minute)
	for l.Pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if l.Pending() != 0 {
		t.Fatal("Run did not merge the pending captures")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.OnCapture(context.Background(), wayside.Capture{URI: "http://example.org/new", Type: "revisit"})
	var out bytes.Buffer
	if _, err := l.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	want := "com,example)/ 2/1\ncom,example)/a 2/2\nlocalhost)/x 1/1\norg,example)/new 1/1\n"
	if !strings.HasSuffix(out.String(), want) || !strings.HasPrefix(out.String(), "!context") {
		t.Fatalf("WriteTo:\n%s\nwant suffix\n%s", out.String(), want)
	}
	if got, _ := l.Lookup("http://example.com/req"); got.Present {
		t.Fatal("a request record was counted as a capture")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), want) {
		t.Fatalf("file after Close:\n%s (%v)", b, err)
	}
	if _, err := l.Lookup("http://example.com/zzz"); err == nil {
		t.Fatal("lookup after Close did not fail")
	}
}

// TestLiveConcurrentWritersAndMerges: two writers capture while Run merges
// and compacts every few milliseconds; every capture answers positively
// right after OnCapture returns, and the file holds all of them at the end.
func TestLiveConcurrentWritersAndMerges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.ukvs")
	l, err := OpenLive(path, LiveOptions{Interval: 5 * time.Millisecond, MaxPending: 50, Compact: &CompactOptions{Wh: 1, Wp: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	cs := captures(1200, 9)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(cs); i += 2 {
				l.OnCapture(ctx, cs[i])
				if got, err := l.Lookup(cs[i].URI); err != nil || !got.Present {
					errs <- fmt.Errorf("%s answered %+v %v right after its capture", cs[i].URI, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMap(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, c := range cs {
		k, _ := KeyFor(c.URI)
		if got, _ := m.Lookup([]byte(k), nil); !got.Present {
			t.Fatalf("%s missing from the file after Close", c.URI)
		}
	}
}

// A key spelled as other tools write it (host root without "/", upper case,
// www) finds a capture that is still pending, not only merged ones.
func TestLiveLookupKeyOtherSpellings(t *testing.T) {
	l, err := OpenLive(filepath.Join(t.TempDir(), "live.ukvs"), LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.OnCapture(context.Background(), wayside.Capture{URI: "http://example.com/", Type: "response"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"com,example)/", "com,example)", "COM,EXAMPLE)/", "com,example,www)/"} {
		m, err := l.LookupKey([]byte(k))
		if err != nil || !m.Present {
			t.Errorf("LookupKey(%q) = %+v, %v: want the pending capture", k, m, err)
		}
	}
}
