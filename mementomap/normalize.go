package mementomap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/excerpt"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
	"github.com/wayside-archive/wayside/surt"
)

// NormalizeKey appends to dst the canonical form of a MementoMap key as any
// tool may spell it, so that every spelling of one key compares equal (the
// one key normalisation: maps are read, looked up, merged and generated
// through it):
//
//	com,example)          →  com,example)/    (host root; the reference implementation's form)
//	COM,Example,WWW)/A/   →  com,example)/a
//	com,example)/a?b=1    →  com,example)/a   (HxPx keys have no query)
//	http://(com,example,)/ →  com,example)/   (Heritrix form)
//	com,example:443)/     →  com,example)/
//	com,example,www,*     →  com,example,*    (wildcards keep their form)
//	com,example)/A/*      →  com,example)/a/*
//
// The non-wildcard part follows surt.Normalize. A key already canonical
// (what Wayside writes) is copied without further work.
func NormalizeKey(dst, key []byte) ([]byte, error) {
	if fastCanonicalKey(key) {
		return append(dst, key...), nil
	}
	key = bytes.TrimSpace(key)
	n := len(key)
	switch {
	case n == 1 && key[0] == '*':
		return append(dst, '*'), nil
	case n >= 2 && key[n-2] == ',' && key[n-1] == '*' && bytes.IndexByte(key, ')') < 0:
		return normalizeHostWildcard(dst, key[:n-2])
	case n >= 3 && key[n-2] == '/' && key[n-1] == '*' && bytes.IndexByte(key, ')') >= 0:
		prefix := key[:n-2]
		if prefix[len(prefix)-1] == ')' && surt.IsCanonicalHost(prefix[:len(prefix)-1], true) || surt.IsCanonical(prefix) {
			return append(dst, key...), nil
		}
		start := len(dst)
		dst, err := normalizePlain(dst, prefix, key)
		if err != nil {
			return dst[:start], err
		}
		if dst[len(dst)-1] == '/' { // the root: "host)/" + "*"
			return append(dst, '*'), nil
		}
		return append(dst, '/', '*'), nil
	}
	return normalizePlain(dst, key, key)
}

// normalizePlain normalises a key without wildcard; orig names it in errors.
func normalizePlain(dst, key, orig []byte) ([]byte, error) {
	if q := bytes.IndexByte(key, '?'); q >= 0 {
		key = key[:q]
	}
	if surt.IsCanonical(key) {
		return append(dst, key...), nil
	}
	s := string(key)
	// Normalising may decode an escaped '?' into a query separator, whose
	// removal may leave a trailing '/': repeat to a fixed point.
	for i := 0; ; i++ {
		n, err := surt.Normalize(s)
		if err != nil {
			return dst, fmt.Errorf("key %q: %w", orig, err)
		}
		if q := strings.IndexByte(n, '?'); q >= 0 {
			n = n[:q]
		}
		if n == s || surt.IsCanonical(n) {
			s = n
			break
		}
		if i == 4 {
			return dst, fmt.Errorf("key %q does not reach a canonical form", orig)
		}
		s = n
	}
	if strings.IndexByte(s, ')') < 0 || !strings.Contains(s, ")/") {
		return dst, fmt.Errorf("key %q is not a SURT key", orig)
	}
	return append(dst, escapeKey(s)...), nil
}

// normalizeHostWildcard normalises the host of "host,*": lower case, no
// empty labels, no leading www labels (www.example.com's sub-tree widens
// to example.com's: a false positive at worst, never a false negative).
// Labels are not read as IPv4 forms: "10,*" stays a prefix of addresses.
func normalizeHostWildcard(dst, host []byte) ([]byte, error) {
	labels := bytes.Split(bytes.ToLower(host), []byte{','})
	kept := labels[:0]
	plain := true
	for _, l := range labels {
		if len(l) == 0 {
			continue
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				plain = false
			}
		}
		kept = append(kept, l)
	}
	for len(kept) > 1 && isWWWLabel(kept[len(kept)-1]) {
		kept = kept[:len(kept)-1]
	}
	if len(kept) == 0 {
		return dst, fmt.Errorf("key %q: empty host", append(host, ",*"...))
	}
	joined := bytes.Join(kept, []byte{','})
	if !plain {
		// IDN and escapes: canonicalise the host as a host root would be.
		s, err := surt.Normalize(string(joined) + ")/")
		if err != nil {
			return dst, fmt.Errorf("key %q: %w", append(host, ",*"...), err)
		}
		joined = []byte(strings.TrimSuffix(s, ")/"))
		if bytes.ContainsAny(joined, ")/") {
			return dst, fmt.Errorf("key %q: bad host", append(host, ",*"...))
		}
	}
	dst = append(dst, joined...)
	return append(dst, ',', '*'), nil
}

