package fixity

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

func loadCorpus(t *testing.T, name string) *Manifest {
	t.Helper()
	m, err := ReadManifest(filepath.Join("testdata", "manifests", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCorpusRecompute recomputes every recorded manifest without a browser.
func TestCorpusRecompute(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "manifests", "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("corpus: %d manifests, %v", len(files), err)
	}
	for _, f := range files {
		m, err := ReadManifest(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(m); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if got := Recompute(m); got != m.Root {
			t.Errorf("%s: recomputed %s, recorded %s", f, got, m.Root)
		}
	}
}

// TestVerifyDetectsTampering changes one recorded leaf at a time and checks
// Verify notices.
func TestVerifyDetectsTampering(t *testing.T) {
	base := loadCorpus(t, "baseline")
	tamper := []struct {
		name string
		f    func(m *Manifest)
	}{
		{"status", func(m *Manifest) { firstIncluded(m).Rewritten.Status = 201 }},
		{"header", func(m *Manifest) {
			r := firstIncluded(m).Rewritten
			r.Headers[0].Value += " "
		}},
		{"body hash", func(m *Manifest) { firstHashed(m).BodyHash[0] ^= 1 }},
		{"uri-m", func(m *Manifest) { firstIncluded(m).Rewritten.FinalURIM += "x" }},
		{"excluded flips", func(m *Manifest) {
			for i := range m.Resources {
				if !m.Resources[i].Included() {
					m.Resources[i].Excluded = ""
					return
				}
			}
		}},
		{"resource dropped", func(m *Manifest) {
			for i := range m.Resources {
				if m.Resources[i].Included() {
					m.Resources = append(m.Resources[:i], m.Resources[i+1:]...)
					return
				}
			}
		}},
	}
	for _, c := range tamper {
		m := base.clone()
		c.f(m)
		if err := Verify(m); err == nil {
			t.Errorf("tampering with the %s went unnoticed", c.name)
		}
	}
}

func firstIncluded(m *Manifest) *Resource {
	for i := range m.Resources {
		if m.Resources[i].Included() && m.Resources[i].Rewritten != nil && len(m.Resources[i].Rewritten.Headers) > 0 {
			return &m.Resources[i]
		}
	}
	panic("no included resource")
}

func firstHashed(m *Manifest) *Response {
	for i := range m.Resources {
		if r := m.Resources[i].Rewritten; m.Resources[i].Included() && r != nil && r.Body == BodyHashed {
			return r
		}
	}
	panic("no hashed body")
}

// TestClassifyCorpus classifies pairs of recorded manifests; expected
// output lives in testdata/classify.txt (rewrite with -update).
func TestClassifyCorpus(t *testing.T) {
	const path = "testdata/classify.txt"
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cases := 0
	for i, l := range strings.Split(strings.TrimRight(string(in), "\n"), "\n") {
		if strings.HasPrefix(l, "  ") {
			continue
		}
		out.WriteString(l + "\n")
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("%s:%d: want two manifest names", path, i+1)
		}
		ch := Compare(loadCorpus(t, f[0]), loadCorpus(t, f[1]))
		fmt.Fprintf(&out, "  class %s\n", ch.Class)
		for _, r := range ch.Resources {
			fmt.Fprintf(&out, "  resource %s %s\n", r.Class, r.Key)
			for _, l := range r.Leaves {
				fmt.Fprintf(&out, "    leaf %s\n", l)
			}
		}
		cases++
	}
	ddtest.Golden(t, path, out.Bytes())
	if cases < 10 {
		t.Fatalf("only %d cases", cases)
	}
}

// TestAlgorithm1Pinned computes the Algorithm 1 root of every recorded
// manifest with the package and compares it with testdata/algorithm1.txt
// (rewritten by -update; TestAlgorithm1Independent checks the same file
// without the package).
func TestAlgorithm1Pinned(t *testing.T) {
	const path = "testdata/algorithm1.txt"
	files, _ := filepath.Glob(filepath.Join("testdata", "manifests", "*.json"))
	hist, _ := filepath.Glob(filepath.Join("testdata", "history", "manifests", "*", "*.json"))
	var out bytes.Buffer
	out.WriteString("# Algorithm 1 roots of the recorded manifests (see the package doc), written by\n# go test -run TestAlgorithm1Pinned -update and recomputed without the package by\n# TestAlgorithm1Independent.\n")
	for _, f := range append(files, hist...) {
		m, err := ReadManifest(f)
		if err != nil {
			t.Fatal(err)
		}
		a := ComputeAlgorithm1(m)
		if m.Algorithm1 != nil && *m.Algorithm1 != a {
			t.Errorf("%s: stored Algorithm 1 roots %+v, computed %+v", f, *m.Algorithm1, a)
		}
		fmt.Fprintf(&out, "%s %s\n", filepath.ToSlash(strings.TrimPrefix(f, "testdata/")), a.Root)
	}
	ddtest.Golden(t, path, out.Bytes())
}
