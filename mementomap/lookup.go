package mementomap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// Map is a MementoMap opened for lookups: memory-mapped, its headers
// parsed, answered by binary search. A map in another tool's spelling or
// order (keys not canonical, unsorted, duplicated) is normalised on open
// into a temporary copy (see NormalizeKey and Normalized), so that every
// spelling answers alike. It is safe for concurrent use until Close.
type Map struct {
	data   []byte
	start  int   // offset of the first data line
	sparse []int // offsets of every indexStride-th data line
	// sparsePfx holds the first 16 bytes at each sparse offset (see
	// prefix16): the binary search decides most steps on them without
	// touching the mapped file.
	sparsePfx []prefix
	headers   []ukvs.Header
	mapped    bool
	name      string
	norm      NormalizeStats
}

// OpenMap memory-maps the map file at path (normalising it first, into an
// unlinked temporary file, when it is not in canonical sorted form).
func OpenMap(path string) (*Map, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mementomap: %w", err) // "open PATH: ..."
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("mementomap: %s is a directory, not a map", path)
	}
	m := &Map{name: path}
	if m.data, m.mapped, err = mmapFile(f, path); err != nil {
		return nil, err
	}
	if err := m.init(true); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// mmapFile maps the whole of f read-only.
func mmapFile(f *os.File, name string) ([]byte, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("mementomap: open map: %w", err)
	}
	if fi.Size() == 0 {
		return nil, false, nil
	}
	if int64(int(fi.Size())) != fi.Size() {
		return nil, false, fmt.Errorf("mementomap: open map %s: too large to map", name)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false, fmt.Errorf("mementomap: mmap %s: %w", name, err)
	}
	return data, true, nil
}

// NewMap returns a map over data (a whole UKVS file), which must stay
// unchanged while the map is used. A map that is not in canonical sorted
// form is normalised into memory.
func NewMap(data []byte) (*Map, error) {
	m := &Map{data: data, name: "map"}
	if err := m.init(false); err != nil {
		return nil, err
	}
	return m, nil
}

// Normalized returns what normalising the map on open did (the zero value
// when it was canonical already).
func (m *Map) Normalized() NormalizeStats { return m.norm }

// init indexes the map, normalising it first when its data lines are not
// canonical and strictly increasing.
func (m *Map) init(mapped bool) error {
	if err := m.index(); err != nil {
		return err
	}
	if canonicalData(m.data[m.start:]) {
		return nil
	}
	f, st, err := normalizeFile(bytes.NewReader(m.data), m.name, normalizeOptions{})
	if err != nil {
		return err
	}
	defer f.Close()
	var data []byte
	if mapped {
		if data, mapped, err = mmapFile(f, m.name); err != nil {
			return err
		}
	} else if data, err = io.ReadAll(io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return fmt.Errorf("mementomap: normalise %s: %w", m.name, err)
	}
	if err := m.Close(); err != nil {
		return err
	}
	m.data, m.mapped, m.norm = data, mapped, st
	m.headers, m.sparse, m.sparsePfx = nil, nil, nil
	return m.index()
}

// index parses the headers and builds the sparse index of line starts.
func (m *Map) index() error {
	if err := notText(m.data, m.name); err != nil {
		return err
	}
	p := 0
	var line int64
	// Headers (and blank lines among them, as readers skip them) come
	// first; the first other line starts the data.
	for p < len(m.data) {
		e := bytes.IndexByte(m.data[p:], '\n')
		if e < 0 {
			e = len(m.data) - p
		}
		l := m.data[p : p+e]
		if len(bytes.TrimSpace(l)) > 0 && l[0] != '!' {
			break
		}
		line++
		if len(bytes.TrimSpace(l)) > 0 {
			h, err := ukvs.ParseHeader(l)
			if err != nil {
				return &ukvs.Error{File: m.name, Line: line, Err: err}
			}
			m.headers = append(m.headers, h)
		}
		p += e + 1
	}
	m.start = min(p, len(m.data))
	// A sparse index of line starts: the binary search compares keys at
	// known line starts instead of scanning for them.
	for q, n := m.start, 0; q < len(m.data); n++ {
		if n%indexStride == 0 {
			m.sparse = append(m.sparse, q)
			m.sparsePfx = append(m.sparsePfx, prefix16(m.data[q:]))
		}
		e := bytes.IndexByte(m.data[q:], '\n')
		if e < 0 {
			break
		}
		q += e + 1
	}
	return nil
}

