package sidecar

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// handleCDXAdd accepts CDXJ or CDX lines in a POST body, OutbackCDX style,
// and files the originals they describe (revisits and lines without a
// usable digest are skipped). The body is validated first: one bad line
// rejects the request (400 naming the line) and nothing is added.
func (s *Server) handleCDXAdd(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	scope := r.URL.Query().Get("scope")
	if scope == "" {
		scope = s.cfg.Index.Scope
	}
	match, _ := dedupindex.ParseMatch(s.cfg.Index.Match) // validated
	body := &limitedBody{r: http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxCDXPostBytes)}
	rd := cdxj.NewReader(body, "POST body")
	var res api.CDXAddResult
	var entries []dedupindex.Entry
	for {
		l, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) || body.tooLarge {
				// The line cut at the limit fails to parse before the
				// reader reports the limit: still 413, not 400.
				return errorf(http.StatusRequestEntityTooLarge, "body exceeds limits.max_cdx_post_bytes (%d)", s.cfg.Limits.MaxCDXPostBytes)
			}
			return errorf(http.StatusBadRequest, "%v", err)
		}
		res.Lines++
		if l.IsRevisit() {
			res.Revisits++
			continue
		}
		o, ok, err := originalOfLine(l)
		if err != nil {
			return errorf(http.StatusBadRequest, "POST body line %d: %v", rd.LineNumber(), err)
		}
		if !ok {
			res.Skipped++
			continue
		}
		entries = append(entries, dedupindex.Entry{Key: match.Key(scope, o.TargetURI, o.Digest), Original: o})
	}
	const chunk = 1000
	for i := 0; i < len(entries); i += chunk {
		part := entries[i:min(i+chunk, len(entries))]
		added, err := dedupindex.PutEntries(r.Context(), s.idx, part)
		if err != nil {
			return fmt.Errorf("add cdx: %w", err)
		}
		for _, a := range added {
			if a {
				res.Added++
			} else {
				res.Existing++
			}
		}
	}
	s.metrics.CDXLinesAdded.Add(int64(res.Added))
	writeJSON(w, http.StatusOK, res)
	return nil
}

// originalOfLine converts a non-revisit index line; ok is false for lines
// that cannot be dedup originals (no digest, empty payload, non-2xx).
func originalOfLine(l cdxj.Line) (dedupindex.Original, bool, error) {
	if l.Digest == "" || l.Digest == "-" {
		return dedupindex.Original{}, false, nil
	}
	dg, err := l.CanonicalDigest()
	if err != nil {
		return dedupindex.Original{}, false, fmt.Errorf("digest %q: %w", l.Digest, err)
	}
	if dg == digest.EmptySHA1 || (l.Status != 0 && (l.Status < 200 || l.Status > 299)) || l.URL == "" {
		return dedupindex.Original{}, false, nil
	}
	date, err := time.Parse("20060102150405", l.Timestamp)
	if err != nil {
		return dedupindex.Original{}, false, fmt.Errorf("timestamp %q: %w", l.Timestamp, err)
	}
	if l.Filename != "" && l.Filename != "-" {
		if err := warcio.CheckFileName(l.Filename); err != nil {
			return dedupindex.Original{}, false, fmt.Errorf("filename: %w", err)
		}
	}
	o := dedupindex.Original{Digest: dg, TargetURI: l.URL, Date: date, File: l.Filename, Status: l.Status, MIME: l.MIME}
	if l.Offset > 0 {
		o.Offset = l.Offset
	}
	if l.Length > 0 {
		o.Length = l.Length
	}
	return o, true, nil
}

// limitedBody remembers whether the body it reads hit its size limit
// (http.MaxBytesError), whatever the reader above it makes of the error.
type limitedBody struct {
	r        io.Reader
	tooLarge bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var mbe *http.MaxBytesError
	if err != nil && errors.As(err, &mbe) {
		b.tooLarge = true
	}
	return n, err
}
