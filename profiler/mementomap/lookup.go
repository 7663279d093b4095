package mementomap

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/wayside-archive/wayside/profiler/ukvs"
)

// Map is a sorted MementoMap file opened for lookups: memory-mapped, its
// headers parsed, answered by binary search. It is safe for concurrent use
// until Close.
type Map struct {
	data    []byte
	start   int // offset of the first data line
	headers []ukvs.Header
	mapped  bool
	name    string
}

// OpenMap memory-maps the map file at path.
func OpenMap(path string) (*Map, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mementomap: open map: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mementomap: open map: %w", err)
	}
	m := &Map{name: path}
	if fi.Size() > 0 {
		if int64(int(fi.Size())) != fi.Size() {
			return nil, fmt.Errorf("mementomap: open map %s: too large to map", path)
		}
		m.data, err = unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("mementomap: mmap %s: %w", path, err)
		}
		m.mapped = true
	}
	if err := m.init(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// NewMap returns a map over data (a whole UKVS file), which must stay
// unchanged while the map is used.
func NewMap(data []byte) (*Map, error) {
	m := &Map{data: data, name: "map"}
	if err := m.init(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Map) init() error {
	p := 0
	var line int64
	for p < len(m.data) && m.data[p] == '!' {
		line++
		e := bytes.IndexByte(m.data[p:], '\n')
		if e < 0 {
			e = len(m.data) - p
		}
		h, err := ukvs.ParseHeader(m.data[p : p+e])
		if err != nil {
			return &ukvs.Error{File: m.name, Line: line, Err: err}
		}
		m.headers = append(m.headers, h)
		p += e + 1
	}
	m.start = min(p, len(m.data))
	return nil
}

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

// lineKey returns the key of the line starting at p, and the line's end.
func (m *Map) lineAt(p int) (key []byte, end int) {
	d := m.data[p:]
	e := bytes.IndexByte(d, '\n')
	if e < 0 {
		e = len(d)
	}
	line := d[:e]
	k := bytes.IndexAny(line, " \t")
	if k < 0 {
		k = len(line)
	}
	return line[:k], p + e
}

// seek returns the offset of the first line whose key is >= key (len(data)
// when none is). Invariants: every line starting before lo has a smaller
// key; every line starting at or after hi has a key >= key. Both lo and hi
// are line starts, so the first and the last lines are looked at like any.
func (m *Map) seek(key []byte) int {
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

// find returns the line whose key equals key.
func (m *Map) find(key []byte) ([]byte, bool) {
	p := m.seek(key)
	if p >= len(m.data) {
		return nil, false
	}
	k, end := m.lineAt(p)
	if !bytes.Equal(k, key) {
		return nil, false
	}
	return m.data[p:end], true
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
// (a SURT without query; see KeyFor). The most specific matching key wins,
// so exclusions inside wildcards hold. scratch may be nil; passing the
// same *Scratch to successive calls avoids allocations.
func (m *Map) Lookup(key []byte, s *Scratch) (Match, error) {
	if s == nil {
		s = new(Scratch)
	}
	var err error
	s.cands, s.buf, err = Candidates(key, s.buf, s.cands[:0])
	if err != nil {
		return Match{}, fmt.Errorf("mementomap: lookup: %w", err)
	}
	for _, c := range s.cands {
		line, ok := m.find(c)
		if !ok {
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
	buf   []byte
	cands [][]byte
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