// notText refuses binary data (a WARC, a gzip file, an image) given as a
// map, before any of it is quoted in an error: gzip magic, a NUL byte or
// more than 1% control bytes in the first 4 KiB. (Keys may hold raw bytes
// other tools wrote; those are not refused.)
func notText(data []byte, name string) error {
	head := data[:min(len(data), 4096)]
	ctl := 0
	for _, c := range head {
		if c < ' ' && c != '\t' && c != '\n' && c != '\r' {
			ctl++
		}
	}
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return fmt.Errorf("mementomap: %s is gzip-compressed data, not a map (maps are plain UKVS text)", name)
	case bytes.IndexByte(head, 0) >= 0 || ctl*100 > len(head):
		return fmt.Errorf("mementomap: %s holds binary data, not a map (maps are plain UKVS text)", name)
	}
	return nil
}

// indexStride is the number of lines per sparse index entry.
const indexStride = 16

// Headers returns the map's header lines.
func (m *Map) Headers() []ukvs.Header { return m.headers }

// Data returns the data lines of the map (after the headers).
func (m *Map) Data() []byte { return m.data[m.start:] }

// Close unmaps the file.
func (m *Map) Close() error {
	if m.mapped {
		m.mapped = false
		d := m.data
		m.data = nil
		if err := unix.Munmap(d); err != nil {
			return fmt.Errorf("mementomap: munmap: %w", err)
		}
	}
	return nil
}

// lineAt returns the key of the line starting at p, and the line's end.
func (m *Map) lineAt(p int) (key []byte, end int) {
	d := m.data[p:]
	e := bytes.IndexByte(d, '\n')
	if e < 0 {
		e = len(d)
	}
	line := d[:e]
	k := bytes.IndexByte(line, ' ')
	if k < 0 {
		k = len(line)
	}
	if t := bytes.IndexByte(line[:k], '\t'); t >= 0 {
		k = t
	}
	return line[:k], p + e
}

// keyAt returns the key of the line starting at p.
func (m *Map) keyAt(p int) []byte {
	d := m.data[p:]
	win := d[:min(len(d), 4096)]
	k := bytes.IndexByte(win, ' ')
	if k < 0 {
		k, _ := m.lineAt(p)
		return k
	}
	seg := win[:k]
	if i := bytes.IndexByte(seg, '\n'); i >= 0 {
		seg = seg[:i]
	}
	if i := bytes.IndexByte(seg, '\t'); i >= 0 {
		seg = seg[:i]
	}
	return seg
}

// cmpAt compares the key of the line starting at p with key. The bytes
// ending a line's key (' ', '\t', '\r', '\n') sort below every byte a key
// may hold, so one byte comparison does it without finding the key's end.
func (m *Map) cmpAt(p int, key []byte) int {
	d := m.data[p:]
	n := min(len(key), len(d))
	if c := bytes.Compare(d[:n], key[:n]); c != 0 {
		return c
	}
	switch {
	case n < len(key):
		return -1 // the data ended inside key
	case n == len(d) || d[n] <= ' ':
		return 0
	}
	return 1
}

// nextLine returns the start of the line after the one holding offset p.
func (m *Map) nextLine(p int) int {
	e := bytes.IndexByte(m.data[p:], '\n')
	if e < 0 {
		return len(m.data)
	}
	return p + e + 1
}

// seek returns the offset of the first line whose key is >= key (len(data)
// when none is) and the offset of the line before it (-1 when none): a
// binary search over the sparse index finds the last indexed line with a
// smaller key (or the first line), then at most indexStride lines are
// scanned. The first and last lines are compared like any other.
func (m *Map) seek(key []byte) (int, int) {
	kp := prefix16(key)
	lo, hi := 0, len(m.sparse) // sparse[:lo] < key <= sparse[hi:]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		c := m.sparsePfx[mid].cmp(kp)
		if c == 0 {
			c = m.cmpAt(m.sparse[mid], key)
		}
		if c < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return m.start, -1
	}
	prev := -1
	p := m.sparse[lo-1]
	for p < len(m.data) {
		c := prefix16(m.data[p:]).cmp(kp)
		if c == 0 {
			c = m.cmpAt(p, key)
		}
		if c >= 0 {
			return p, prev
		}
		prev = p
		p = m.nextLine(p)
	}
	return len(m.data), prev
}

// prefix is the first 16 bytes of a key or of the data at a line start,
// as two big-endian numbers, zero-padded when shorter. Where the prefixes
// of a line and of a key differ, they order the two as cmpAt does: up to
// the shorter's end the bytes are the same; a line's key ends in a byte
// <= ' ' (or the data's end, a zero byte here), below every byte a key
// may hold at that place; and a key ending first (a zero byte) is below
// a line going on, which cmpAt counts as >= the key too (seek asks only
// whether a line is below the key). Only equal prefixes need cmpAt.
type prefix struct{ hi, lo uint64 }

