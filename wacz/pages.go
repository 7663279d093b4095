package wacz

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/net/html"

	"github.com/wayside-archive/wayside/warcio"
)

// PagesHeader is the first line of a pages file (json-pages-1.0).
type PagesHeader struct {
	Format string `json:"format"`
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
}

// Page is one line of pages.jsonl after the header.
type Page struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	TS    string `json:"ts"`
	Title string `json:"title,omitempty"`
	Seed  bool   `json:"seed,omitempty"`
}

// pageSet collects pages in two temporary files as they are found.
type pageSet struct {
	seeds      map[string]bool
	seedHosts  map[string]bool
	mainF      *os.File
	extraF     *os.File
	mainW      *bufio.Writer
	extraW     *bufio.Writer
	nMain      int
	nExtra     int
	main       struct{ url, ts string }
	mainIsSeed bool
}

func newPageSet(dir string, seeds []string) (*pageSet, error) {
	ps := &pageSet{seeds: map[string]bool{}, seedHosts: map[string]bool{}}
	for _, s := range seeds {
		ps.seeds[s] = true
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			ps.seedHosts[strings.ToLower(u.Host)] = true
		}
	}
	var err error
	if ps.mainF, err = os.CreateTemp(dir, "pages-"); err != nil {
		return nil, fmt.Errorf("wacz: %w", err)
	}
	if ps.extraF, err = os.CreateTemp(dir, "extra-pages-"); err != nil {
		ps.mainF.Close()
		return nil, fmt.Errorf("wacz: %w", err)
	}
	ps.mainW = bufio.NewWriterSize(ps.mainF, 1<<16)
	ps.extraW = bufio.NewWriterSize(ps.extraF, 1<<16)
	return ps, nil
}

func (ps *pageSet) close() {
	ps.mainF.Close()
	ps.extraF.Close()
}

func (ps *pageSet) counts() (int, int) { return ps.nMain, ps.nExtra }

// IsPage reports whether rec is a page: an HTML document served with
// status 200 under an http(s) URL, captured in full (response) or as a
// revisit of an identical payload.
func IsPage(rec *warcio.Record) bool {
	if rec.Type != "response" && rec.Type != "revisit" {
		return false
	}
	if rec.HTTP == nil || rec.HTTP.Status != 200 {
		return false
	}
	if m := strings.ToLower(rec.MIME); m != "text/html" && m != "application/xhtml+xml" {
		return false
	}
	u := strings.ToLower(rec.TargetURI)
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// PageTS is the timestamp pages.jsonl gives a capture date: to the second,
// the precision of the index's 14-digit timestamps, so that a replay tool
// asked for the page at its ts finds that capture and not a closer one of
// the same URL (a second crawl a few hundred milliseconds later).
func PageTS(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

func (ps *pageSet) consider(rec *warcio.Record, file string) error {
	if !IsPage(rec) {
		return nil
	}
	ts := PageTS(rec.Date)
	// The id names the record: two captures of a URL within one second
	// share url and ts, not id (wabac.js keeps pages by id).
	sum := sha256.Sum256(fmt.Appendf(nil, "%s %s %s %d", rec.TargetURI, ts, file, rec.Offset))
	p := Page{ID: hex.EncodeToString(sum[:16]), URL: rec.TargetURI, TS: ts, Seed: ps.seeds[rec.TargetURI]}
	if rec.Type == "response" {
		p.Title = Title(rec.Payload, rec.HTTP.Header.Get("Content-Encoding"))
	}
	if p.Title == "" {
		p.Title = rec.TargetURI
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	b = append(b, '\n')
	inScope := len(ps.seeds) == 0 || p.Seed
	if !inScope {
		if u, err := url.Parse(rec.TargetURI); err == nil {
			inScope = ps.seedHosts[strings.ToLower(u.Host)]
		}
	}
	w := ps.extraW
	if inScope {
		w = ps.mainW
		ps.nMain++
		if ps.main.url == "" || (p.Seed && !ps.mainIsSeed) {
			ps.main.url, ps.main.ts, ps.mainIsSeed = p.URL, p.TS, p.Seed
		}
	} else {
		ps.nExtra++
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("wacz: pages: %w", err)
	}
	return nil
}

func (ps *pageSet) writeMain(w io.Writer) error {
	return ps.copyTo(w, PagesHeader{Format: "json-pages-1.0", ID: "pages", Title: "All Pages"}, ps.mainF, ps.mainW)
}

func (ps *pageSet) writeExtra(w io.Writer) error {
	return ps.copyTo(w, PagesHeader{Format: "json-pages-1.0", ID: "extra-pages", Title: "Extra Pages"}, ps.extraF, ps.extraW)
}

func (ps *pageSet) copyTo(w io.Writer, h PagesHeader, f *os.File, bw *bufio.Writer) error {
	if err := bw.Flush(); err != nil {
		return err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

// Title returns the text of the <title> element of the start of an HTML
// document (payload, with its HTTP Content-Encoding undone: gzip, deflate,
// br), or "".
func Title(payload []byte, contentEncoding string) string {
	var r io.Reader = bytes.NewReader(payload)
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return ""
		}
		r = zr
	case "deflate":
		r = flate.NewReader(r)
	case "br":
		r = brotli.NewReader(r)
	default:
		return ""
	}
	z := html.NewTokenizer(io.LimitReader(r, titleBytes))
	in := false
	var title strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return cleanTitle(title.String())
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "title":
				in = true
			case "body":
				return cleanTitle(title.String())
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if string(name) == "title" {
				return cleanTitle(title.String())
			}
		case html.TextToken:
			if in {
				title.Write(z.Text())
			}
		}
	}
}

func cleanTitle(s string) string { return strings.Join(strings.Fields(s), " ") }
