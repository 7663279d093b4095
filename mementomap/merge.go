package mementomap

import (
	"bytes"
	"fmt"
	"io"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// MergeStats describes a merge.
type MergeStats struct {
	Lines              int64 // data lines written
	Summed             int64 // keys present in more than one map
	ExclusionsResolved int64 // exclusions dropped because another map holds captures under them
}

type cursor struct {
	m   *Map
	p   int
	key []byte
	end int
}

func (c *cursor) load() {
	for c.p < len(c.m.data) {
		k, end := c.m.lineAt(c.p)
		if len(k) == 0 { // blank line
			c.p = end + 1
			continue
		}
		c.key, c.end = k, end
		return
	}
	c.key = nil
}

func (c *cursor) next() {
	c.p = c.end + 1
	c.load()
}

// Merge writes the union of sorted maps to w: a key present in several
// maps gets their summed frequency (mementos are distinct captures, so
// M counts add exactly; the same URI-R may be in several archives, so R
// sums are upper bounds); an exclusion of one map is dropped when another
// map answers a positive less specific key for it (that map may hold
// captures under it, and the exclusion would hide them); headers are the
// distinct headers of all maps plus a !meta naming the sources.
func Merge(w io.Writer, maps []*Map, names []string) (MergeStats, error) {
	var st MergeStats
	uw := ukvs.NewWriter(w)
	seen := map[string]bool{}
	for _, m := range maps {
		for _, h := range m.headers {
			line := string(ukvs.AppendHeader(nil, h))
			if seen[line] {
				continue
			}
			seen[line] = true
			if err := uw.WriteHeader(h); err != nil {
				return st, fmt.Errorf("mementomap: merge: %w", err)
			}
		}
	}
	if len(names) > 0 {
		h, err := ukvs.MetaHeader(map[string]any{"merged_from": names})
		if err != nil {
			return st, err
		}
		if err := uw.WriteHeader(h); err != nil {
			return st, fmt.Errorf("mementomap: merge: %w", err)
		}
	}
	cs := make([]*cursor, len(maps))
	for i, m := range maps {
		cs[i] = &cursor{m: m, p: m.start}
		cs[i].load()
	}
	var s Scratch
	var jsons [][]byte
	for {
		var least []byte
		for _, c := range cs {
			if c.key != nil && (least == nil || bytes.Compare(c.key, least) < 0) {
				least = c.key
			}
		}
		if least == nil {
			break
		}
		key := bytes.Clone(least)
		var sum ukvs.Freq
		n := 0
		jsons = jsons[:0]
		var holders []int
		for i, c := range cs {
			if c.key == nil || !bytes.Equal(c.key, key) {
				continue
			}
			rec, err := ukvs.ParseRecord(c.m.data[c.p:c.end])
			if err != nil {
				return st, fmt.Errorf("mementomap: merge: %s: key %q: %w", nameOf(names, i), key, err)
			}
			if n == 0 {
				sum = rec.Freq
			} else {
				sum = sumFreq(sum, rec.Freq)
			}
			if rec.JSON != nil {
				jsons = append(jsons, bytes.Clone(rec.JSON))
			}
			n++
			holders = append(holders, i)
			c.next()
		}
		if n > 1 {
			st.Summed++
		}
		if sum.IsExclusion() {
			covered := false
			for i, m := range maps {
				if contains(holders, i) {
					continue
				}
				got, err := m.Lookup(key, &s)
				if err != nil {
					return st, fmt.Errorf("mementomap: merge: %s: %w", nameOf(names, i), err)
				}
				if got.Present {
					covered = true
					break
				}
			}
			if covered {
				st.ExclusionsResolved++
				continue
			}
		}
		rec := ukvs.Record{Key: key, Freq: sum, JSON: mergeJSON(jsons)}
		if err := uw.Write(rec); err != nil {
			return st, fmt.Errorf("mementomap: merge: %w", err)
		}
		st.Lines++
	}
	if err := uw.Flush(); err != nil {
		return st, fmt.Errorf("mementomap: merge: %w", err)
	}
	return st, nil
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

func nameOf(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("map %d", i)
}

// mergeJSON keeps one JSON block when the maps agree and lists them all
// under "merged" otherwise, so that nothing is dropped.
func mergeJSON(js [][]byte) []byte {
	switch len(js) {
	case 0:
		return nil
	case 1:
		return js[0]
	}
	same := true
	for _, j := range js[1:] {
		same = same && bytes.Equal(j, js[0])
	}
	if same {
		return js[0]
	}
	out := []byte(`{"merged":[`)
	for i, j := range js {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, j...)
	}
	return append(out, ']', '}')
}
