// Command warcsite is benchmark tooling for scripts/bench-characterize.sh,
// not part of the product: it serves the HTTP responses of a WARC file (by
// default the warcgen benchmark WARC: HTML, CSS, JavaScript, JSON, SVG,
// JPEG, PNG, GIF, WebP, WOFF2, some of it gzip-encoded, 404 pages) over
// loopback HTTP, so `wayside crawl` can crawl a site with a realistic
// format mix.
//
//	warcsite [-max-mb N] WARC     # prints the site's URL on the first line of stdout
//
// Every response record with status 200 or 404 is served once, under its
// original host and path ("https://cdn.example.com/a/b.js?v=3" at
// "/cdn.example.com/a/b.js?v=3", so the URL keeps its extension), with its
// status, Content-Type, Content-Encoding and payload as recorded. The root
// links to index pages of 200 links each. Payloads seen again under other
// URLs are served there too (the crawl stores them as revisits, as a real
// crawl would); a URL seen twice keeps its first capture. Redirects are not
// served. -max-mb stops reading once that many payload megabytes are held.
package main

import (
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wayside-archive/wayside/warcio"
)

// page is one served response.
type page struct {
	status   int
	ctype    string
	encoding string
	body     []byte
}

const perIndex = 200

func main() {
	maxMB := flag.Float64("max-mb", 0, "stop reading the WARC once this many payload `MB` are held (0: all of it)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: warcsite [-max-mb N] WARC")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	pages, order, held, err := load(flag.Arg(0), int64(*maxMB*1e6))
	if err != nil {
		fmt.Fprintln(os.Stderr, "warcsite:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "warcsite:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: handler(pages, order)}
	go srv.Serve(ln)
	fmt.Printf("http://%s/\n", ln.Addr())
	fmt.Fprintf(os.Stderr, "warcsite: %d URLs, %.1f MB of payloads, on http://%s/\n", len(order), float64(held)/1e6, ln.Addr())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	srv.Close()
}

// load reads the responses of the WARC file at path.
func load(path string, maxBytes int64) (map[string]*page, []string, int64, error) {
	r, err := warcio.Open(path, warcio.Options{KeepPayload: 64 << 20, SkipPayloadDigest: true})
	if err != nil {
		return nil, nil, 0, err
	}
	defer r.Close()
	pages := map[string]*page{}
	var order []string
	var held int64
	for maxBytes <= 0 || held < maxBytes {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, 0, err
		}
		if rec.Type != "response" || rec.HTTP == nil || (rec.Status() != 200 && rec.Status() != 404) {
			continue
		}
		u, err := url.Parse(rec.TargetURI)
		if err != nil || u.Host == "" {
			continue
		}
		key := "/" + u.Host + u.EscapedPath()
		if u.RawQuery != "" {
			key += "?" + u.RawQuery
		}
		if _, ok := pages[key]; ok {
			continue
		}
		pages[key] = &page{status: rec.Status(), ctype: rec.HTTP.Header.Get("Content-Type"),
			encoding: rec.HTTP.Header.Get("Content-Encoding"), body: rec.Payload}
		order = append(order, key)
		held += int64(len(rec.Payload))
	}
	if len(order) == 0 {
		return nil, nil, 0, fmt.Errorf("%s holds no HTTP response to serve", path)
	}
	return pages, order, held, nil
}

func handler(pages map[string]*page, order []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			key += "?" + r.URL.RawQuery
		}
		switch {
		case key == "/":
			var b strings.Builder
			b.WriteString("<!DOCTYPE html><html><head><title>warcsite</title></head><body>\n")
			for i := 0; i*perIndex < len(order); i++ {
				fmt.Fprintf(&b, "<a href=\"/index/%d\">%d</a>\n", i, i)
			}
			b.WriteString("</body></html>\n")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, b.String())
			return
		case strings.HasPrefix(key, "/index/"):
			var i int
			if _, err := fmt.Sscanf(key, "/index/%d", &i); err != nil || i < 0 || i*perIndex >= len(order) {
				http.NotFound(w, r)
				return
			}
			var b strings.Builder
			b.WriteString("<!DOCTYPE html><html><head><title>index</title></head><body>\n")
			for _, k := range order[i*perIndex : min((i+1)*perIndex, len(order))] {
				fmt.Fprintf(&b, "<a href=\"%s\">x</a>\n", html.EscapeString(k))
			}
			b.WriteString("</body></html>\n")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, b.String())
			return
		}
		p, ok := pages[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if p.ctype != "" {
			w.Header().Set("Content-Type", p.ctype)
		}
		if p.encoding != "" {
			w.Header().Set("Content-Encoding", p.encoding)
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(p.body)))
		w.WriteHeader(p.status)
		w.Write(p.body)
	})
}
