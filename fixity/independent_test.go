package fixity

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// This file recomputes roots from manifests following only the package
// documentation, with crypto/sha256 and nothing of package merkle, to show
// the documented construction is complete.

func indEnc(tag byte, fields ...[]byte) []byte {
	out := []byte{tag}
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

func indMTH(leaves [][]byte) [32]byte {
	if len(leaves) == 0 {
		return sha256.Sum256(nil)
	}
	if len(leaves) == 1 {
		return sha256.Sum256(append([]byte{0}, leaves[0]...))
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	l, r := indMTH(leaves[:k]), indMTH(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func indResponse(p *Response) [32]byte {
	hs := append([]Header(nil), p.Headers...)
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Name != hs[j].Name {
			return hs[i].Name < hs[j].Name
		}
		return hs[i].Value < hs[j].Value
	})
	var hl [][]byte
	for _, h := range hs {
		hl = append(hl, indEnc('H', []byte(h.Name), []byte(h.Value)))
	}
	hr := indMTH(hl)
	status := p.Outcome
	if p.Outcome == "ok" {
		status = strconv.Itoa(p.Status)
	}
	leaves := [][]byte{indEnc('S', []byte(status)), indEnc('h', hr[:])}
	if p.Body == "hashed" {
		leaves = append(leaves, indEnc('B', p.BodyHash[:]))
	} else {
		leaves = append(leaves, indEnc('N', []byte(p.Body)))
	}
	u := sha256.Sum256([]byte(p.FinalURIM))
	leaves = append(leaves, indEnc('U', u[:]))
	for _, h := range p.Redirects {
		leaves = append(leaves, indEnc('L', []byte(strconv.Itoa(h.Status)), []byte(h.URIM)))
	}
	return indMTH(leaves)
}

func indRoot(m *Manifest) string {
	type item struct {
		key, dt string
		rw, raw *[32]byte
	}
	var items []item
	for i := range m.Resources {
		r := &m.Resources[i]
		if r.Excluded != "" {
			continue
		}
		it := item{key: r.Key, dt: r.Datetime}
		if r.Rewritten != nil {
			h := indResponse(r.Rewritten)
			it.rw = &h
		}
		if r.Raw != nil {
			h := indResponse(r.Raw)
			it.raw = &h
		}
		items = append(items, it)
	}
	hx := func(h *[32]byte) string {
		if h == nil {
			return ""
		}
		return hex.EncodeToString(h[:])
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.key != b.key {
			return a.key < b.key
		}
		if a.dt != b.dt {
			return a.dt < b.dt
		}
		if hx(a.rw) != hx(b.rw) {
			return hx(a.rw) < hx(b.rw)
		}
		return hx(a.raw) < hx(b.raw)
	})
	var rw, raw [][]byte
	for _, it := range items {
		if it.rw != nil {
			rw = append(rw, indEnc('R', []byte(it.key), it.rw[:]))
		}
		if it.raw != nil {
			raw = append(raw, indEnc('R', []byte(it.key), it.raw[:]))
		}
	}
	a, b := indMTH(rw), indMTH(raw)
	root := indMTH([][]byte{indEnc('C', []byte("rewritten"), a[:]), indEnc('C', []byte("raw"), b[:])})
	return hex.EncodeToString(root[:])
}

func TestIndependentRecompute(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "manifests", "*.json"))
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	for _, f := range files {
		m, err := ReadManifest(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := indRoot(m); got != m.Root.String() {
			t.Errorf("%s: the documented construction gives %s, the manifest says %s", f, got, m.Root)
		}
	}
}
