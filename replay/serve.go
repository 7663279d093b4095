package replay

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// serveMemento answers /<coll>/<timestamp><modifier>/<URI-R>. A timestamp
// that is not exactly a capture's is redirected (302) to the closest
// capture's, keeping the modifier, so every memento has one URI-M. The
// id_ modifier replays the capture raw: the archived status, the payload
// bytes exactly as recorded (content encoding kept) and the archived
// headers after the header rules; any other modifier (or none) rewrites the
// links of HTML and CSS into the archive. A revisit is served with its own
// status and headers and its original's payload; a server-not-modified
// (304) revisit with its original's status and headers, updated with its
// own as a cache would (RFC 9111 §4.3.4).
func (h *Handler) serveMemento(w http.ResponseWriter, r *http.Request, p *path) error {
	want, err := ParseTimestamp(p.ts, false)
	if err != nil {
		return badRequest("memento timestamp: %v", err)
	}
	chosen, err := h.closest(r.Context(), p, want)
	if err != nil {
		return err
	}
	links := []string{link(p.uriR, "original"), link(p.timegateURL(p.uriR), "timegate"),
		link(p.timemapURL("link", p.uriR), "timemap", "type", "application/link-format")}
	if chosen == nil {
		fb, how, err := h.fallback(r.Context(), p, want)
		if err != nil {
			return err
		}
		if fb == nil {
			hdr := http.Header{}
			hdr.Set("Link", strings.Join(links, ", "))
			return notFound(hdr, "no memento of %s in collection %s", p.uriR, p.coll)
		}
		return fellBack(w, r, p, fb, how, p.uriM(fb.Timestamp(), p.mod, fb.URI), links)
	}
	if ts := chosen.Timestamp(); ts != p.ts {
		loc := p.uriM(ts, p.mod, chosen.URI)
		w.Header().Set("Location", loc)
		w.Header().Set("Link", strings.Join(append(links, mementoLink(p.uriM(ts, "", chosen.URI), "memento", chosen.Date)), ", "))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusFound)
		if r.Method != http.MethodHead {
			w.Write([]byte("Found: " + loc + "\n"))
		}
		return nil
	}
	links = append(links, mementoLink(p.uriM(p.ts, "", chosen.URI), "memento", chosen.Date))
	if d := p.chk.Entry(chosen); !d.Replayable() {
		hdr := http.Header{}
		hdr.Set("Link", strings.Join(links, ", "))
		return &Error{Code: http.StatusUnavailableForLegalReasons, Msg: d.Reason(), Header: hdr}
	}
	return h.serveCapture(w, r, p, chosen, strings.Join(links, ", "))
}

// closest returns the capture of the route's URI-R closest to t (nil when
// there is none): of the captures of the closest second, the one whose URI
// is the URI-R as asked (http and https, www. or not, share a urlkey).
func (h *Handler) closest(ctx context.Context, p *path, t time.Time) (*captureindex.Entry, error) {
	var chosen *captureindex.Entry
	err := h.idx.Closest(ctx, p.coll, captureindex.URLKey(p.uriR), t, func(e *captureindex.Entry) error {
		if !p.chk.Entry(e).Visible() {
			return nil
		}
		switch {
		case chosen == nil:
			chosen = e
		case e.Date.Unix() != chosen.Date.Unix():
			return captureindex.ErrStop
		case e.URI == p.uriR && chosen.URI != p.uriR:
			chosen = e
		}
		return nil
	})
	return chosen, h.indexError(err)
}

// served is what serveCapture learns from the records before it answers.
type served struct {
	status  int
	orig    http.Header // the archived headers
	rewrite string      // "html" or "css" when the body is to be rewritten
}

