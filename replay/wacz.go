package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/wacz"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// serveWACZ answers GET /<coll>/wacz?url=…[&matchType=…][&from=…][&to=…]
// (the CDX API's query parameters, filters included): the captures the
// query selects and the originals of its revisits, as a WACZ streamed as
// it is built (wacz.CreateTo): the selected records' stored bytes are
// read by range from their WARC files (or the WACZ files holding them)
// straight into one archive/ member per compression, nothing is copied
// to disk first; memory holds the selection's locations (at most
// MaxResults captures and their originals) and the index and pages spill
// to a temporary directory. More than MaxResults captures is a 413; a
// failure once streaming has begun cuts the response short.
func (h *Handler) serveWACZ(w http.ResponseWriter, r *http.Request, p *path) error {
	v := r.URL.Query()
	if v.Get("url") == "" {
		return badRequest("wacz: give url= (and matchType, from, to as for the CDX API)")
	}
	q, err := h.parseCDXQuery(p.coll, v)
	if err != nil {
		return err
	}
	q.limit = h.opts.MaxResults + 1
	sel := &selection{h: h, ctx: r.Context(), seen: map[string]bool{}, files: map[string]warcfile.ReadFile{}}
	defer sel.close()
	n := 0
	err = h.selectRows(r.Context(), q, p.chk, func(rw *row) error {
		if n++; n > h.opts.MaxResults {
			return &Error{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("wacz: the query selects more than %d captures: narrow it (from, to, matchType, filter)", h.opts.MaxResults)}
		}
		e := rw.e
		if err := sel.add(e.File, e.Offset, e.Length); err != nil {
			return err
		}
		if e.Original != nil {
			return sel.add(e.Original.File, e.Original.Offset, e.Original.Length)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(nil, "wacz: no capture in %s matches the query", p.coll)
	}
	w.Header().Set("Content-Type", "application/wacz")
	w.Header().Set("Content-Disposition", `attachment; filename="`+p.coll+`.wacz"`)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	// The status line goes out with the first bytes of the zip.
	res, err := wacz.CreateTo(r.Context(), w, sel.inputs(p.coll), wacz.Options{
		Key: h.opts.WACZKey, Software: "Wayside",
		Title: fmt.Sprintf("%s: %s", p.coll, v.Get("url")),
	})
	if err == nil && len(res.Problems) > 0 {
		err = fmt.Errorf("%d records of the selection could not be read back: %v", len(res.Problems), res.Problems[0])
	}
	if err != nil {
		abort(h, "wacz", err)
	}
	return nil
}

// segment is one selected record's stored bytes.
type segment struct {
	file        string
	off, length int64
}

// selection gathers the records a WACZ holds, one list for gzip-per-record
// sources and one for uncompressed ones, and opens each WARC file once.
type selection struct {
	h         *Handler
	ctx       context.Context
	seen      map[string]bool
	gz, plain []segment
	files     map[string]warcfile.ReadFile
}

func (s *selection) add(file string, off, length int64) error {
	key := file + " " + strconv.FormatInt(off, 10)
	if s.seen[key] || length <= 0 {
		return nil
	}
	s.seen[key] = true
	if _, err := s.open(file); err != nil {
		return err
	}
	seg := segment{file, off, length}
	if strings.HasSuffix(strings.TrimSuffix(file, warcio.OpenSuffix), ".gz") {
		s.gz = append(s.gz, seg)
	} else {
		s.plain = append(s.plain, seg)
	}
	return nil
}

// open returns the WARC file at the location file, opened once through
// the handler's Locations (a WARC file in the WARC directories, one stored
// in a WACZ, a remote file: read by range).
func (s *selection) open(file string) (warcfile.ReadFile, error) {
	if f, ok := s.files[file]; ok {
		return f, nil
	}
	f, err := s.h.locs.Open(s.ctx, file)
	if err != nil {
		if warcfile.IsNotExist(err) {
			return nil, notFound(nil, "wacz: the WARC file %s holding a selected capture is not in the archive (%v)", file, err)
		}
		return nil, fmt.Errorf("replay: wacz: %w", err)
	}
	s.files[file] = f
	return f, nil
}

// inputs are the WARC files of the WACZ: the selected records of each
// kind, concatenated.
func (s *selection) inputs(coll string) []wacz.Input {
	var out []wacz.Input
	for _, k := range []struct {
		segs []segment
		name string
		gz   bool
	}{{s.gz, coll + "-selection.warc.gz", true}, {s.plain, coll + "-selection.warc", false}} {
		if len(k.segs) == 0 {
			continue
		}
		out = append(out, wacz.Input{Name: k.name, Open: func() (io.ReadCloser, error) {
			return &segmentReader{s: s, segs: k.segs, plain: !k.gz}, nil
		}})
	}
	return out
}

func (s *selection) close() {
	for _, f := range s.files {
		f.Close()
	}
}

// segmentReader reads segments one after the other. An uncompressed
// record's index length leaves out the blank lines that end it: they are
// checked in the source and added.
type segmentReader struct {
	s     *selection
	segs  []segment
	plain bool
	cur   io.Reader
}

func (r *segmentReader) Read(p []byte) (int, error) {
	for {
		if r.cur != nil {
			n, err := r.cur.Read(p)
			if err != io.EOF || n > 0 {
				return n, err
			}
			r.cur = nil
		}
		if len(r.segs) == 0 {
			return 0, io.EOF
		}
		seg := r.segs[0]
		r.segs = r.segs[1:]
		f, err := r.s.open(seg.file)
		if err != nil {
			return 0, err
		}
		rd := io.Reader(&exactReader{r: io.NewSectionReader(f, seg.off, seg.length), left: seg.length, seg: seg})
		if r.plain {
			tail := make([]byte, 4)
			if _, err := f.ReadAt(tail, seg.off+seg.length); err != nil || !bytes.Equal(tail, []byte("\r\n\r\n")) {
				return 0, fmt.Errorf("replay: wacz: %s offset %d: the record does not end in a blank line", seg.file, seg.off)
			}
			rd = io.MultiReader(rd, bytes.NewReader(tail))
		}
		r.cur = rd
	}
}

func (r *segmentReader) Close() error { return nil }

// exactReader fails when its segment ends before its length.
type exactReader struct {
	r    io.Reader
	left int64
	seg  segment
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("replay: wacz: %s offset %d: %d bytes short of the record's %d", e.seg.file, e.seg.off, e.left, e.seg.length)
	}
	return n, err
}
