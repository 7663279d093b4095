package mementomap

import "bytes"

// seekScan is seek without the sparse index: a plain binary search over
// bytes, to cross-check seek.
// Invariants: every line starting before lo has a smaller key; every line
// starting at or after hi has a key >= key; both are line starts.
func (m *Map) seekScan(key []byte) int {
	lo, hi := m.start, len(m.data)
	for lo < hi {
		mid := lo + (hi-lo)/2
		p := lo
		if i := bytes.LastIndexByte(m.data[lo:mid], '\n'); i >= 0 {
			p = lo + i + 1
		}
		k, end := m.lineAt(p)
		if bytes.Compare(k, key) < 0 {
			lo = end + 1
			if lo > hi {
				lo = hi
			}
		} else {
			hi = p
		}
	}
	return lo
}
