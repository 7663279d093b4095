package fixity_test

// This file recomputes the Algorithm 1 roots of recorded manifests from
// the package documentation alone ("Algorithm 1" in doc.go), with the
// standard library only: it imports nothing of package fixity, decodes the
// manifest JSON into its own types, and compares with the roots pinned in
// testdata/algorithm1.txt.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type a1Header struct{ Name, Value, Raw string }

type a1Hop struct {
	Status  int
	URIM    string
	URL     string
	Headers []a1Header
}

type a1Response struct {
	FinalURL  string `json:"final_url"`
	FinalURIM string `json:"final_urim"`
	Outcome   string
	Status    int
	Redirects []a1Hop
	Headers   []a1Header
	Body      string
	BodyHash  string `json:"body_hash"`
}

type a1Manifest struct {
	Algorithm1 *struct{ Root, Rewritten, Raw string }
	Resources  []struct {
		Excluded  string
		Rewritten *a1Response
		Raw       *a1Response
	}
}

// pt is the plain tree: pairs left to right, odd last node promoted.
func pt(nodes [][32]byte) [32]byte {
	if len(nodes) == 0 {
		return sha256.Sum256(nil)
	}
	for len(nodes) > 1 {
		var next [][32]byte
		for i := 0; i < len(nodes); i += 2 {
			if i+1 == len(nodes) {
				next = append(next, nodes[i])
				continue
			}
			next = append(next, sha256.Sum256(append(nodes[i][:], nodes[i+1][:]...)))
		}
		nodes = next
	}
	return nodes[0]
}

func blue(t *testing.T, status int, hs []a1Header, body string, urim string) [32]byte {
	lines := []string{":status: " + strconv.Itoa(status)}
	for _, h := range hs {
		v := h.Value
		if h.Raw != "" {
			v = h.Raw
		}
		lines = append(lines, h.Name+": "+v)
	}
	sort.Strings(lines)
	var brown [][32]byte
	for _, l := range lines {
		brown = append(brown, sha256.Sum256([]byte(l)))
	}
	nodes := [][32]byte{pt(brown)}
	if body != "" {
		b, err := hex.DecodeString(body)
		if err != nil || len(b) != 32 {
			t.Fatalf("body hash %q", body)
		}
		nodes = append(nodes, [32]byte(b))
	}
	return pt(append(nodes, sha256.Sum256([]byte(urim))))
}

type a1Res struct {
	urim string
	blue [32]byte
}

func capture(t *testing.T, p *a1Response) []a1Res {
	if p == nil || p.Outcome != "ok" {
		return nil
	}
	var out []a1Res
	for _, h := range p.Redirects {
		u := h.URL
		if u == "" {
			u = h.URIM
		}
		out = append(out, a1Res{u, blue(t, h.Status, h.Headers, "", u)})
	}
	u := p.FinalURL
	if u == "" {
		u = p.FinalURIM
	}
	body := ""
	if p.Body == "hashed" {
		body = p.BodyHash
	}
	return append(out, a1Res{u, blue(t, p.Status, p.Headers, body, u)})
}

func red(rs []a1Res) [32]byte {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].urim != rs[j].urim {
			return rs[i].urim < rs[j].urim
		}
		return hex.EncodeToString(rs[i].blue[:]) < hex.EncodeToString(rs[j].blue[:])
	})
	var nodes [][32]byte
	for _, r := range rs {
		nodes = append(nodes, r.blue)
	}
	return pt(nodes)
}

func independentAlgorithm1(t *testing.T, path string) (root string, stored string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m a1Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var rw, raw []a1Res
	for _, r := range m.Resources {
		if r.Excluded != "" {
			continue
		}
		rw = append(rw, capture(t, r.Rewritten)...)
		raw = append(raw, capture(t, r.Raw)...)
	}
	g := pt([][32]byte{red(rw), red(raw)})
	if m.Algorithm1 != nil {
		stored = m.Algorithm1.Root
	}
	return hex.EncodeToString(g[:]), stored
}

// TestAlgorithm1Independent recomputes the Algorithm 1 root of every
// recorded manifest (the injected-change corpus and the multi-sweep
// history) and checks it against the pinned roots and the manifests' own.
func TestAlgorithm1Independent(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "algorithm1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pinned := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fs := strings.Fields(l)
		if len(fs) != 2 {
			t.Fatalf("testdata/algorithm1.txt: bad line %q", l)
		}
		pinned[fs[0]] = fs[1]
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "manifests", "*.json"))
	hist, _ := filepath.Glob(filepath.Join("testdata", "history", "manifests", "*", "*.json"))
	files = append(files, hist...)
	if len(files) < 30 || len(pinned) != len(files) {
		t.Fatalf("%d manifests, %d pinned roots", len(files), len(pinned))
	}
	for _, p := range files {
		got, stored := independentAlgorithm1(t, p)
		name := filepath.ToSlash(strings.TrimPrefix(p, "testdata"+string(filepath.Separator)))
		if want := pinned[name]; got != want {
			t.Errorf("%s: recomputed %s, pinned %s", name, got, want)
		}
		if stored != "" && stored != got {
			t.Errorf("%s: recomputed %s, the manifest says %s", name, got, stored)
		}
	}
}
