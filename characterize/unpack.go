package characterize

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/wayside-archive/wayside/warcio"
)

// Limits bound the memory and work spent on one record's payload. A limit
// that is hit becomes a note on the object concerned, never an error.
type Limits struct {
	// MaxDepth is how many container levels are opened below the record
	// payload (default 3: a zip in a tar in a gzip).
	MaxDepth int
	// MaxObject is the most bytes of one object held in memory and
	// identified (default 32 MiB); a larger object is identified from its
	// first MaxObject bytes and not unpacked.
	MaxObject int64
	// MaxExpanded is the most bytes decompressed for one record, all
	// levels and the Content-Encoding together (default 256 MiB).
	MaxExpanded int64
	// MaxObjects is the most nested objects identified per record
	// (default 10000).
	MaxObjects int
	// MaxRatio is the largest decompressed:compressed ratio accepted for a
	// member or a content-coding (default 250): beyond it the data is a
	// decompression bomb, not a document.
	MaxRatio float64
	// ScanWindow is how many bytes at the start and at the end of an
	// object siegfried scans (default 64 KiB; negative: the whole object),
	// like DROID's "maximum bytes to scan". Zip and OLE2 objects are
	// always scanned whole (container signatures).
	ScanWindow int
}

// DefaultLimits are the limits used when a Limits field is zero.
var DefaultLimits = Limits{MaxDepth: 3, MaxObject: 32 << 20, MaxExpanded: 256 << 20, MaxObjects: 10000, MaxRatio: 250, ScanWindow: 64 << 10}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxObject > 0 {
		d.MaxObject = l.MaxObject
	}
	if l.MaxExpanded > 0 {
		d.MaxExpanded = l.MaxExpanded
	}
	if l.MaxObjects > 0 {
		d.MaxObjects = l.MaxObjects
	}
	if l.MaxRatio > 0 {
		d.MaxRatio = l.MaxRatio
	}
	if l.ScanWindow != 0 {
		d.ScanWindow = l.ScanWindow
	}
	return d
}

// Object is one identified object: a record's payload, or an object found
// inside it (a zip member, the content of a gzip file, a record of a WARC
// inside the payload).
type Object struct {
	// Path names a nested object from the payload down, one element per
	// container level: member names, or target URIs for records of an
	// embedded WARC. It is empty for the payload itself.
	Path []string `json:"path,omitempty"`
	// Size is the object's length in bytes (after removing any
	// Content-Encoding).
	Size int64 `json:"size"`
	Format
	// Note says what got in the way: a truncated or oversized payload, a
	// corrupt member, a limit reached ("" when nothing did).
	Note string `json:"note,omitempty"`
}

func (o *Object) note(format string, a ...any) {
	n := fmt.Sprintf(format, a...)
	if o.Note == "" {
		o.Note = n
	} else {
		o.Note += "; " + n
	}
}

// Payload is what Identify characterizes: a record's payload as stored (the
// HTTP entity with its Content-Encoding, or a resource record's block).
type Payload struct {
	// Bytes holds the payload, or its first bytes when it is longer than
	// the limit it was read with.
	Bytes []byte
	// Length is the payload's full length (len(Bytes) when 0).
	Length int64
	// Name is the URL (its extension is a hint); MIME the declared media
	// type (HTTP Content-Type); Encoding the HTTP Content-Encoding.
	Name, MIME, Encoding string
	// Truncated is the record's WARC-Truncated reason ("" when complete).
	Truncated string
}

// Result is the characterization of one payload.
type Result struct {
	// Object is the payload itself (its Path is empty).
	Object
	// Encoding is the Content-Encoding that was removed before
	// identification ("" when none).
	Encoding string `json:"encoding,omitempty"`
	// Nested lists the objects found inside the payload, depth first.
	Nested []Object `json:"nested,omitempty"`
}

// Identifier characterizes payloads: it removes the Content-Encoding,
// identifies the payload and, recursively, the members of zip, gzip and tar
// containers and the records of WARC files found inside it, within Limits.
// It is safe for concurrent use.
type Identifier struct {
	e     *Engine
	lim   Limits
	cache *resultCache
}

// NewIdentifier returns an Identifier using e (shared: load it once with
// NewEngine) and lim (zero fields take DefaultLimits).
func NewIdentifier(e *Engine, lim Limits) *Identifier {
	return &Identifier{e: e, lim: lim.withDefaults(), cache: &resultCache{size: 20000}}
}

// Engine returns the identification engine.
func (id *Identifier) Engine() *Engine { return id.e }

// Limits returns the limits in force.
func (id *Identifier) Limits() Limits { return id.lim }

