package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func genOpts(t *testing.T, c *ddtest.Case) GenerateOptions {
	var o GenerateOptions
	if s := c.Arg("status", ""); s != "" {
		for _, p := range strings.Split(s, ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("%s: %v", c.Pos, err)
			}
			o.Statuses = append(o.Statuses, n)
		}
	}
	if s := c.Arg("mime", ""); s != "" {
		o.MIMEs = strings.Split(s, ",")
	}
	o.SkipBad = c.Arg("skip-bad", "") == "true"
	if s := c.Arg("mem", ""); s != "" {
		n, _ := strconv.Atoi(s)
		o.MemLimit = int64(n)
		o.TempDir = t.TempDir()
	}
	return o
}

func TestGenerateDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/generate.txt", func(t *testing.T, c *ddtest.Case) string {
		o := genOpts(t, c)
		var skips []string
		o.OnSkip = func(err error) { skips = append(skips, "skip: "+err.Error()) }
		g := NewGenerator(o)
		defer g.Close()
		if err := g.AddLines(context.Background(), strings.NewReader(c.Input), "input", Format(c.Arg("format", "uris"))); err != nil {
			return "error: " + err.Error()
		}
		spilled := false
		if o.TempDir != "" {
			ents, _ := os.ReadDir(o.TempDir)
			spilled = len(ents) > 0
		}
		var out bytes.Buffer
		if _, err := g.WriteTo(&out); err != nil {
			return "error: " + err.Error()
		}
		m, err := NewMap(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Check(); err != nil {
			t.Errorf("%s: generated map fails Check: %v", c.Pos, err)
		}
		st := g.Stats()
		res := strings.Join(skips, "\n")
		if res != "" {
			res += "\n"
		}
		return res + out.String() + fmt.Sprintf("# captures %d kept %d status-filtered %d mime-filtered %d not-http %d bad %d keys %d spilled=%v",
			st.Captures, st.Kept, st.FilteredStatus, st.FilteredMIME, st.NotHTTP, st.Bad, st.Keys, spilled)
	})
}

// TestGenerateSpillEqualsInMemory: a tiny memory limit forces many sorted
// runs and a k-way merge; the output is identical.
func TestGenerateSpillEqualsInMemory(t *testing.T) {
	var in strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&in, "http://h%d.example.org/p/%d?q=%d\n", (i*7919)%97, (i*31)%53, i%5)
	}
	run := func(o GenerateOptions) (string, int) {
		g := NewGenerator(o)
		defer g.Close()
		if err := g.AddLines(context.Background(), strings.NewReader(in.String()), "in", FormatURIList); err != nil {
			t.Fatal(err)
		}
		runs := 0
		if o.TempDir != "" {
			ents, _ := os.ReadDir(o.TempDir)
			runs = len(ents)
		}
		var out bytes.Buffer
		if _, err := g.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		return out.String(), runs
	}
	dir := t.TempDir()
	a, _ := run(GenerateOptions{})
	b, runs := run(GenerateOptions{MemLimit: 4096, TempDir: dir})
	if runs < 10 {
		t.Fatalf("only %d sorted runs spilled", runs)
	}
	if a != b {
		t.Fatal("spilled output differs from in-memory output")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("spill files left behind: %d", len(ents))
	}
}

// TestDefectStripAfterSort: the reference implementation stripped queries
// after sorting, so "b?x" landed after "b-c" and lookups missed keys.
// Wayside makes the key final before sorting.
func TestDefectStripAfterSort(t *testing.T) {
	uris := []string{"http://a.com/b?x=1", "http://a.com/b-c", "http://a.com/b", "http://a.com/b/?z", "http://a.com/b.html?y", "http://a.com/b/c"}
	g := NewGenerator(GenerateOptions{})
	defer g.Close()
	for _, u := range uris {
		if err := g.Add(u, 200, "text/html"); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if _, err := g.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	m, err := NewMap(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(); err != nil {
		t.Fatalf("generated map is not sorted: %v\n%s", err, out.String())
	}
	for _, u := range uris {
		k, err := KeyFor(u)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := m.Lookup([]byte(k), nil); !got.Present {
			t.Errorf("%s (key %s) not found in\n%s", u, k, out.String())
		}
	}
}

// TestGenerateCorpus generates a map from the real WARC corpus and checks
// that every capture in it is answered positively, by the full map and by
// a strongly compacted one.
func TestGenerateCorpus(t *testing.T) {
	warcs := testenv.CorpusWARCs(t)
	g := NewGenerator(GenerateOptions{SkipBad: true, OnSkip: func(err error) { t.Logf("skipped: %v", err) }})
	defer g.Close()
	for _, p := range warcs {
		if err := g.AddFile(context.Background(), p, FormatAuto); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.ukvs")
	f, err := os.Create(full)
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.WriteTo(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st := g.Stats()
	t.Logf("corpus: %d WARCs, %+v", len(warcs), st)
	if n < 50 || st.Kept < n {
		t.Fatalf("only %d keys from %d kept captures", n, st.Kept)
	}
	small := filepath.Join(dir, "small.ukvs")
	if _, err := CompactFile(context.Background(), full, small, CompactOptions{Wh: 0.1, Wp: 0.1}); err != nil {
		t.Fatal(err)
	}
	var maps []*Map
	for _, p := range []string{full, small} {
		m, err := OpenMap(p)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
		maps = append(maps, m)
	}
	checked := 0
	for _, u := range corpusCaptureURIs(t, warcs) {
		k := mustKey(t, u)
		for i, m := range maps {
			if got, err := m.Lookup([]byte(k), nil); err != nil || !got.Present {
				t.Errorf("map %d: capture %s (key %s) not found: %v", i, u, k, err)
			}
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d captures checked", checked)
	}
}