func (h *Handler) serveCapture(w http.ResponseWriter, r *http.Request, p *path, e *captureindex.Entry, links string) error {
	var rw *Rewriter // nil: raw replay (id_)
	if p.mod != ModRaw {
		var err error
		if rw, err = NewRewriter(p.collPath, e.Timestamp(), e.URI); err != nil {
			return badRequest("URI-R %q: %v", e.URI, err)
		}
	}
	payload := captureindex.Location{File: e.File, Offset: e.Offset, Length: e.Length, URI: e.URI, Date: e.Date}
	var head *warcio.Record // the revisit whose status and headers are replayed
	if e.IsRevisit() {
		rec, err := h.readRecord(r.Context(), payload, e.RecordID, nil)
		if err != nil {
			return err
		}
		head = rec
		if st := rec.Status(); st >= 300 && st < 400 && st != http.StatusNotModified {
			// A redirect is replayed without a body (as pywb does): the
			// browser follows Location and never shows it.
			sv := describe(head, nil, rw)
			hdr := ArchivedHeaders(sv.orig, rw, false)
			hdr.Set("Content-Length", "0")
			writeHead(w, e, sv.status, hdr, links, rw != nil, p)
			return nil
		}
		orig, err := h.idx.Resolve(r.Context(), e)
		if err != nil {
			return err
		}
		if orig == nil {
			return notFound(nil, "revisit of %s at %s (%s offset %d): its original (payload digest %s) is not in this archive",
				e.URI, e.Timestamp(), e.File, e.Offset, e.Digest)
		}
		payload = *orig
	}
	headOnly := r.Method == http.MethodHead
	var sv served
	var rb *rewriteBuffer
	var sent bool // the status line is written
	// sendRaw writes the head for the archived bytes (content not
	// rewritten) and returns where the payload goes.
	sendRaw := func(length int64) io.Writer {
		hdr := ArchivedHeaders(sv.orig, rw, false)
		if length >= 0 {
			hdr.Set("Content-Length", strconv.FormatInt(length, 10))
		}
		writeHead(w, e, sv.status, hdr, links, rw != nil, p)
		sent = true
		if headOnly {
			return errWriter{errHeadSent}
		}
		return w
	}
	onPayload := func(rec *warcio.Record) io.Writer {
		sv = describe(head, rec, rw)
		if sv.rewrite != "" {
			select {
			case h.rewrites <- struct{}{}:
				rb = &rewriteBuffer{max: h.opts.MaxRewriteBytes, spill: func() io.Writer { return sendRaw(-1) }}
				return rb
			default:
				h.log.Debug("replay: too many bodies being rewritten; serving one as archived", "uri", e.URI)
			}
		}
		length := int64(-1)
		if head == nil && e.PayloadLength > 0 && e.Truncated == "" {
			length = e.PayloadLength
		}
		return sendRaw(length)
	}
	recordID := e.RecordID
	if head != nil {
		recordID = "" // the revisit's original: its id is not in the index entry
	}
	_, err := h.readRecord(r.Context(), payload, recordID, onPayload)
	if rb != nil {
		defer func() { <-h.rewrites }()
	}
	if sent {
		if err != nil && !errors.Is(err, errHeadSent) && !headOnly {
			abort(h, "memento", fmt.Errorf("%s offset %d: %w", payload.File, payload.Offset, err))
		}
		return nil
	}
	if err != nil {
		return err
	}
	if rb == nil {
		return fmt.Errorf("replay: %s offset %d: no payload was read", payload.File, payload.Offset)
	}
	body, ok := h.rewriteBody(rb.Bytes(), sv, rw)
	hdr := ArchivedHeaders(sv.orig, rw, ok)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	writeHead(w, e, sv.status, hdr, links, true, p)
	if !headOnly {
		w.Write(body)
	}
	return nil
}

var errHeadSent = errors.New("replay: head sent")

// fellBack redirects a request for a URI-R without a capture of its own to
// the capture an alias or fuzzy matching found, saying so: the header
// X-Archive-Fallback names how ("fuzzy" or "alias") and the capture's URI
// and timestamp.
func fellBack(w http.ResponseWriter, r *http.Request, p *path, fb *captureindex.Entry, how, loc string, links []string) error {
	w.Header().Set("Location", loc)
	w.Header().Set("X-Archive-Fallback", how+"; uri=\""+fb.URI+"\"; datetime=\""+HTTPDate(fb.Date)+"\"")
	w.Header().Set("Link", strings.Join(append(links, mementoLink(p.uriM(fb.Timestamp(), "", fb.URI), "memento", fb.Date)), ", "))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, "Found (%s match): %s\n", how, loc)
	}
	return nil
}

