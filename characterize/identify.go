package characterize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/richardlehane/siegfried"
	"github.com/richardlehane/siegfried/pkg/config"
	"github.com/richardlehane/siegfried/pkg/static"
)

// Unknown is the PUID of an object no PRONOM signature matched. It is a
// result, not an error.
const Unknown = "UNKNOWN"

// Format is one identification: a PRONOM format (or Unknown) with what the
// match was based on.
type Format struct {
	// PUID is the PRONOM unique identifier ("fmt/11", "x-fmt/263") or
	// Unknown (an empty payload too: EmptyFormat); "" only for a record
	// not identified (a revisit not resolved).
	PUID    string `json:"puid"`
	Name    string `json:"format,omitempty"`
	Version string `json:"version,omitempty"`
	MIME    string `json:"mime,omitempty"`
	// Basis says what matched ("byte match at 0, 8", "extension match css;
	// mime match text/css"); Warning is siegfried's caveat ("match on
	// extension and MIME only", "no match").
	Basis   string `json:"basis,omitempty"`
	Warning string `json:"warning,omitempty"`
}

// EmptyFormat is the identification of an empty (0-byte) payload: PRONOM
// has no format for it, so it is Unknown, with siegfried's warning for an
// empty source. It is an identification like any other (a revisit of an
// empty payload inherits it from its original, a metadata record states
// it).
var EmptyFormat = Format{PUID: Unknown, Basis: "0 bytes", Warning: "empty source"}

// Engine identifies single byte strings with siegfried and its embedded
// PRONOM signatures. One Engine is safe for concurrent use.
type Engine struct {
	sf      *siegfried.Siegfried
	fields  map[string]int
	version string
}

var errNoSignatures = errors.New("characterize: siegfried's embedded signatures did not load")

// NewEngine loads siegfried's embedded signatures and warms the matchers up
// (siegfried builds them on the first identification, which takes a few
// hundred milliseconds): the first capture is not delayed.
func NewEngine() (*Engine, error) {
	sf := static.New()
	if sf == nil {
		return nil, errNoSignatures
	}
	fields := sf.Fields()
	if len(fields) == 0 {
		return nil, errNoSignatures
	}
	e := &Engine{sf: sf, fields: map[string]int{}}
	for i, f := range fields[0] {
		e.fields[f] = i
	}
	for _, f := range []string{"id", "format", "mime", "basis", "warning"} {
		if _, ok := e.fields[f]; !ok {
			return nil, fmt.Errorf("characterize: siegfried result has no %q field (fields %v)", f, fields[0])
		}
	}
	if ids := sf.Identifiers(); len(ids) > 0 {
		e.version = ids[0][0] + " " + ids[0][1]
	}
	// Warm up: one identification builds every matcher.
	if f := e.Identify([]byte("<!DOCTYPE html><html><body>wayside</body></html>"), "warmup.html", "text/html"); f.PUID == "" || f.PUID == Unknown {
		return nil, fmt.Errorf("characterize: siegfried warm-up identified HTML as %q", f.PUID)
	}
	return e, nil
}

// Signatures describes the signature set ("pronom; DROID_SignatureFile_V120.xml; ...").
func (e *Engine) Signatures() string { return e.version }

// Tool names the identification tool and its signatures, as metadata
// records state it: "siegfried 1.11.4; pronom; DROID_SignatureFile_V122.xml; ...".
func (e *Engine) Tool() string {
	v := config.Version()
	return fmt.Sprintf("siegfried %d.%d.%d; %s", v[0], v[1], v[2], e.version)
}

// Identify identifies b. name (a URL or file name: its extension is a
// hint) and mime (the declared media type) help for formats without byte
// signatures (CSS, JavaScript, JSON); pass "" when unknown. An empty b gives
// EmptyFormat.
func (e *Engine) Identify(b []byte, name, mime string) Format {
	return e.identify(b, name, mime, 0)
}

// identify is Identify letting siegfried read at most the first and the
// last window bytes of b (window <= 0: all of it) when b is longer than
// two windows, as DROID's "maximum bytes to scan" does: signatures
// anchored near the start or the end of a file are all within reach; the
// middle of a large file is never read — not by the scan from the start,
// not by the scan from the end. Objects up to two windows long are given
// whole (the two windows would cover them: a pattern spanning the middle,
// such as an SVG's version, is still found). Zip and OLE2 files are always
// given whole: siegfried's container signatures (OOXML, ODF, EPUB, MS
// Office) read their members.
//
// Identifying from a smaller window first and keeping the result when
// siegfried read nothing beyond it (every read then returns what the full
// window returns) was measured and dropped: siegfried stops reading only
// when no better match remains possible, and on the corpus (120 objects
// longer than two 8 KiB windows) and the warcgen WARC (3690) it always
// asked for more than 8 KiB at an end, so the second step ran every time.
func (e *Engine) identify(b []byte, name, mime string, window int) Format {
	if len(b) == 0 {
		return EmptyFormat
	}
	src := slicer{b: b, reach: int64(len(b))}
	if window > 0 && len(b) > 2*window && !bytes.HasPrefix(b, zipMagic) && !bytes.HasPrefix(b, ole2Magic) {
		src.reach = int64(window)
	}
	ids, err := e.sf.Identify(src, name, mime)
	if len(ids) == 0 {
		f := Format{PUID: Unknown, Warning: "no identification"}
		if err != nil {
			f.Warning += ": " + err.Error()
		}
		return f
	}
	v := ids[0].Values()
	get := func(k string) string {
		if i, ok := e.fields[k]; ok && i < len(v) {
			return v[i]
		}
		return ""
	}
	f := Format{PUID: ids[0].String(), Name: get("format"), Version: get("version"), MIME: get("mime"),
		Basis: get("basis"), Warning: get("warning")}
	if f.PUID == "" {
		f.PUID = Unknown
	}
	if len(ids) > 1 {
		alts := make([]string, 0, len(ids)-1)
		for _, id := range ids[1:] {
			alts = append(alts, id.String())
		}
		f.Warning = strings.TrimPrefix(f.Warning+"; also matched "+strings.Join(alts, ", "), "; ")
	}
	return f
}

var (
	zipMagic  = []byte("PK\x03\x04")
	ole2Magic = []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
)

// slicer gives siegfried random access to bytes already in memory, without
// the copy its stream buffer makes (siegfried's "external" source). Only
// the first and the last reach bytes of b can be read: a read beyond them
// ends there (io.EOF), as at the end of a file. Size is the whole length,
// so signatures anchored at the end are found at the right offsets.
type slicer struct {
	b     []byte
	reach int64
}

func (s slicer) Read([]byte) (int, error) { return 0, io.EOF } // never called: IsSlicer
func (s slicer) IsSlicer() bool           { return true }
func (s slicer) Size() int64              { return int64(len(s.b)) }

// Slice returns l bytes at off from the start.
func (s slicer) Slice(off int64, l int) ([]byte, error) {
	end := min(int64(len(s.b)), s.reach)
	if off >= end {
		return nil, io.EOF
	}
	if off+int64(l) > end {
		return s.b[off:end], io.EOF
	}
	return s.b[off : off+int64(l)], nil
}

// EofSlice returns l bytes ending off bytes before the end.
func (s slicer) EofSlice(off int64, l int) ([]byte, error) {
	size := int64(len(s.b))
	reach := min(size, s.reach)
	if off >= reach {
		return nil, io.EOF
	}
	end := size - off
	if off+int64(l) > reach {
		return s.b[size-reach : end], io.EOF
	}
	return s.b[end-int64(l) : end], nil
}