// Identify characterizes one payload. It never fails: what could not be
// done is noted on the objects concerned.
func (id *Identifier) Identify(p Payload) Result {
	w := walk{id: id}
	var res Result
	res.Object, res.Encoding = w.payload(p, nil, 0)
	res.Nested = w.nested
	return res
}

// Decode removes the Content-Encoding encoding (a header value; "" or
// "identity" for none) from b within the Identifier's limits, as Identify
// does before identification: migration converts the decoded entity.
func (id *Identifier) Decode(b []byte, encoding string) ([]byte, error) {
	codings := contentCodings(encoding)
	if len(codings) == 0 {
		return b, nil
	}
	w := walk{id: id}
	out, _, err := w.decode(b, codings)
	if err != nil {
		return nil, fmt.Errorf("characterize: Content-Encoding %s: %w", encoding, err)
	}
	return out, nil
}

// walk is the state of one payload's characterization: its budget and the
// nested objects found so far.
type walk struct {
	id       *Identifier
	expanded int64
	objects  int
	nested   []Object
	capped   bool
}

// payload characterizes a record payload: the top one (depth 0), or a
// record of an embedded WARC at path at.
func (w *walk) payload(p Payload, at []string, depth int) (Object, string) {
	lim := w.id.lim
	length := max(p.Length, int64(len(p.Bytes)))
	o := Object{Path: at, Size: length}
	if p.Truncated != "" {
		o.note("payload truncated (WARC-Truncated: %s)", p.Truncated)
	}
	data := p.Bytes
	if int64(len(data)) > lim.MaxObject {
		data = data[:lim.MaxObject]
	}
	whole := int64(len(data)) == length
	if !whole {
		o.note("payload of %d bytes: identified from its first %d", length, len(data))
	}
	enc := ""
	if codings := contentCodings(p.Encoding); len(codings) > 0 {
		decoded, applied, err := w.decode(data, codings)
		switch {
		case err != nil && len(decoded) == 0:
			o.note("Content-Encoding %s not removed: %v; identified as stored", p.Encoding, err)
		case err != nil:
			o.note("Content-Encoding %s: %v; identified from the %d bytes decoded", p.Encoding, err, len(decoded))
			fallthrough
		default:
			data, enc = decoded, applied
			o.Size = int64(len(decoded))
		}
	}
	o.Format = w.id.e.identify(data, p.Name, p.MIME, w.id.lim.ScanWindow)
	if len(data) == 0 {
		o.note("empty payload")
	}
	if whole {
		w.open(&o, data, p.Name, depth)
	}
	return o, enc
}

// contentCodings splits a Content-Encoding value into the codings to
// remove, last applied first ("identity" dropped).
func contentCodings(v string) []string {
	var out []string
	for _, c := range strings.Split(v, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && c != "identity" {
			out = append([]string{c}, out...)
		}
	}
	return out
}

// decode removes the codings (last applied first) within the limits. It
// returns what it decoded and the codings removed, comma-separated in
// header order.
func (w *walk) decode(b []byte, codings []string) ([]byte, string, error) {
	var done []string
	for _, c := range codings {
		var r io.Reader
		var err error
		src := bytes.NewReader(b)
		switch c {
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(src)
		case "deflate":
			// RFC 9110 deflate is zlib-wrapped; some servers send raw
			// deflate.
			if r, err = zlib.NewReader(src); err != nil {
				r, err = flate.NewReader(bytes.NewReader(b)), nil
			}
		case "br":
			r = brotli.NewReader(src)
		case "zstd":
			var d *zstd.Decoder
			if d, err = zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(w.id.lim.MaxObject))); err == nil {
				defer d.Close()
				r = d
			}
		default:
			return nil, "", fmt.Errorf("unsupported coding %q", c)
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", c, err)
		}
		out, lerr := w.expand(r, int64(len(b)), -1)
		if lerr != nil {
			if len(done) == 0 {
				return out, c, fmt.Errorf("%s: %w", c, lerr)
			}
			return out, strings.Join(append([]string{c}, done...), ", "), fmt.Errorf("%s: %w", c, lerr)
		}
		b = out
		done = append([]string{c}, done...)
	}
	return b, strings.Join(done, ", "), nil
}

// Reasons expand stops reading.
var (
	errRatio  = errors.New("decompression bomb")
	errBudget = errors.New("expansion budget exhausted")
	errTooBig = errors.New("object too large")
)

