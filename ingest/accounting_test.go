package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

// lockedBuffer is a log sink safe for the ingester's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestIngestAccountProperty is the reading commands' accounting property
// (cmd/wayside TestReadingCommandsAccountProperty) for the ingester:
// random WARC files in every layout (internal/warcgen), with damage, each
// ingested from a watched directory; the captures it delivers and the
// errors it logs (by file and offset) are checked with
// warcgen.CheckReading against the generator and the second framing: no
// record outside damage lost (a record sharing its gzip member named by
// the member's offset, as it is not indexed), every damaged stretch named, every byte in
// a capture or a named stretch. Fixed seed; WAYSIDE_PROPERTY_N files
// (default 8).
func TestIngestAccountProperty(t *testing.T) {
	n := 8
	if v, err := strconv.Atoi(os.Getenv("WAYSIDE_PROPERTY_N")); err == nil && v > 0 {
		n = v
	}
	rng := rand.New(rand.NewSource(26))
	layouts := []string{"plain", "member", "multi", "stream"}
	for it := range n {
		layout := layouts[it%len(layouts)]
		f := warcgen.Case(rng, false, layout, 3+rng.Intn(10), it%4 != 3)
		dir, data := t.TempDir(), t.TempDir()
		base := fmt.Sprintf("gen%d.warc.gz", it)
		if layout == "plain" {
			base = fmt.Sprintf("gen%d.warc", it)
		}
		writeQuiet(t, filepath.Join(dir, base), f.Data)
		idx, err := pebble.Open(filepath.Join(data, "index"))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var out []warcgen.Output
		sub := wayside.SubscriberFunc(func(_ context.Context, c wayside.Capture) error {
			mu.Lock()
			defer mu.Unlock()
			if c.File == base {
				out = append(out, warcgen.Output{URI: c.URI, Off: c.Offset, Length: c.Length})
			}
			return nil
		})
		logs := &lockedBuffer{}
		in, err := ingest.New(ingest.Config{Dirs: []string{dir}, PollInterval: 5 * time.Millisecond,
			Checkpoint: filepath.Join(data, "checkpoint.json"), CDXJDir: filepath.Join(data, "cdxj"),
			Logger: slog.New(slog.NewTextHandler(logs, nil))}, idx, sub)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			fin := false
			for _, fp := range in.Status().Files {
				fin = fin || fp.Name == base && (fp.Done || fp.Truncated) // a cut file ends in a partial record
			}
			if fin {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not done: %+v", base, in.Status())
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		idx.Close()
		mu.Lock()
		named := warcgen.NamedOffsets(logs.String(), base)
		warcgen.CheckReading(t, warcgen.Reader{Name: "ingest", Locates: true, Lengths: true, GoesOn: true}, f, base, out, named, false)
		mu.Unlock()
		// Damage is counted as errors, a partial record at the end as the
		// file's truncation.
		st := in.Status()
		truncated := false
		for _, fp := range st.Files {
			truncated = truncated || fp.Name == base && fp.Truncated
		}
		if (st.Errors > 0 || truncated) != (len(named) > 0) {
			t.Errorf("%s: %d errors counted (truncated %v), %d stretches named in the log", base, st.Errors, truncated, len(named))
		}
		if t.Failed() {
			t.Logf("%s (%s): log:\n%s", base, layout, logs.String())
			return
		}
	}
}