func isWWWLabel(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("www")) {
		return false
	}
	for _, c := range l[3:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fastCanonicalKey reports, without allocating, whether key is certainly
// canonical: what Wayside writes and looks up.
func fastCanonicalKey(key []byte) bool {
	n := len(key)
	switch {
	case n == 1 && key[0] == '*':
		return true
	case n >= 2 && key[n-2] == ',' && key[n-1] == '*':
		return plainHost(key[:n-2])
	case n >= 3 && key[n-2] == '/' && key[n-1] == '*':
		p := key[:n-2]
		return p[len(p)-1] == ')' && surt.IsCanonicalHost(p[:len(p)-1], true) || surt.IsCanonical(p)
	}
	return surt.IsCanonical(key)
}

// isCanonicalKey reports whether key is in canonical form (NormalizeKey
// would return it unchanged), cheaply for what Wayside writes.
func isCanonicalKey(key []byte, scratch []byte) (bool, []byte) {
	if fastCanonicalKey(key) {
		return true, scratch
	}
	scratch, err := NormalizeKey(scratch[:0], key)
	return err == nil && bytes.Equal(scratch, key), scratch
}

// plainHost reports whether a wildcard's host is canonical: labels of
// lower-case letters, digits, '-' and '_', the first not www.
func plainHost(h []byte) bool {
	if len(h) == 0 || h[0] == ',' || h[len(h)-1] == ',' {
		return false
	}
	last := bytes.LastIndexByte(h, ',')
	if last >= 0 && isWWWLabel(h[last+1:]) {
		return false
	}
	prevComma := true
	for _, c := range h {
		switch {
		case c == ',':
			if prevComma {
				return false
			}
			prevComma = true
			continue
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_':
		default:
			return false
		}
		prevComma = false
	}
	return true
}

// ParseTarget returns the key of a lookup target: a SURT key in any
// spelling (see NormalizeKey and surt.LooksLikeSURT) or a URI.
func ParseTarget(s string) ([]byte, error) {
	k, err := parseTarget(s)
	if err != nil {
		return nil, fmt.Errorf("mementomap: %w", err)
	}
	return k, nil
}

func parseTarget(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, " \t\r\n") {
		// Neither a URI nor a key (UKVS keys hold no blanks).
		return nil, fmt.Errorf("%s holds a blank: not a URI or a key", excerpt.Quote(s, 80))
	}
	if surt.LooksLikeSURT(s) {
		return NormalizeKey(nil, []byte(s))
	}
	k, err := keyFor(s)
	return []byte(k), err
}

// NormalizeStats describes how a map was brought to canonical form on
// read. The zero value means the map was canonical already.
type NormalizeStats struct {
	Lines             int64 // data lines read
	Respelled         int64 // keys whose spelling changed
	Unsorted          int64 // keys not strictly after the previous one (as read)
	Summed            int64 // lines folded into another of the same canonical key
	ExclusionsDropped int64 // exclusions that would have hidden a positive line of another spelling
	Skipped           int64 // bad lines skipped (skipBad)
}

// Normalized reports whether the input needed normalising.
func (s NormalizeStats) Normalized() bool { return s.Lines > 0 }

func (s NormalizeStats) String() string {
	return fmt.Sprintf("%d lines: %d keys respelled, %d out of order, %d summed into another, %d exclusions dropped",
		s.Lines, s.Respelled, s.Unsorted, s.Summed, s.ExclusionsDropped)
}

