package characterize

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/warcio"
)

// tempRoot holds files shared by the tests of this binary.
var tempRoot string

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		// TestCrashKill's child.
		if err := crashChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	var err error
	if tempRoot, err = os.MkdirTemp("", "wayside-characterize-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tempRoot)
	os.Exit(code)
}

// The engine is loaded once per test binary: it takes ~70 MiB.
var (
	engineOnce sync.Once
	engine     *Engine
	engineErr  error
)

func testEngine(t testing.TB) *Engine {
	t.Helper()
	engineOnce.Do(func() { engine, engineErr = NewEngine() })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return engine
}

func testIdentifier(t testing.TB, lim Limits) *Identifier {
	return NewIdentifier(testEngine(t), lim)
}

// openStore opens a store whose invariants are checked at cleanup.
func openStore(t testing.TB, dir string, opts StoreOptions) *Store {
	t.Helper()
	st, err := OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Check(); err != nil {
			t.Errorf("store check: %v", err)
		}
		st.Close()
	})
	return st
}

func newCharacterizer(t testing.TB, st *Store, opts Options) *Characterizer {
	t.Helper()
	opts.Store = st
	if opts.Identifier == nil {
		opts.Identifier = testIdentifier(t, Limits{})
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// scanAll characterizes files into st and returns their problems.
func scanAll(t testing.TB, c *Characterizer, files ...string) []error {
	t.Helper()
	var problems []error
	for _, f := range files {
		fs, err := c.ScanFile(context.Background(), f, false, nil)
		if err != nil {
			t.Fatalf("scan %s: %v", f, err)
		}
		problems = append(problems, fs.Problems...)
	}
	return problems
}

// render prints what st holds, for pinned outputs: per file its summary,
// its aggregates and its records with their nested objects; sizes and
// offsets only withSizes.
func render(st *Store, withSizes bool) string {
	var b bytes.Buffer
	size := func(n int64) string {
		if withSizes {
			return fmt.Sprint(n)
		}
		return "*"
	}
	for _, f := range st.Files() {
		fmt.Fprintf(&b, "file %s records=%d bytes=%s nested=%d empty=%d revisits=%d unresolved=%d noted=%d\n",
			f.File, f.Records, size(f.Bytes), f.Nested, f.Empty, f.Revisits, f.Unresolved, f.Noted)
		_, aggs, _ := st.Container(f.File)
		for _, a := range aggs {
			fmt.Fprintf(&b, "  format %s %q objects=%d bytes=%s nested=%d/%s revisits=%d\n", a.PUID, strings.TrimSpace(a.Name+" "+a.Version), a.Objects, size(a.Bytes), a.NestedObjects, size(a.NestedBytes), a.Revisits)
		}
		for _, r := range st.Records(f.File) {
			for _, o := range r.Objects() {
				puid := o.PUID
				if puid == "" {
					puid = "-"
				}
				ind := strings.Repeat("  ", len(o.Path))
				line := fmt.Sprintf("  %s%s %s %s %s", ind, size(r.Offset), r.Type, puid, strings.Join(append([]string{r.URI}, o.Path...), " → "))
				if len(o.Path) > 0 {
					line = fmt.Sprintf("  %s→ %s %s", ind, puid, strings.Join(o.Path, " → "))
				}
				if o.Note != "" {
					line += " [" + o.Note + "]"
				}
				if r.Unresolved && len(o.Path) == 0 {
					line += " [unresolved revisit]"
				} else if r.Original != "" && len(o.Path) == 0 && withSizes {
					line += " [inherited from " + r.Original + "]"
				} else if r.Original != "" && len(o.Path) == 0 {
					line += " [inherited]"
				}
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}

// golden compares got with testdata/name (ddtest.Golden).
func golden(t *testing.T, name, got string) {
	t.Helper()
	ddtest.Golden(t, filepath.Join("testdata", name), []byte(got))
}

// deliverAll hands every record of the WARC files in dir to sub, in file
// and offset order, as a producer would.
func deliverAll(t testing.TB, dir string, sub wayside.Subscriber) {
	t.Helper()
	if err := deliver(dir, sub); err != nil {
		t.Fatal(err)
	}
}

// deliver delivers every capture of the WARC files in dir to sub, as the
// ingester does (unreadable records skipped).
func deliver(dir string, sub wayside.Subscriber) error {
	files, err := listWARCs([]string{dir})
	if err != nil {
		return err
	}
	for _, f := range files {
		r, err := warcio.Open(f.path)
		if err != nil {
			return err
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err == nil {
				sub.OnCapture(context.Background(), rec.Capture(f.name))
			}
		}
		r.Close()
	}
	return nil
}
