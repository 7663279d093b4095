package testarchive

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/wayside-archive/wayside/warcio"
)

//go:embed testdata/site.warc.gz
var siteWARC []byte

// maxBody bounds the entity bodies kept per memento (the fixture holds
// everything in memory).
const maxBody = 32 << 20

// LoadBuiltin loads the built-in site (see site.go) and returns the number
// of mementos added.
func (s *Server) LoadBuiltin() (int, error) {
	return s.LoadWARC(bytes.NewReader(siteWARC), "site.warc.gz")
}

// LoadWARCFile loads the response (and resolvable revisit) records of a
// WARC file.
func (s *Server) LoadWARCFile(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("testarchive: %w", err)
	}
	defer f.Close()
	return s.LoadWARC(f, path)
}

// LoadWARC reads WARC records with the lenient warcio reader and adds every
// HTTP response as a memento. Revisits are resolved against an earlier
// response with the same payload digest. Corrupt records are skipped (and
// logged); a truncated tail ends the load without error.
func (s *Server) LoadWARC(r io.Reader, name string) (int, error) {
	rd := warcio.NewReader(r, name, warcio.Options{KeepPayload: maxBody})
	byDigest := map[string]*Memento{}
	n := 0
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if errors.Is(err, warcio.ErrTruncated) {
			slog.Warn("testarchive: truncated WARC tail ignored", "err", err)
			return n, nil
		}
		if errors.Is(err, warcio.ErrCorrupt) {
			slog.Warn("testarchive: corrupt WARC record skipped", "err", err)
			continue
		}
		if err != nil {
			return n, fmt.Errorf("testarchive: load %s: %w", name, err)
		}
		if rec.HTTP == nil || !rec.HTTP.IsResponse() || rec.TargetURI == "" {
			continue
		}
		hdr := http.Header{}
		for _, f := range rec.HTTP.Header {
			hdr.Add(f.Name, f.Value)
		}
		m := Memento{URIR: rec.TargetURI, Datetime: rec.Date, Status: rec.HTTP.Status, Header: hdr}
		switch rec.Type {
		case "response":
			body := rec.Payload
			if strings.EqualFold(hdr.Get("Content-Encoding"), "gzip") {
				if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
					if d, err := io.ReadAll(io.LimitReader(zr, maxBody)); err == nil {
						body = d
						hdr.Del("Content-Encoding")
					}
				}
			}
			if hdr.Get("Content-Encoding") != "" {
				continue // an encoding the fixture cannot serve decoded
			}
			hdr.Del("Transfer-Encoding")
			m.Body = body
			if rec.PayloadDigest != "" {
				cp := m
				byDigest[rec.PayloadDigest] = &cp
			}
		case "revisit":
			orig := byDigest[rec.DeclaredPayloadDigest]
			if orig == nil || m.Status == http.StatusNotModified {
				continue
			}
			m.Body = orig.Body
			if m.Status == 0 {
				m.Status = orig.Status
			}
		default:
			continue
		}
		s.Add(m)
		n++
	}
}