// canonicalData reports whether the data lines of a map (after its headers)
// are canonical and strictly increasing, so it can be searched in place.
func canonicalData(data []byte) bool {
	var prev, scratch []byte
	for p := 0; p < len(data); {
		e := bytes.IndexByte(data[p:], '\n')
		if e < 0 {
			e = len(data) - p
		}
		line := data[p : p+e]
		p += e + 1
		k := 0
		for k < len(line) && line[k] > ' ' {
			k++
		}
		key := line[:k]
		if k == 0 || k == len(line) || line[k] != ' ' || prev != nil && bytes.Compare(key, prev) <= 0 {
			return false // blank, tab-separated or key-only lines, or out of order
		}
		var ok bool
		if ok, scratch = isCanonicalKey(key, scratch); !ok {
			return false
		}
		prev = key
	}
	return true
}

// canonicalFile is canonicalData over a file section, streamed.
func canonicalFile(f *os.File, from, to int64) (bool, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, from, to-from), 1<<20)
	var prev, scratch []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return false, nil // a huge line: let the normaliser deal with it
		}
		if len(line) == 0 && err == io.EOF {
			return true, nil
		}
		if err != nil && err != io.EOF {
			return false, err
		}
		k := 0
		for k < len(line) && line[k] > ' ' {
			k++
		}
		key := line[:k]
		if k == 0 || k == len(line) || line[k] != ' ' || prev != nil && bytes.Compare(key, prev) <= 0 {
			return false, nil
		}
		var ok bool
		if ok, scratch = isCanonicalKey(key, scratch); !ok {
			return false, nil
		}
		prev = append(prev[:0], key...)
		if err == io.EOF {
			return true, nil
		}
	}
}

// normalizeOptions tune normalizeFile.
type normalizeOptions struct {
	tempDir string
	skipBad bool
	onSkip  func(*ukvs.Error)
}