func prefix16(b []byte) prefix {
	if len(b) <= 8 {
		return prefix{hi: prefix8(b)}
	}
	return prefix{prefix8(b), prefix8(b[8:])}
}

// cmp compares two prefixes as numbers (-1, 0, +1).
func (a prefix) cmp(b prefix) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

// prefix8 returns the first 8 bytes of b as a big-endian number, b
// padded with zero bytes when shorter.
func prefix8(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var v uint64
	for i := range 8 {
		v <<= 8
		if i < len(b) {
			v |= uint64(b[i])
		}
	}
	return v
}

func lcp(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// find returns the line whose key equals key or, when there is none, the
// length of the longest prefix key shares with a line of the map: keys
// with a given prefix are contiguous, so when no neighbour of key's
// position shares a prefix with it, no line does.
func (m *Map) find(key []byte) ([]byte, bool, int) {
	p, prev := m.seek(key)
	shared := 0
	if p < len(m.data) {
		if m.cmpAt(p, key) == 0 {
			_, end := m.lineAt(p)
			return m.data[p:end], true, len(key)
		}
		shared = lcp(m.keyAt(p), key)
	}
	if prev >= 0 {
		shared = max(shared, lcp(m.keyAt(prev), key))
	}
	return nil, false, shared
}

// Match is the answer of a lookup.
type Match struct {
	// Present is the answer: the archive may hold captures of the key
	// (false when no key matched or the matching key is an exclusion).
	Present bool
	// Key is the most specific key of the map that matched ("" for none).
	Key []byte
	// Freq is the matching line's frequency.
	Freq ukvs.Freq
}

// Lookup answers whether the archive holds captures under key, an HxPx key
// (a SURT without query; see KeyFor) in any spelling: it is normalised
// first (NormalizeKey). The most specific matching key wins,
// so exclusions inside wildcards hold. scratch may be nil; passing the
// same *Scratch to successive calls avoids allocations.
func (m *Map) Lookup(key []byte, s *Scratch) (Match, error) {
	if s == nil {
		s = new(Scratch)
	}
	if !fastCanonicalKey(key) {
		var err error
		if s.key, err = NormalizeKey(s.key[:0], key); err != nil {
			return Match{}, fmt.Errorf("mementomap: lookup: %w", err)
		}
		key = s.key
	}
	return m.lookupCanonical(key, s)
}

// lookupCanonical is Lookup of a key already in canonical form (the whole
// of Lookup before keys were normalised; BenchmarkLookup compares both).
func (m *Map) lookupCanonical(key []byte, s *Scratch) (Match, error) {
	if err := ukvs.ValidKey(key); err != nil {
		return Match{}, fmt.Errorf("mementomap: lookup: %w", err)
	}
	var err error
	s.cands, s.buf, err = Candidates(key, s.buf, s.cands[:0])
	if err != nil {
		return Match{}, fmt.Errorf("mementomap: lookup: %w", err)
	}
	s.probes = s.probes[:0]
cands:
	for _, c := range s.cands {
		// A wildcard "P*" cannot be in the map when an earlier search for
		// a key starting with P found no line sharing P.
		if n := len(c) - 1; c[n] == '*' {
			for _, pr := range s.probes {
				if pr.shared < n && len(pr.key) >= n && bytes.Equal(pr.key[:n], c[:n]) {
					continue cands
				}
			}
		}
		line, ok, shared := m.find(c)
		if !ok {
			s.probes = append(s.probes, probe{key: c, shared: shared})
			continue
		}
		rec, err := ukvs.ParseRecord(line)
		if err != nil {
			return Match{}, fmt.Errorf("mementomap: lookup %q: %s: %w", key, m.name, err)
		}
		return Match{Present: !rec.Freq.IsExclusion(), Key: rec.Key, Freq: rec.Freq}, nil
	}
	return Match{}, nil
}

// Scratch holds buffers reused across lookups by one goroutine.
type Scratch struct {
	key    []byte
	buf    []byte
	cands  [][]byte
	probes []probe
}

type probe struct {
	key    []byte
	shared int
}

// Check verifies the map's invariants: every data line parses, keys are
// valid HxPx keys and strictly increasing.
func (m *Map) Check() error {
	r := ukvs.NewReader(bytes.NewReader(m.data), m.name, ukvs.ReaderOptions{})
	if _, err := r.Headers(); err != nil {
		return err
	}
	var toks []token
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if toks, err = tokenize(rec.Key, toks); err != nil {
			return &ukvs.Error{File: m.name, Line: r.Line(), Err: err}
		}
	}
}
