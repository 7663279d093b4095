package mementomap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
	"github.com/wayside-archive/wayside/surt"
	"github.com/wayside-archive/wayside/warcio"
)

// Format is the kind of an input file of Generate.
type Format string

// Input formats.
const (
	FormatAuto    Format = ""
	FormatWARC    Format = "warc"
	FormatCDXJ    Format = "cdxj"
	FormatCDX     Format = "cdx"
	FormatURIList Format = "uris"
	// FormatMap is a MementoMap (.ukvs): not a capture source; stats read
	// it with MapHoldings.
	FormatMap Format = "map"
)

// DetectFormat tells a file's format from its content: a WARC or ARC
// file (gzip-compressed or not) by its first record, a MementoMap by its
// "!" header lines or "SURT-KEY FREQUENCY" lines, CDX by its " CDX"
// header or its fields, CDXJ by a timestamp followed by a JSON block, a
// URI list by a URL on its first line. Only when the content says none of
// these (binary data, a file damaged from its first byte, a file that
// cannot be read here, such as a pipe) does the name decide, and reading
// the file as what it is named then reports what is wrong with it.
func DetectFormat(path string) Format {
	head, ok := readHead(path)
	if !ok {
		return formatByName(path)
	}
	if f := formatOf(head); f != FormatAuto {
		return f
	}
	// Binary data, or text of no known kind: the name says what it was
	// meant to be, and reading it as that reports what is wrong.
	return formatByName(path)
}

// readHead returns the first bytes of a file, decompressed when it is
// gzip-compressed.
func readHead(path string) ([]byte, bool) {
	if path == "-" {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	br := bufio.NewReader(f)
	var r io.Reader = br
	if b, _ := br.Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, true
		}
		r = zr
	}
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(r, head)
	return head[:n], true
}

func formatOf(head []byte) Format {
	if warcio.StartsRecord(bytes.TrimLeft(head, "\r\n")) {
		return FormatWARC
	}
	line := head
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, "\r")
	switch {
	case bytes.HasPrefix(line, []byte("!")):
		return FormatMap
	case bytes.HasPrefix(line, []byte(" CDX ")):
		return FormatCDX
	}
	f := bytes.Fields(line)
	if len(f) == 2 && bytes.IndexByte(f[0], ')') > 0 && isDigits(f[1]) {
		return FormatMap // "SURT-KEY FREQUENCY" lines
	}
	if len(f) >= 3 && isTimestamp(f[1]) {
		if f[2][0] == '{' {
			return FormatCDXJ
		}
		if len(f) >= 7 {
			return FormatCDX
		}
	}
	if len(f) == 1 && utf8.Valid(f[0]) && isURL(f[0]) {
		return FormatURIList
	}
	return FormatAuto
}

