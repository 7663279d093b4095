package replay

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/wacz"
	"github.com/wayside-archive/wayside/warcio"
)

// serveWACZ answers GET /<coll>/wacz?url=…[&matchType=…][&from=…][&to=…]
// (the CDX API's query parameters, filters included): the captures the
// query selects and the originals of its revisits, as a WACZ. Their stored
// bytes are copied into one WARC file per compression in a temporary
// directory, package wacz writes the WACZ there (memory flat in the
// selection's size), and the file is streamed and removed. More than
// MaxResults captures is a 413.
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
	work, err := os.MkdirTemp("", "wayside-wacz-serve-")
	if err != nil {
		return fmt.Errorf("replay: wacz: %w", err)
	}
	defer os.RemoveAll(work)
	sel := &selection{h: h, dir: work, coll: p.coll, seen: map[string]bool{}}
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
	warcs, err := sel.finish()
	if err != nil {
		return err
	}
	out := filepath.Join(work, p.coll+".wacz")
	res, err := wacz.Create(r.Context(), out, warcs, wacz.Options{
		Key: h.opts.WACZKey, Software: "Wayside", TempDir: work,
		Title: fmt.Sprintf("%s: %s", p.coll, v.Get("url")),
	})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if len(res.Problems) > 0 {
		return fmt.Errorf("replay: wacz: %d records of the selection could not be read back: %v", len(res.Problems), res.Problems[0])
	}
	f, err := os.Open(out)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/wacz")
	w.Header().Set("Content-Disposition", `attachment; filename="`+p.coll+`.wacz"`)
	w.Header().Set("Content-Length", strconv.FormatInt(res.Bytes, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, f); err != nil {
		abort(h, "wacz", err)
	}
	return nil
}

// selection copies the stored bytes of records into one WARC file for
// gzip-per-record sources and one for uncompressed ones.
type selection struct {
	h         *Handler
	dir, coll string
	seen      map[string]bool
	gz, plain *os.File
}

func (s *selection) add(file string, off, length int64) error {
	key := file + " " + strconv.FormatInt(off, 10)
	if s.seen[key] || length <= 0 {
		return nil
	}
	s.seen[key] = true
	src, err := warcio.FindReader(s.h.opts.WARCDirs, file)
	if err != nil {
		return fmt.Errorf("replay: wacz: %w", err)
	}
	defer src.Close()
	compressed := strings.HasSuffix(strings.TrimSuffix(file, warcio.OpenSuffix), ".gz")
	dst := &s.plain
	name := s.coll + "-selection.warc"
	if compressed {
		dst, name = &s.gz, name+".gz"
	}
	if *dst == nil {
		if *dst, err = os.Create(filepath.Join(s.dir, name)); err != nil {
			return fmt.Errorf("replay: wacz: %w", err)
		}
	}
	if n, err := io.Copy(*dst, io.NewSectionReader(src, off, length)); err != nil || n != length {
		return fmt.Errorf("replay: wacz: %s offset %d: %d of %d bytes copied: %v", file, off, n, length, err)
	}
	if !compressed {
		// An uncompressed record's index length leaves out the blank
		// lines that end it.
		tail := make([]byte, 4)
		if _, err := src.ReadAt(tail, off+length); err != nil || !bytes.Equal(tail, []byte("\r\n\r\n")) {
			return fmt.Errorf("replay: wacz: %s offset %d: the record does not end in a blank line", file, off)
		}
		if _, err := (*dst).Write(tail); err != nil {
			return fmt.Errorf("replay: wacz: %w", err)
		}
	}
	return nil
}

// finish closes the WARC files and returns their paths.
func (s *selection) finish() ([]string, error) {
	var out []string
	for _, f := range []*os.File{s.gz, s.plain} {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("replay: wacz: %w", err)
		}
		out = append(out, f.Name())
	}
	s.gz, s.plain = nil, nil
	return out, nil
}

func (s *selection) close() {
	for _, f := range []*os.File{s.gz, s.plain} {
		if f != nil {
			f.Close()
		}
	}
}