// describe derives the status and archived headers from the records: head
// (a revisit) and payload (the record whose payload is served: its headers
// apply when there is no head, and under a 304 revisit's). rw is nil for
// raw replay, where nothing is rewritten.
func describe(head, payload *warcio.Record, rw *Rewriter) served {
	sv := served{status: http.StatusOK, orig: http.Header{}}
	src := head
	if src == nil || src.HTTP == nil {
		src = payload
	}
	switch {
	case src != nil && src.HTTP != nil:
		sv.status = src.HTTP.Status
		sv.orig = toHeader(src.HTTP.Header)
		if src == head && head.HTTP.Status == http.StatusNotModified && payload != nil && payload.HTTP != nil {
			// A 304 revisit: the original's response, updated with the
			// headers the 304 carried.
			upd := sv.orig
			sv.status, sv.orig = payload.HTTP.Status, toHeader(payload.HTTP.Header)
			for k, vs := range upd {
				switch strings.ToLower(k) {
				case "content-length", "transfer-encoding", "content-encoding", "content-type", "content-range":
					continue
				}
				sv.orig[k] = vs
			}
		}
	case src != nil && src.ContentType != "":
		// A resource record: its WARC Content-Type is the payload's.
		sv.orig.Set("Content-Type", src.ContentType)
	}
	if sv.status < 100 || sv.status > 999 {
		sv.status = http.StatusOK
	}
	if rw != nil && sv.status >= 200 && sv.status != http.StatusNoContent && sv.status != http.StatusNotModified {
		mt, _, _ := mime.ParseMediaType(sv.orig.Get("Content-Type"))
		switch strings.ToLower(mt) {
		case "text/html", "application/xhtml+xml":
			sv.rewrite = "html"
		case "text/css":
			sv.rewrite = "css"
		}
	}
	return sv
}

func toHeader(fs warcio.Header) http.Header {
	h := http.Header{}
	for _, f := range fs {
		h.Add(f.Name, f.Value)
	}
	return h
}

// writeHead writes the status line and headers of a memento. Rewritten
// replay gets a Content-Security-Policy that keeps the page inside the
// archive: whatever rewriting missed is blocked, not fetched from the
// live web. A raw memento is for programs; opened in a browser, it is
// sandboxed (no scripts, an origin of its own), so archived content never
// acts with the archive's origin. sandbox puts rewritten replay in an
// opaque origin too (scripts allowed; View.Sandbox), and View.Framed lets
// the API origin frame it.
func writeHead(w http.ResponseWriter, e *captureindex.Entry, status int, hdr http.Header, links string, rewritten bool, p *path) {
	out := w.Header()
	for k, vs := range hdr {
		out[k] = vs
	}
	out.Set("Memento-Datetime", HTTPDate(e.Date))
	out.Set("Link", links)
	out.Set("X-Content-Type-Options", "nosniff")
	csp := cspRaw
	if rewritten && p.sandbox {
		csp = cspSandboxed + cspRewritten
	} else if rewritten {
		csp = cspRewritten
	}
	if p.frameAncestor != "" {
		csp = strings.Replace(csp, "frame-ancestors 'self'", "frame-ancestors 'self' "+p.frameAncestor, 1)
	}
	out.Set("Content-Security-Policy", csp)
	w.WriteHeader(status)
}

// The Content-Security-Policy of replayed content. Rewritten pages may load
// and run what their own origin (the archive's content origin) serves and
// nothing else: no request, form submission or frame reaches another
// origin (the daemon's API, the live web), no worker or Service Worker can
// be registered, no other origin may frame them. A raw memento opened in
// a browser is sandboxed besides (no scripts, an opaque origin).
const (
	cspRewritten = "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; " +
		"worker-src 'none'; form-action 'self'; frame-ancestors 'self'; base-uri 'self'; object-src 'none'"
	// cspSandboxed precedes cspRewritten on an origin shared with an API
	// or a token (View.Sandbox).
	cspSandboxed = "sandbox allow-scripts; "
	cspRaw       = "sandbox; default-src 'self' data: blob:; worker-src 'none'; form-action 'none'; frame-ancestors 'self'"
)

// rewriteBody decodes and rewrites a buffered HTML or CSS body. It returns
// the bytes to send and whether they are rewritten (a body it cannot
// decode is sent as archived).
func (h *Handler) rewriteBody(body []byte, sv served, rw *Rewriter) ([]byte, bool) {
	enc := strings.ToLower(strings.TrimSpace(sv.orig.Get("Content-Encoding")))
	if enc != "" && enc != "identity" {
		dec, err := decode(enc, body, h.opts.MaxRewriteBytes)
		if err != nil {
			h.log.Debug("replay: body not rewritten", "encoding", enc, "err", err)
			return body, false
		}
		body = dec
	}
	switch sv.rewrite {
	case "html":
		body = rw.HTML(body)
	case "css":
		body = rw.CSS(body)
	}
	return body, true
}

// decode removes a content encoding, refusing output over max bytes.
func decode(enc string, b []byte, max int64) ([]byte, error) {
	var r io.Reader
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	case "deflate":
		if zr, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
			defer zr.Close()
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(b)) // raw deflate, as some servers send
		}
	default:
		return nil, fmt.Errorf("content encoding %q is not decoded", enc)
	}
	out, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > max {
		return nil, fmt.Errorf("decoded body exceeds %d bytes", max)
	}
	return out, nil
}