// expand reads a decompressing reader of compressed bytes within the
// object, ratio and per-record limits; declared is the size the container
// announces (-1 when unknown). The bytes read so far are returned with any
// error.
func (w *walk) expand(r io.Reader, compressed, declared int64) ([]byte, error) {
	lim := w.id.lim
	limit, why := lim.MaxObject, errTooBig
	if byRatio := int64(float64(max(compressed, 1)) * lim.MaxRatio); byRatio < limit {
		limit, why = byRatio, errRatio
	}
	if left := lim.MaxExpanded - w.expanded; left < limit {
		limit, why = max(left, 0), errBudget
	}
	var buf bytes.Buffer
	if declared >= 0 {
		buf.Grow(int(min(declared, limit) + bytes.MinRead))
	}
	n, err := buf.ReadFrom(io.LimitReader(r, limit))
	w.expanded += n
	if err != nil {
		return buf.Bytes(), err
	}
	if n == limit {
		var one [1]byte
		if k, _ := io.ReadFull(r, one[:]); k > 0 {
			switch why {
			case errRatio:
				return buf.Bytes(), fmt.Errorf("%w: expands beyond %.0f times its compressed size of %d bytes", errRatio, lim.MaxRatio, compressed)
			case errBudget:
				return buf.Bytes(), fmt.Errorf("%w: more than %d bytes decompressed for this record", errBudget, lim.MaxExpanded)
			}
			return buf.Bytes(), fmt.Errorf("%w: more than %d bytes", errTooBig, lim.MaxObject)
		}
	}
	return buf.Bytes(), nil
}

// containerKind maps the PUIDs of the containers Wayside opens to their
// kind. Formats built on zip (OOXML, ODF, EPUB, JAR) are identified by
// siegfried's container signatures and not opened: their parts are not
// separate objects.
func containerKind(puid string) string {
	switch puid {
	case "x-fmt/263":
		return "zip"
	case "x-fmt/266":
		return "gzip"
	case "x-fmt/265":
		return "tar"
	case "fmt/289", "fmt/1281", "fmt/1355":
		return "warc"
	case "x-fmt/219", "fmt/410":
		return "arc"
	}
	return ""
}

// open unpacks o (whose bytes are data) when it is a container, below the
// depth limit.
func (w *walk) open(o *Object, data []byte, name string, depth int) {
	kind := containerKind(o.PUID)
	if kind == "" {
		return
	}
	if depth >= w.id.lim.MaxDepth {
		o.note("%s not opened: depth limit %d reached", kind, w.id.lim.MaxDepth)
		return
	}
	switch kind {
	case "zip":
		w.openZip(o, data, depth)
	case "gzip":
		w.openGzip(o, data, name, depth)
	case "tar":
		w.openTar(o, data, depth)
	case "warc", "arc":
		w.openWARC(o, data, depth)
	}
}

// child records a nested object (identified from data) and opens it in
// turn. It reports false once the per-record object limit is reached.
func (w *walk) child(parent *Object, name string, data []byte, size int64, problem error, depth int) bool {
	if w.objects >= w.id.lim.MaxObjects {
		if !w.capped {
			w.capped = true
			parent.note("only the first %d nested objects identified (limit)", w.id.lim.MaxObjects)
		}
		return false
	}
	w.objects++
	c := Object{Path: append(append([]string(nil), parent.Path...), name), Size: size}
	if problem != nil {
		c.note("%v", problem)
	}
	switch {
	case len(data) > 0:
		c.Format = w.id.e.identify(data, name, "", w.id.lim.ScanWindow)
	case size == 0 && problem == nil:
		c.note("empty member")
	default:
		// Nothing could be read: the format is not known.
		c.Format = Format{PUID: Unknown, Warning: "member not read"}
	}
	i := len(w.nested)
	w.nested = append(w.nested, c)
	if problem == nil && int64(len(data)) == size {
		w.open(&c, data, name, depth+1)
		w.nested[i] = c
	}
	return true
}

func (w *walk) openZip(o *Object, data []byte, depth int) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		o.note("corrupt zip: %v", err)
		return
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		size := int64(f.UncompressedSize64)
		if size < 0 {
			size = 0
		}
		var b []byte
		var problem error
		if f.CompressedSize64 > 0 && float64(f.UncompressedSize64) > w.id.lim.MaxRatio*float64(f.CompressedSize64) {
			problem = fmt.Errorf("member not decompressed: %w: declares %d bytes from %d (more than %.0f:1)", errRatio, f.UncompressedSize64, f.CompressedSize64, w.id.lim.MaxRatio)
		} else if rc, err := f.Open(); err != nil {
			problem = fmt.Errorf("corrupt member: %v", err)
		} else {
			b, err = w.expand(rc, int64(f.CompressedSize64), size)
			rc.Close()
			if err != nil {
				problem = fmt.Errorf("corrupt member: %w", err)
				if errors.Is(err, errRatio) || errors.Is(err, errBudget) || errors.Is(err, errTooBig) {
					problem = err
				}
			}
		}
		if !w.child(o, f.Name, b, size, problem, depth) {
			return
		}
	}
}

