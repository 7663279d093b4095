package sidecar

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/warcfile"
)

// OutbackCDX-style loading of the capture index, for archives whose WARCs
// the daemon does not read itself (they are on another machine, or in
// object storage): POST /<collection> with CDX (11-field, or any layout a
// " CDX " header names) or CDXJ lines adds the captures they describe,
// POST /<collection>/delete removes them. Each line's filename is
// resolved against the collection's storage URL (access.storage), and
// that location is what the capture index stores. The body is read and
// every line checked before anything is written: one bad line refuses the
// whole request (400 naming each bad line), and the captures of a good
// one are added (or removed) in one atomic, durable write.

// maxBadLines bounds the bad lines a refusal lists.
const maxBadLines = 20

// reservedCollections are first path segments the daemon's own routes
// use: a collection of that name could not be reached.
var reservedCollections = map[string]bool{"v1": true, "t": true, "hex": true, "cdx": true, "web": true,
	"healthz": true, "metrics": true, "mementomap": true, "wacz": true}

// checkLoadCollection checks a collection name of access.storage.
func checkLoadCollection(name string) error {
	switch {
	case name == "":
		return errors.New("a collection name is empty")
	case strings.ContainsAny(name, "/?#% \t"):
		return fmt.Errorf("collection %q: a name is one path segment (no /, ?, #, %%, blanks)", name)
	case reservedCollections[name]:
		return fmt.Errorf("collection %q: the name is one of the daemon's routes", name)
	}
	return nil
}

// storageBase checks a storage URL and returns it normalised: a
// directory path becomes a file:// URL.
func storageBase(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("no storage URL")
	}
	if !warcfile.IsURL(raw) {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", fmt.Errorf("storage %q: %w", raw, err)
		}
		return (&url.URL{Scheme: "file", Path: abs}).String(), nil
	}
	if err := warcfile.CheckLocation(raw); err != nil {
		return "", err
	}
	return raw, nil
}

// setLoadRoutes gives a the collections of storage and their routes.
func (s *Server) setLoadRoutes(a *access, storage map[string]string) error {
	a.storage = map[string]string{}
	for coll, raw := range storage {
		if err := checkLoadCollection(coll); err != nil {
			return fmt.Errorf("sidecar: access.storage: %w", err)
		}
		b, err := storageBase(raw)
		if err != nil {
			return fmt.Errorf("sidecar: access.storage.%s: %w", coll, err)
		}
		a.storage[coll] = b
	}
	rt := &route{name: "captures_load", method: http.MethodPost, maxBody: s.cfg.Limits.MaxCDXPostBytes, h: s.handleCaptureLoad}
	a.load = map[string]*route{http.MethodPost: rt}
	return nil
}

// loadRoutes returns the route of /<collection> and /<collection>/delete
// for a collection of access.storage.
func (a *access) loadRoutes(p string) (map[string]*route, bool) {
	coll, _ := loadPath(p)
	if _, ok := a.storage[coll]; !ok || coll == "" {
		return nil, false
	}
	return a.load, true
}

// loadPath splits /<collection> and /<collection>/delete; coll is "" for
// any other path.
func loadPath(p string) (coll string, del bool) {
	p = strings.TrimPrefix(p, "/")
	if c, ok := strings.CutSuffix(p, "/delete"); ok {
		p, del = c, true
	}
	if p == "" || strings.Contains(p, "/") {
		return "", false
	}
	return p, del
}

func (s *Server) handleCaptureLoad(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	acc := s.acc()
	coll, del := loadPath(r.URL.Path)
	base, ok := acc.storage[coll]
	if !ok {
		return errorf(http.StatusNotFound, "collection %q takes no index lines (access.storage)", coll)
	}
	body := &limitedBody{r: r.Body}
	caps, err := s.readLoadLines(body, coll, base)
	if err != nil {
		return err
	}
	if del {
		n, err := acc.idx.Remove(r.Context(), caps...)
		if err != nil {
			return fmt.Errorf("sidecar: delete captures of %s: %w", coll, err)
		}
		s.log.Info("captures deleted by POST", "collection", coll, "lines", len(caps), "deleted", n)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "Deleted %d records\n", n)
		return nil
	}
	n, err := acc.idx.Add(r.Context(), caps...)
	if err == nil {
		// No CDXJ file holds these lines: the catch-up at start could
		// not recover them, so they are durable before the answer.
		err = acc.idx.Sync()
	}
	if err != nil {
		return fmt.Errorf("sidecar: add captures to %s: %w", coll, err)
	}
	s.log.Info("captures added by POST", "collection", coll, "lines", len(caps), "new", n)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Added %d records (%d new)\n", len(caps), n)
	return nil
}

// readLoadLines reads and checks every line of a load body; any bad line
// refuses the whole body (400 naming up to maxBadLines of them).
func (s *Server) readLoadLines(body *limitedBody, coll, base string) ([]wayside.Capture, error) {
	rd := cdxj.NewReader(body, "POST body")
	var caps []wayside.Capture
	var bad []string
	nbad := 0
	fail := func(msg string) {
		if nbad++; nbad <= maxBadLines {
			bad = append(bad, msg)
		}
	}
	for {
		l, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) || body.tooLarge {
				return nil, errorf(http.StatusRequestEntityTooLarge, "body exceeds limits.max_cdx_post_bytes (%d)", s.cfg.Limits.MaxCDXPostBytes)
			}
			if !errors.Is(err, cdxj.ErrSyntax) {
				return nil, errorf(http.StatusBadRequest, "%v", err) // an unreadable body: nothing follows
			}
			if strings.HasPrefix(rd.Text(), "@alias ") {
				// OutbackCDX takes alias lines among the records; here
				// aliases are a file of the config.
				fail(fmt.Sprintf("line %d: an @alias line: aliases are not loaded by POST here (access.aliases names the aliases file)", rd.LineNumber()))
				continue
			}
			fail(strings.TrimPrefix(err.Error(), "cdxj: POST body "))
			continue
		}
		c, err := loadCapture(l, base)
		if err != nil {
			fail(fmt.Sprintf("line %d: %v", rd.LineNumber(), err))
			continue
		}
		c.Scope = coll
		caps = append(caps, c)
	}
	if body.tooLarge {
		return nil, errorf(http.StatusRequestEntityTooLarge, "body exceeds limits.max_cdx_post_bytes (%d)", s.cfg.Limits.MaxCDXPostBytes)
	}
	if nbad > 0 {
		more := ""
		if nbad > len(bad) {
			more = fmt.Sprintf("; and %d more", nbad-len(bad))
		}
		return nil, errorf(http.StatusBadRequest, "%d bad lines, nothing stored: %s%s", nbad, strings.Join(bad, "; "), more)
	}
	if len(caps) == 0 {
		return nil, errorf(http.StatusBadRequest, "no index lines in the body")
	}
	return caps, nil
}

// loadCapture converts one index line into the capture it describes, its
// file resolved against the storage URL base. A line must locate its
// record: a filename and an offset.
func loadCapture(l cdxj.Line, base string) (wayside.Capture, error) {
	c, err := l.Capture()
	if err != nil {
		return c, err
	}
	if l.Filename == "" {
		return c, errors.New("no filename: the line does not say which WARC file holds the record")
	}
	if l.Offset < 0 {
		return c, errors.New("no offset: the line does not say where in its WARC file the record is")
	}
	if c.File, err = warcfile.Join(base, l.Filename); err != nil {
		return c, fmt.Errorf("filename %q: %w", l.Filename, err)
	}
	if !captureindex.Indexable(c) {
		return c, errors.New("not a capture the index can hold")
	}
	return c, nil
}
