package mementomap

import (
	"bytes"
	"testing"
)

// FuzzMapLookup: any bytes opened as a map, any key looked up: no panic,
// and on a map that passes Check, a key that is a line of the map is found.
func FuzzMapLookup(f *testing.F) {
	f.Add([]byte("!fields {}\ncom,a)/ 1\ncom,b)/* 0\n"), []byte("com,b)/x"))
	f.Add([]byte("* 1\n"), []byte("localhost)/"))
	f.Add([]byte("com,a)/\t2\n\n\ncom,c)/ /5~ {a:1}"), []byte("com,a)/"))
	f.Add([]byte("!x\n!y {\n"), []byte("*"))
	f.Fuzz(func(t *testing.T, data, key []byte) {
		m, err := NewMap(data)
		if err != nil {
			return
		}
		var s Scratch
		m.Lookup(key, &s)
		if m.Check() != nil {
			return
		}
		for _, line := range bytes.Split(m.Data(), []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue // blank lines are skipped by readers
			}
			k, _, _ := bytes.Cut(line, []byte(" "))
			k, _, _ = bytes.Cut(k, []byte("\t"))
			if len(k) == 0 {
				continue
			}
			got, err := m.Lookup(k, &s)
			if err != nil || got.Key == nil || !bytes.Equal(got.Key, k) {
				t.Fatalf("line key %q: got %+v %v", k, got, err)
			}
		}
	})
}

// FuzzTokenize: the key parser never panics and the candidates of a key
// are well-formed wildcards ending in "*".
func FuzzTokenize(f *testing.F) {
	for _, k := range []string{"com,example)/a/b", "*", "com,*", ")/", "a)b", "com,a)/*", "com,,a)/", "a,*)/x", "x)/a//b/"} {
		f.Add([]byte(k))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		cands, _, err := Candidates(key, nil, nil)
		if err != nil {
			return
		}
		for i, c := range cands {
			if i == 0 && bytes.Equal(c, key) {
				continue
			}
			if len(c) == 0 || c[len(c)-1] != '*' {
				t.Fatalf("candidate %q of %q is not a wildcard", c, key)
			}
		}
	})
}
