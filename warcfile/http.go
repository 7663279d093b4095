package warcfile

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// httpBackend reads WARC files from web servers by Range requests, as
// pywb and ReplayWeb.page read remote archives. A server that ignores
// Range (answers 200 with the whole file) is refused: reading a record
// would mean downloading the file.
type httpBackend struct{ c *http.Client }

func newHTTPBackend() Backend {
	return &httpBackend{c: &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			TLSHandshakeTimeout:   30 * time.Second,
		},
		// A redirect is followed only to the same scheme (no https → http).
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return fmt.Errorf("too many redirects")
			}
			if req.URL.Scheme != via[0].URL.Scheme {
				return fmt.Errorf("redirect from %s to %s refused", via[0].URL.Scheme, req.URL.Scheme)
			}
			return nil
		},
	}}
}

// Close closes idle connections.
func (b *httpBackend) Close() error {
	b.c.CloseIdleConnections()
	return nil
}

// Open asks for the first byte: the answer must be 206 with the file's
// size in Content-Range. Its ETag (strong) or Last-Modified is kept, and
// every later request is conditional on it (If-Match or
// If-Unmodified-Since), and must report the same size, so a file replaced
// or truncated after Open fails the read.
func (b *httpBackend) Open(ctx context.Context, u *url.URL) (ReadFile, error) {
	loc := u.String()
	resp, err := b.do(ctx, u, 0, 0, "", "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusNotFound, http.StatusGone:
		return nil, fmt.Errorf("%s: %s: %w", loc, resp.Status, fs.ErrNotExist)
	case http.StatusOK:
		return nil, fmt.Errorf("%s: the server ignores Range requests (it answered 200 with the whole file); WARC files are read from HTTP servers by range only", loc)
	case http.StatusRequestedRangeNotSatisfiable:
		return nil, fmt.Errorf("%s: the file is empty", loc)
	default:
		return nil, fmt.Errorf("%s: %s", loc, resp.Status)
	}
	_, _, size, err := contentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	etag := resp.Header.Get("ETag")
	if strings.HasPrefix(etag, "W/") {
		etag = "" // a weak ETag may not be used in If-Match
	}
	lm := resp.Header.Get("Last-Modified")
	mod, _ := http.ParseTime(lm)
	get := func(off, end int64) (io.ReadCloser, error) {
		resp, err := b.do(ctx, u, off, end, etag, lm)
		if err != nil {
			return nil, err
		}
		bad := func(reason string) (io.ReadCloser, error) {
			resp.Body.Close()
			return nil, &ChangedError{Loc: loc, Offset: off, Reason: reason}
		}
		switch resp.StatusCode {
		case http.StatusPartialContent:
		case http.StatusPreconditionFailed:
			return bad("the server reports it modified (" + resp.Status + ")")
		case http.StatusRequestedRangeNotSatisfiable:
			return bad("it is now shorter than offset " + strconv.FormatInt(off, 10))
		case http.StatusNotFound, http.StatusGone:
			resp.Body.Close()
			return nil, fmt.Errorf("%s: %w", resp.Status, fs.ErrNotExist)
		case http.StatusOK:
			return bad("the server answered 200 (whole file) to a conditional range request")
		default:
			resp.Body.Close()
			return nil, fmt.Errorf("%s", resp.Status)
		}
		s, e, total, err := contentRange(resp.Header.Get("Content-Range"))
		switch {
		case err != nil:
			resp.Body.Close()
			return nil, err
		case total != size:
			return bad(fmt.Sprintf("it now holds %d bytes, not %d", total, size))
		case s != off || e != end:
			resp.Body.Close()
			return nil, fmt.Errorf("asked for bytes %d-%d, the server sent %d-%d", off, end, s, e)
		}
		return resp.Body, nil
	}
	return NewRangeFile(loc, size, mod, get), nil
}

func (b *httpBackend) do(ctx context.Context, u *url.URL, off, end int64, etag, lastMod string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(end, 10))
	req.Header.Set("Accept-Encoding", "identity")
	switch {
	case etag != "":
		req.Header.Set("If-Match", etag)
	case lastMod != "":
		req.Header.Set("If-Unmodified-Since", lastMod)
	}
	return b.c.Do(req)
}

// contentRange parses "bytes START-END/SIZE".
func contentRange(h string) (start, end, size int64, err error) {
	bad := fmt.Errorf("Content-Range %q: want bytes START-END/SIZE", h)
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, total, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	s, e, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	var errs [3]error
	start, errs[0] = strconv.ParseInt(s, 10, 64)
	end, errs[1] = strconv.ParseInt(e, 10, 64)
	size, errs[2] = strconv.ParseInt(total, 10, 64) // "*" (size unknown) is refused
	for _, e := range errs {
		if e != nil {
			return 0, 0, 0, bad
		}
	}
	if start > end || end >= size {
		return 0, 0, 0, bad
	}
	return start, end, size, nil
}