// normalizeFile reads a map in any spelling and order from r and returns
// an unlinked temporary file (in tempDir) holding its canonical form: the
// headers as read, every key normalised, lines sorted, lines of the same
// canonical key summed (mementos exactly, URI-Rs as an upper bound since
// spellings may share URIs). When keys were respelled, an exclusion is
// dropped if the map answers a less specific key of it positively: that
// positive line may come from another spelling, which the exclusion would
// now hide (a false negative); dropping it costs precision only. Memory is
// bounded by an external sort.
func normalizeFile(r io.Reader, name string, opts normalizeOptions) (*os.File, NormalizeStats, error) {
	var st NormalizeStats
	rd := ukvs.NewReader(r, name, ukvs.ReaderOptions{AllowUnsorted: true, SkipBad: opts.skipBad, OnSkip: opts.onSkip})
	hs, err := rd.Headers()
	if err != nil {
		return nil, st, err
	}
	sorter := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: 64 << 20, TempDir: opts.tempDir})
	defer sorter.Close()
	var key, line, prev []byte
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, st, err
		}
		st.Lines++
		if prev != nil && bytes.Compare(rec.Key, prev) <= 0 {
			st.Unsorted++
		}
		prev = append(prev[:0], rec.Key...)
		if key, err = NormalizeKey(key[:0], rec.Key); err != nil {
			e := &ukvs.Error{File: name, Line: rd.Line(), Err: err}
			if !opts.skipBad {
				return nil, st, e
			}
			st.Skipped++
			if opts.onSkip != nil {
				opts.onSkip(e)
			}
			continue
		}
		if !bytes.Equal(key, rec.Key) {
			st.Respelled++
		}
		rec.Key = key
		line = ukvs.AppendRecord(line[:0], rec)
		if err := sorter.Add(line); err != nil {
			return nil, st, fmt.Errorf("mementomap: normalise %s: %w", name, err)
		}
	}
	st.Skipped += rd.Skipped()
	tmp, err := os.CreateTemp(opts.tempDir, "wayside-mementomap-norm-*")
	if err != nil {
		return nil, st, fmt.Errorf("mementomap: normalise %s: %w", name, err)
	}
	os.Remove(tmp.Name()) // unlinked: gone when closed, even after a crash
	fail := func(err error) (*os.File, NormalizeStats, error) {
		tmp.Close()
		return nil, st, fmt.Errorf("mementomap: normalise %s: %w", name, err)
	}
	uw := ukvs.NewWriter(tmp)
	for _, h := range hs {
		if err := uw.WriteHeader(h); err != nil {
			return fail(err)
		}
	}
	var cur ukvs.Record
	var jsons [][]byte
	have := false
	flush := func() error {
		if !have {
			return nil
		}
		cur.JSON = mergeJSON(jsons)
		return uw.Write(cur)
	}
	exclusions := 0
	lines := &lineSplitter{fn: func(l []byte) error {
		rec, err := ukvs.ParseRecord(l)
		if err != nil {
			return err
		}
		if have && bytes.Equal(rec.Key, cur.Key) {
			cur.Freq = sumFreq(cur.Freq, rec.Freq)
			if rec.JSON != nil {
				jsons = append(jsons, bytes.Clone(rec.JSON))
			}
			st.Summed++
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if cur.Freq.IsExclusion() {
			exclusions++
		}
		cur = rec.Clone()
		jsons = jsons[:0]
		if rec.JSON != nil {
			jsons = append(jsons, cur.JSON)
		}
		have = true
		return nil
	}}
	if _, err := sorter.WriteTo(lines); err != nil {
		return fail(err)
	}
	if err := lines.flush(); err != nil {
		return fail(err)
	}
	if have && cur.Freq.IsExclusion() {
		exclusions++
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	if err := uw.Flush(); err != nil {
		return fail(err)
	}
	if st.Respelled == 0 || exclusions == 0 {
		return tmp, st, nil
	}
	out, dropped, err := dropHidingExclusions(tmp, name, opts.tempDir)
	tmp.Close()
	st.ExclusionsDropped = dropped
	if err != nil {
		return nil, st, err
	}
	return out, st, nil
}

// sumFreq sums the frequencies of one key from two sources (two spellings,
// two archives): mementos are distinct captures, so M adds exactly; the
// sources may share URI-Rs, so R adds as an upper bound.
func sumFreq(a, b ukvs.Freq) ukvs.Freq {
	return ukvs.Freq{M: a.M.Add(b.M), R: a.R.AddOverlapping(b.R)}
}

// dropHidingExclusions copies the canonical map in f to a new unlinked
// temporary file without the exclusions whose less specific keys the map
// answers positively.
func dropHidingExclusions(f *os.File, name, tempDir string) (*os.File, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("mementomap: normalise %s: %w", name, err)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, 0, fmt.Errorf("mementomap: normalise %s: %w", name, err)
	}
	m := &Map{data: data, name: name}
	if err := m.index(); err != nil {
		return nil, 0, err
	}
	out, err := os.CreateTemp(tempDir, "wayside-mementomap-norm-*")
	if err != nil {
		return nil, 0, fmt.Errorf("mementomap: normalise %s: %w", name, err)
	}
	os.Remove(out.Name())
	bw := bufio.NewWriterSize(out, 1<<16)
	bw.Write(data[:m.start])
	var dropped int64
	var s Scratch
	for p := m.start; p < len(data); {
		key, end := m.lineAt(p)
		line := data[p:min(end+1, len(data))]
		p = end + 1
		if rec, err := ukvs.ParseRecord(bytes.TrimSuffix(line, []byte{'\n'})); err == nil && rec.Freq.IsExclusion() {
			hides, err := m.ancestorPositive(key, &s)
			if err != nil {
				out.Close()
				return nil, 0, err
			}
			if hides {
				dropped++
				continue
			}
		}
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return nil, 0, fmt.Errorf("mementomap: normalise %s: %w", name, err)
	}
	return out, dropped, nil
}

// ancestorPositive reports whether the most specific key of the map less
// specific than key (key excluded) answers positively.
func (m *Map) ancestorPositive(key []byte, s *Scratch) (bool, error) {
	var err error
	s.cands, s.buf, err = Candidates(key, s.buf, s.cands[:0])
	if err != nil {
		return false, err
	}
	for _, c := range s.cands {
		if bytes.Equal(c, key) {
			continue
		}
		line, ok, _ := m.find(c)
		if !ok {
			continue
		}
		rec, err := ukvs.ParseRecord(line)
		if err != nil {
			return false, err
		}
		return !rec.Freq.IsExclusion(), nil
	}
	return false, nil
}