// isURL reports whether b starts with a URI scheme and "://" (a line of
// a URI list).
func isURL(b []byte) bool {
	i := bytes.Index(b, []byte("://"))
	if i <= 0 {
		return false
	}
	for j, c := range b[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func isTimestamp(b []byte) bool {
	return len(b) >= 4 && len(b) <= 17 && isDigits(b)
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// formatByName guesses a format from a file name.
func formatByName(path string) Format {
	p := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(path), ".gz"), ".open")
	switch {
	case strings.HasSuffix(p, ".warc") || strings.HasSuffix(p, ".arc"):
		return FormatWARC
	case strings.HasSuffix(p, ".cdxj"):
		return FormatCDXJ
	case strings.HasSuffix(p, ".cdx"):
		return FormatCDX
	case strings.HasSuffix(p, ".ukvs"):
		return FormatMap
	}
	return FormatURIList
}

// GenerateOptions tunes Generate.
type GenerateOptions struct {
	// Statuses keeps only captures with these HTTP statuses (empty: all).
	// Captures whose status is unknown (URI lists, CDX "-") are kept.
	Statuses []int
	// MIMEs keeps only captures whose media type starts with one of these
	// ("text/html"; empty: all). Unknown media types are kept.
	MIMEs []string
	// SkipBad skips malformed lines, records and invalid URIs (counted,
	// each passed to OnSkip) instead of failing.
	SkipBad bool
	OnSkip  func(error)
	// MemLimit bounds the bytes of keys held in memory before spilling a
	// sorted run to TempDir (default 256 MiB).
	MemLimit int64
	TempDir  string
	// ID is the archive's URI (the !id header); Name its name (!meta).
	ID, Name string
	// Now, when set, is written as the !meta updated_at.
	Now time.Time
	// Progress, when set, is called every 1<<20 captures read.
	Progress func(captures int64)
}

// GenerateStats counts what Generate did with its input.
type GenerateStats struct {
	Captures       int64 // capture records or lines read
	Kept           int64 // captures counted in the map
	FilteredStatus int64
	FilteredMIME   int64
	NotHTTP        int64 // URIs that are not http(s) (dns:, filedesc:, ...) and WARC records that are not captures
	Bad            int64 // malformed lines/records and invalid URIs skipped (SkipBad)
	Keys           int64 // distinct keys written
}

// Generator accumulates captures and writes the full (uncompacted) map.
type Generator struct {
	opts   GenerateOptions
	detail bool         // sort lines for holdings statistics (see sortLine)
	sort   *cdxj.Sorter // the project's external sort (runs spilled to TempDir)
	line   []byte
	stats  GenerateStats
}

// NewGenerator returns a generator. Close it to remove spill files.
func NewGenerator(opts GenerateOptions) *Generator {
	return &Generator{opts: opts, sort: cdxj.NewSorter(cdxj.SortOptions{MaxMemory: opts.MemLimit, TempDir: opts.TempDir})}
}

// Stats returns the counts so far.
func (g *Generator) Stats() GenerateStats { return g.stats }

// Close removes spill files.
func (g *Generator) Close() error { return g.sort.Close() }

// sortLine queues "key full-SURT" for sorting; for holdings statistics
// (detail), "treekey full-SURT year class" (see treeKey and statusClass).
func (g *Generator) sortLine(key, full string, c *capture) error {
	if g.detail {
		g.line = appendTreeKey(g.line[:0], key)
		g.line = append(g.line, ' ')
		g.line = append(g.line, escapeKey(full)...)
		g.line = append(g.line, ' ')
		g.line = append(g.line, yearOf(c.ts)...)
		g.line = append(g.line, ' ', statusClass(c.status, c.revisit))
	} else {
		g.line = append(append(append(g.line[:0], key...), ' '), escapeKey(full)...)
	}
	if err := g.sort.Add(g.line); err != nil {
		return fmt.Errorf("mementomap: generate: %w", err)
	}
	return nil
}

// capture is what the generator reads of one capture.
type capture struct {
	uri     string // original URI, or "" when only the key is known
	key     string // SURT key (when uri is "")
	ts      string // 14-digit timestamp, "" when unknown
	mime    string
	status  int
	revisit bool
}

// HxPxKey returns the HxPx key of a SURT written by Canonicalize (or read
// from a CDX index): the SURT without its query, normalised (NormalizeKey),
// and whether it is the key of an http(s) URI (host, ')', path; a
// "host)" key without path is a dns: record there). A SURT that cannot be
// normalised is not a key either.
func HxPxKey(s string) (string, bool) {
	k, ok, err := hxpxKey(s)
	if err != nil {
		return s, false
	}
	return k, ok
}

func hxpxKey(s string) (string, bool, error) {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	if h := strings.Index(s, ")/"); h <= 0 {
		return s, false, nil
	}
	if surt.IsCanonical(s) {
		return s, true, nil
	}
	k, err := NormalizeKey(nil, []byte(s))
	if err != nil {
		return s, false, err
	}
	return string(k), true, nil
}

// escapeKey percent-encodes bytes that cannot appear in a UKVS key.
func escapeKey(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// KeyFor returns the HxPx key of a URI (SURT, query stripped, normalised).
func KeyFor(uri string) (string, error) {
	k, err := keyFor(uri)
	if err != nil {
		return "", fmt.Errorf("mementomap: %w", err)
	}
	return k, nil
}

func keyFor(uri string) (string, error) {
	s, err := surt.Canonicalize(uri)
	if err != nil {
		return "", err
	}
	k, ok, err := hxpxKey(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", uri, err)
	}
	if !ok {
		return "", fmt.Errorf("%q is not an http(s) URI (SURT %q)", uri, s)
	}
	return k, nil
}

func (g *Generator) keep(status int, mime string) bool {
	if len(g.opts.Statuses) > 0 && status != 0 {
		ok := false
		for _, s := range g.opts.Statuses {
			ok = ok || s == status
		}
		if !ok {
			g.stats.FilteredStatus++
			return false
		}
	}
	if len(g.opts.MIMEs) > 0 && mime != "" {
		ok := false
		for _, m := range g.opts.MIMEs {
			ok = ok || strings.HasPrefix(strings.ToLower(mime), m)
		}
		if !ok {
			g.stats.FilteredMIME++
			return false
		}
	}
	return true
}

// Add counts one capture of uri with the given HTTP status (0: unknown) and
// media type ("": unknown). A URI that is not http(s) is counted in
// NotHTTP; an invalid one is an error.
func (g *Generator) Add(uri string, status int, mime string) error {
	return g.add(&capture{uri: uri, status: status, mime: mime})
}

func (g *Generator) add(c *capture) error {
	g.stats.Captures++
	if g.opts.Progress != nil && g.stats.Captures&(1<<20-1) == 0 {
		g.opts.Progress(g.stats.Captures)
	}
	status, mime := c.status, c.mime
	if c.revisit {
		// A revisit is a memento of its original, whose type is not in
		// the line and whose status may be a 304: filter on neither.
		status, mime = 0, ""
	}
	if !g.keep(status, mime) {
		return nil
	}
	s := c.key
	if c.uri != "" {
		var err error
		if s, err = surt.Canonicalize(c.uri); err != nil {
			return err
		}
	}
	key, ok, err := hxpxKey(s)
	if err != nil {
		return err
	}
	if !ok {
		g.stats.NotHTTP++
		return nil
	}
	g.stats.Kept++
	// The key is final before sorting (the reference implementation
	// stripped queries after sorting and broke the order). The full SURT
	// identifies the URI-R.
	return g.sortLine(key, s, c)
}

func (g *Generator) bad(err error) error {
	if !g.opts.SkipBad {
		return err
	}
	g.stats.Bad++
	if g.opts.OnSkip != nil {
		g.opts.OnSkip(err)
	}
	return nil
}

// AddFile reads captures from a WARC, CDXJ, CDX or URI-list file (format
// FormatAuto detects it from the name; gzip is detected from the content).
func (g *Generator) AddFile(ctx context.Context, path string, format Format) error {
	if format == FormatAuto {
		format = DetectFormat(path)
	}
	switch format {
	case FormatWARC:
		return g.addWARC(ctx, path)
	case FormatMap:
		return fmt.Errorf("mementomap: generate: %s is a MementoMap, not a list of captures (merge maps with 'wayside mementomap merge')", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mementomap: generate: %w", err)
	}
	defer f.Close()
	return g.AddLines(ctx, f, path, format)
}

// AddLines reads a CDXJ, CDX or URI-list stream (gzip detected).
func (g *Generator) AddLines(ctx context.Context, r io.Reader, name string, format Format) error {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("mementomap: generate: %s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	var layout string
	var lineNo int64
	for {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("mementomap: generate: %s: %w", name, err)
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		lineNo++
		if lineNo&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var perr error
		switch format {
		case FormatURIList:
			if strings.HasPrefix(line, "#") {
				continue
			}
			perr = g.Add(strings.TrimSpace(line), 0, "")
		case FormatCDXJ:
			if strings.HasPrefix(line, "!") {
				continue // UKVS/CDXJ header lines
			}
			perr = g.addCDXJ(line)
		case FormatCDX:
			if strings.HasPrefix(line, " CDX ") || strings.HasPrefix(line, "CDX ") {
				layout = strings.Join(strings.Fields(line)[1:], " ")
				continue
			}
			perr = g.addCDX(line, layout)
		default:
			return fmt.Errorf("mementomap: generate: %s: unknown format %q", name, format)
		}
		if perr != nil {
			if err := g.bad(fmt.Errorf("mementomap: generate: %s:%d: %w", name, lineNo, perr)); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

func (g *Generator) addCDXJ(line string) error {
	l, err := cdxj.Parse(line)
	if err != nil {
		return err
	}
	return g.addLine(l)
}

// addLine counts an index line: its original URL re-canonicalized (the
// index may come from another canonicalizer), or its key when it has none.
func (g *Generator) addLine(l cdxj.Line) error {
	c := capture{uri: l.URL, key: l.Key, ts: l.Timestamp, mime: l.MIME, status: l.Status, revisit: l.MIME == cdxj.RevisitMIME}
	return g.add(&c)
}

// addCDX counts one classic CDX line (layout: the field letters of the
// " CDX" header line, "" to guess from the field count).
func (g *Generator) addCDX(line, layout string) error {
	l, err := cdxj.ParseCDX(line, layout)
	if err != nil {
		return err
	}
	return g.addLine(l)
}

func (g *Generator) addWARC(ctx context.Context, path string) error {
	r, err := warcio.Open(path, warcio.Options{SkipPayloadDigest: true})
	if err != nil {
		return err // warcio's errors name the file (and offset): no second prefix
	}
	defer r.Close()
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, warcio.ErrTruncated) {
				if err := g.bad(err); err != nil {
					return err
				}
				return nil
			}
			if err := g.bad(err); err != nil {
				return err
			}
			continue
		}
		c := rec.Capture("")
		if !c.IsCapture() || c.URI == "" {
			continue
		}
		l := cdxj.FromCapture(c)
		if err := g.addLine(l); err != nil {
			if err := g.bad(fmt.Errorf("mementomap: generate: %s offset %d: %w", path, rec.Offset, err)); err != nil {
				return err
			}
		}
	}
}

// Headers returns the header lines of a generated map.
func (g *Generator) Headers() ([]ukvs.Header, error) {
	hs := []ukvs.Header{
		{Name: "context", Value: []byte(`["http://oduwsdl.github.io/contexts/ukvs"]`)},
	}
	if g.opts.ID != "" {
		h, err := ukvs.MetaHeader(map[string]string{"uri": g.opts.ID})
		if err != nil {
			return nil, err
		}
		h.Name = "id"
		hs = append(hs, h)
	}
	hs = append(hs, ukvs.Header{Name: "fields", Value: []byte(`{"keys":["surt"],"values":["frequency"]}`)})
	meta := map[string]any{"type": "MementoMap"}
	if g.opts.Name != "" {
		meta["name"] = g.opts.Name
	}
	if !g.opts.Now.IsZero() {
		meta["updated_at"] = g.opts.Now.UTC().Format(time.RFC3339)
	}
	m, err := ukvs.MetaHeader(meta)
	if err != nil {
		return nil, err
	}
	filters := map[string]any{}
	if len(g.opts.Statuses) > 0 {
		filters["status"] = g.opts.Statuses
	}
	if len(g.opts.MIMEs) > 0 {
		filters["mime"] = g.opts.MIMEs
	}
	hs = append(hs, m)
	if len(filters) > 0 {
		f, err := ukvs.MetaHeader(map[string]any{"filters": filters})
		if err != nil {
			return nil, err
		}
		hs = append(hs, f)
	}
	return hs, nil
}

// WriteTo writes the full map: headers, then one line per HxPx key with its
// memento count and distinct URI-R count, sorted by byte value.
func (g *Generator) WriteTo(w io.Writer) (int64, error) {
	hs, err := g.Headers()
	if err != nil {
		return 0, err
	}
	uw := ukvs.NewWriter(w)
	for _, h := range hs {
		if err := uw.WriteHeader(h); err != nil {
			return 0, err
		}
	}
	var curKey, prevRid []byte
	var m, r int64
	flush := func() error {
		if curKey == nil {
			return nil
		}
		g.stats.Keys++
		return uw.Write(ukvs.Record{Key: curKey, Freq: ukvs.Freq{M: ukvs.Exactly(m), R: ukvs.Exactly(r)}})
	}
	lines := &lineSplitter{fn: func(line []byte) error {
		sp := bytes.IndexByte(line, ' ')
		key, rid := line[:sp], line[sp+1:]
		if curKey == nil || !bytes.Equal(key, curKey) {
			if err := flush(); err != nil {
				return err
			}
			curKey = append(curKey[:0], key...)
			prevRid = append(prevRid[:0], rid...)
			m, r = 1, 1
			return nil
		}
		m++
		if !bytes.Equal(rid, prevRid) {
			r++
			prevRid = append(prevRid[:0], rid...)
		}
		return nil
	}}
	_, err = g.sort.WriteTo(lines)
	if err == nil {
		err = lines.flush()
	}
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = uw.Flush()
	}
	if err != nil {
		return 0, fmt.Errorf("mementomap: generate: %w", err)
	}
	return uw.Records(), nil
}

// lineSplitter calls fn with each complete line written to it.
type lineSplitter struct {
	fn      func(line []byte) error
	partial []byte
}

func (l *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p...)
			break
		}
		line := p[:i]
		if len(l.partial) > 0 {
			l.partial = append(l.partial, line...)
			line = l.partial
		}
		if err := l.fn(line); err != nil {
			return 0, err
		}
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush passes a last line that had no newline.
func (l *lineSplitter) flush() error {
	if len(l.partial) == 0 {
		return nil
	}
	line := l.partial
	l.partial = nil
	return l.fn(line)
}