func (w *walk) openGzip(o *Object, data []byte, name string, depth int) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		o.note("corrupt gzip: %v", err)
		return
	}
	member := zr.Name
	if member == "" {
		member = gunzippedName(name)
	}
	b, err := w.expand(zr, int64(len(data)), -1)
	var problem error
	if err != nil {
		problem = fmt.Errorf("corrupt gzip data: %w", err)
		if errors.Is(err, errRatio) || errors.Is(err, errBudget) || errors.Is(err, errTooBig) {
			problem = err
		}
	}
	size := int64(len(b))
	if problem != nil {
		size = -1 // unknown: not all read
	}
	w.childSized(o, member, b, size, problem, depth)
}

// childSized is child for containers that do not declare member sizes:
// size -1 means "at least len(data)".
func (w *walk) childSized(parent *Object, name string, data []byte, size int64, problem error, depth int) bool {
	if size < 0 {
		size = int64(len(data))
		if problem == nil {
			problem = errors.New("incomplete")
		}
	}
	return w.child(parent, name, data, size, problem, depth)
}

// gunzippedName is the name of a gzip file's content: "a.tar.gz" → "a.tar",
// "a.tgz" → "a.tar"; for URLs, the last path segment.
func gunzippedName(name string) string {
	if i := strings.IndexAny(name, "?#"); i >= 0 {
		name = name[:i]
	}
	base := path.Base(name)
	switch {
	case strings.HasSuffix(strings.ToLower(base), ".tgz"):
		return base[:len(base)-4] + ".tar"
	case strings.HasSuffix(strings.ToLower(base), ".gz"):
		return base[:len(base)-3]
	case base == "/" || base == ".":
		return "content"
	}
	return base
}

func (w *walk) openTar(o *Object, data []byte, depth int) {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			o.note("corrupt tar: %v", err)
			return
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			continue
		}
		lim := min(h.Size, w.id.lim.MaxObject, max(w.id.lim.MaxExpanded-w.expanded, 0))
		var buf bytes.Buffer
		buf.Grow(int(lim))
		n, err := buf.ReadFrom(io.LimitReader(tr, lim))
		w.expanded += n
		var problem error
		switch {
		case err != nil:
			problem = fmt.Errorf("corrupt member: %v", err)
		case n < h.Size && lim == w.id.lim.MaxObject:
			problem = fmt.Errorf("member of %d bytes: identified from its first %d", h.Size, n)
		case n < h.Size:
			problem = fmt.Errorf("%w: member of %d bytes identified from its first %d", errBudget, h.Size, n)
		}
		if !w.child(o, h.Name, buf.Bytes(), h.Size, problem, depth) {
			return
		}
	}
}

// openWARC characterizes the payload of every response, resource and
// conversion record of a WARC (or ARC) file found inside a payload, read
// with warcio (a gzip-compressed file was already decompressed as a gzip
// container, within the limits).
func (w *walk) openWARC(o *Object, data []byte, depth int) {
	r := warcio.NewReader(bytes.NewReader(data), "embedded web archive", warcio.Options{KeepPayload: int(w.id.lim.MaxObject), SkipPayloadDigest: true})
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			o.note("embedded web archive: %v", err)
			if errors.Is(err, warcio.ErrTruncated) {
				return
			}
			continue
		}
		c := rec.Capture("")
		if !c.IsCapture() || c.IsRevisit() {
			continue
		}
		if w.objects >= w.id.lim.MaxObjects {
			if !w.capped {
				w.capped = true
				o.note("only the first %d nested objects identified (limit)", w.id.lim.MaxObjects)
			}
			return
		}
		w.objects++
		name := c.URI
		if name == "" {
			name = c.RecordID
		}
		at := append(append([]string(nil), o.Path...), name)
		enc := ""
		if rec.HTTP != nil {
			enc = rec.HTTP.Header.Get("Content-Encoding")
		}
		i := len(w.nested)
		w.nested = append(w.nested, Object{})
		child, _ := w.payload(Payload{Bytes: rec.Payload, Length: rec.PayloadLength, Name: c.URI, MIME: hintMIME(c.MIME),
			Encoding: enc, Truncated: c.Truncated}, at, depth+1)
		w.nested[i] = child
	}
}

// hintMIME is the media type passed to siegfried as a hint: the capture's
// MIME unless it is pywb's "unk" (none declared).
func hintMIME(m string) string {
	if m == "unk" || m == "-" {
		return ""
	}
	return m
}