// readRecord reads the record at loc (a base name in the WARC directories,
// a location URL, or a WARC file stored in a WACZ: warcfile.Locations,
// remote files and WACZ members by range);
// onPayload (when not nil) is called once its headers are parsed and
// receives the payload. A record that is not the capture indexed there
// (another target URI or date: the file was replaced or cut after it was
// indexed) is an error naming the file and offset, and no payload byte of
// it is passed on.
func (h *Handler) readRecord(ctx context.Context, loc captureindex.Location, recordID string, onPayload func(*warcio.Record) io.Writer) (*warcio.Record, error) {
	f, err := h.locs.Open(ctx, loc.File)
	if err != nil {
		if warcfile.IsNotExist(err) {
			return nil, notFound(nil, "the WARC file %s holding this capture is not in the archive (%v)", loc.File, err)
		}
		h.log.Warn("replay: cannot open a WARC file", "file", loc.File, "offset", loc.Offset, "err", err)
		return nil, fmt.Errorf("replay: %s offset %d: %w", loc.File, loc.Offset, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && loc.Length > 0 && fi.Size() < loc.Offset+loc.Length {
		// Found before a byte is sent: a file cut after it was indexed.
		h.log.Warn("replay: a WARC file is shorter than its index says", "file", loc.File, "offset", loc.Offset, "size", fi.Size())
		return nil, fmt.Errorf("replay: %s offset %d: the file holds %d bytes, the record indexed there ends at %d: the file was cut after it was indexed",
			loc.File, loc.Offset, fi.Size(), loc.Offset+loc.Length)
	}
	opts := warcio.Options{SkipPayloadDigest: true}
	var mismatch error
	sw := &switchWriter{}
	opts.Payload, opts.OnHead = sw, func(rec *warcio.Record) {
		if mismatch = checkRecord(loc, recordID, rec); mismatch != nil {
			sw.w = errWriter{mismatch}
			return
		}
		if onPayload != nil {
			sw.w = onPayload(rec)
		}
	}
	rec, err := warcio.ReadAt(f, loc.File, loc.Offset, loc.Length, opts)
	if err == nil {
		err = mismatch
	}
	if err != nil {
		h.log.Warn("replay: cannot read a capture", "file", loc.File, "offset", loc.Offset, "err", err)
		return nil, fmt.Errorf("replay: %w", err)
	}
	return rec, nil
}

// checkRecord returns an error unless rec, read at loc, is the record the
// index describes there (its record ID when known, its target URI and
// date, to the second).
func checkRecord(loc captureindex.Location, recordID string, rec *warcio.Record) error {
	switch {
	case recordID != "" && rec.RecordID != "" && rec.RecordID != recordID:
		return fmt.Errorf("%s offset %d: the record there is %s, the index has %s: the file changed after it was indexed", loc.File, loc.Offset, rec.RecordID, recordID)
	case loc.URI != "" && rec.TargetURI != loc.URI:
		return fmt.Errorf("%s offset %d: the record there is of %q, the index has %q: the file changed after it was indexed", loc.File, loc.Offset, rec.TargetURI, loc.URI)
	case !loc.Date.IsZero() && !rec.Date.IsZero() && rec.Date.Unix() != loc.Date.Unix():
		return fmt.Errorf("%s offset %d: the record there is of %s, the index has %s: the file changed after it was indexed", loc.File, loc.Offset, rec.Date.UTC().Format(time.RFC3339), loc.Date.UTC().Format(time.RFC3339))
	}
	return nil
}

// rewriteBuffer holds a body to rewrite, up to max bytes; past that it
// spills: what it holds and the rest go, as archived, to the writer spill
// returns.
type rewriteBuffer struct {
	bytes.Buffer
	max   int64
	spill func() io.Writer
	out   io.Writer
}

func (b *rewriteBuffer) Write(p []byte) (int, error) {
	if b.out == nil && int64(b.Len()+len(p)) <= b.max {
		return b.Buffer.Write(p)
	}
	if b.out == nil {
		b.out = b.spill()
		if _, err := b.out.Write(b.Bytes()); err != nil {
			return 0, err
		}
		b.Reset()
	}
	return b.out.Write(p)
}

// switchWriter passes writes to w, chosen once the record's head is read
// (nil: discarded).
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) {
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

type errWriter struct{ err error }

func (e errWriter) Write([]byte) (int, error) { return 0, e.err }
