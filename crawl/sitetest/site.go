package sitetest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Resource is one URL of the site.
type Resource struct {
	Path        string
	Status      int // 200 when zero
	ContentType string
	// Body is the entity as sent without Content-Encoding.
	Body []byte
	// Links are the site paths Body refers to (the crawler must find them).
	Links []string
	// Gzip serves the body gzip-encoded when the request accepts gzip.
	Gzip bool
	// Chunked sends the body with Transfer-Encoding: chunked.
	Chunked bool
	// Validators adds ETag and Last-Modified and answers matching
	// conditional requests with 304 Not Modified.
	Validators bool
	// Dynamic bodies change on every request (a counter is appended).
	Dynamic bool
	// Slow spreads sending the body over this duration.
	Slow time.Duration
	// RedirectTo answers 301 with this Location.
	RedirectTo string
	// Disallowed paths are excluded by robots.txt.
	Disallowed bool

	gz []byte
}

// Site is a set of resources served by Handler.
type Site struct {
	Resources []*Resource
	byPath    map[string]*Resource
	modTime   time.Time
	hits      atomic.Int64
	served    atomic.Int64
}

// Root is the path crawls start from.
const Root = "/"

// New returns the example site.
func New() *Site {
	rnd := rand.New(rand.NewPCG(7, 11))
	blob := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		return b
	}
	words := strings.Fields("archive web crawl record replay memento capture digest revisit payload library heritage collection harvest snapshot")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rnd.IntN(len(words))])
			if rnd.IntN(9) == 0 {
				b.WriteString(".\n")
			} else {
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	page := func(title string, links []string, imgs []string, para int) []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n", title)
		b.WriteString("<link rel=\"stylesheet\" href=\"/css/site.css\">\n<script src=\"/js/app.js\" defer></script>\n</head>\n<body>\n")
		fmt.Fprintf(&b, "<header><img src=\"/img/logo.png\" alt=\"logo\"><h1>%s</h1></header>\n<nav>\n", title)
		for _, l := range links {
			fmt.Fprintf(&b, "  <a href=\"%s\">%s</a>\n", l, strings.Trim(l, "/"))
		}
		b.WriteString("</nav>\n<main>\n")
		for _, im := range imgs {
			fmt.Fprintf(&b, "<figure><img src=\"%s\" alt=\"\"></figure>\n", im)
		}
		fmt.Fprintf(&b, "<p>%s</p>\n</main>\n<footer><a href=\"https://iipc.example.org/about\">IIPC</a></footer>\n</body>\n</html>\n", text(para))
		return b.Bytes()
	}
	logo := blob(6 << 10)
	common := []string{"/css/site.css", "/js/app.js", "/img/logo.png"}
	with := func(extra ...string) []string { return append(append([]string{}, common...), extra...) }

	homeLinks := []string{"/about.html", "/blog/", "/news.html", "/feed.html", "/old-about", "/missing.html", "/media/talk.bin", "/private/notes.html"}
	s := &Site{modTime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	s.Resources = []*Resource{
		{Path: "/", ContentType: "text/html; charset=utf-8", Body: page("Wayside example library", homeLinks, []string{"/img/banner.jpg"}, 3000),
			Links: with(append([]string{"/img/banner.jpg"}, homeLinks...)...), Validators: true},
		{Path: "/about.html", ContentType: "text/html; charset=utf-8", Body: page("About", []string{"/", "/blog/"}, []string{"/static/logo-v2.png"}, 2500),
			Links: with("/", "/blog/", "/static/logo-v2.png"), Validators: true},
		{Path: "/blog/", ContentType: "text/html; charset=utf-8", Body: page("Blog", []string{"/blog/2024/first-post.html", "/blog/2024/second-post.html"}, nil, 2500),
			Links: with("/blog/2024/first-post.html", "/blog/2024/second-post.html"), Gzip: true},
		{Path: "/blog/2024/first-post.html", ContentType: "text/html; charset=utf-8", Body: page("First post", []string{"/blog/"}, []string{"/img/photo.jpg"}, 4000),
			Links: with("/blog/", "/img/photo.jpg"), Validators: true},
		{Path: "/blog/2024/second-post.html", ContentType: "text/html; charset=utf-8", Body: page("Second post", []string{"/blog/"}, []string{"/img/photo.jpg"}, 4000),
			Links: with("/blog/", "/img/photo.jpg"), Chunked: true},
		{Path: "/news.html", ContentType: "text/html; charset=utf-8", Body: page("News", []string{"/"}, nil, 3000),
			Links: with("/"), Dynamic: true},
		{Path: "/feed.html", ContentType: "text/html; charset=utf-8", Body: page("Feed", []string{"/"}, nil, 6000),
			Links: with("/"), Gzip: true, Chunked: true},
		{Path: "/css/site.css", ContentType: "text/css", Body: []byte("body{font-family:serif;background:url(/img/bg.png)}\n/* " + text(3000) + " */\n"),
			Links: []string{"/img/bg.png"}, Validators: true, Gzip: true},
		{Path: "/js/app.js", ContentType: "application/javascript", Body: []byte("// " + strings.ReplaceAll(text(5000), "\n", "\n// ") + "\nconsole.log('wayside');\n"), Validators: true},
		{Path: "/img/logo.png", ContentType: "image/png", Body: logo},
		{Path: "/static/logo-v2.png", ContentType: "image/png", Body: logo},
		{Path: "/img/bg.png", ContentType: "image/png", Body: blob(3 << 10), Validators: true},
		{Path: "/img/banner.jpg", ContentType: "image/jpeg", Body: blob(20 << 10), Chunked: true},
		{Path: "/img/photo.jpg", ContentType: "image/jpeg", Body: blob(12 << 10), Validators: true},
		{Path: "/media/talk.bin", ContentType: "application/octet-stream", Body: blob(64 << 10), Slow: 300 * time.Millisecond},
		{Path: "/old-about", Status: http.StatusMovedPermanently, RedirectTo: "/about.html", Links: []string{"/about.html"}},
		{Path: "/missing.html", Status: http.StatusNotFound, ContentType: "text/html; charset=utf-8", Body: []byte("<!DOCTYPE html><title>Not found</title><h1>404</h1><p>" + text(2500) + "</p>\n")},
		{Path: "/private/notes.html", ContentType: "text/html; charset=utf-8", Body: page("Private", nil, nil, 500), Links: with(), Disallowed: true},
	}
	robots := "User-agent: *\nDisallow: /private/\n"
	s.Resources = append(s.Resources, &Resource{Path: "/robots.txt", ContentType: "text/plain", Body: []byte(robots)})
	s.index()
	return s
}

func (s *Site) index() {
	s.byPath = map[string]*Resource{}
	for _, r := range s.Resources {
		if r.Status == 0 {
			r.Status = http.StatusOK
		}
		if r.Gzip {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			zw.Write(r.Body)
			zw.Close()
			r.gz = b.Bytes()
		}
		s.byPath[r.Path] = r
	}
}

// Resource returns the resource at path, or nil.
func (s *Site) Resource(path string) *Resource { return s.byPath[path] }

// Paths returns all paths, sorted.
func (s *Site) Paths() []string {
	var ps []string
	for p := range s.byPath {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Requests returns how many requests the site answered.
func (s *Site) Requests() int64 { return s.hits.Load() }

// ETag returns the resource's entity tag.
func (r *Resource) ETag() string {
	return fmt.Sprintf("\"%x-%d\"", len(r.Body), r.Body[len(r.Body)/2])
}

// Served returns the payload bytes (entity after content-coding) a client
// sending acceptGzip gets; nil for a dynamic resource.
func (r *Resource) Served(acceptGzip bool) []byte {
	if r.Dynamic {
		return nil
	}
	if r.Gzip && acceptGzip {
		return r.gz
	}
	return r.Body
}

// ServeHTTP serves the site.
func (s *Site) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.hits.Add(1)
	r := s.byPath[req.URL.Path]
	if r == nil {
		http.Error(w, "no such page on the example site", http.StatusNotFound)
		return
	}
	h := w.Header()
	if r.RedirectTo != "" {
		h.Set("Location", r.RedirectTo)
		h.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(r.Status)
		fmt.Fprintf(w, "<a href=\"%s\">Moved Permanently</a>.\n", r.RedirectTo)
		return
	}
	if r.Validators {
		h.Set("ETag", r.ETag())
		h.Set("Last-Modified", s.modTime.Format(http.TimeFormat))
		if inm := req.Header.Get("If-None-Match"); inm != "" {
			if inm == r.ETag() || inm == "*" {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		} else if ims, err := http.ParseTime(req.Header.Get("If-Modified-Since")); err == nil && !s.modTime.After(ims) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	body := r.Body
	if r.Dynamic {
		body = append(append([]byte{}, body...), []byte(fmt.Sprintf("<!-- request %d at %s -->\n", s.served.Add(1), time.Now().Format(time.RFC3339Nano)))...)
	}
	if r.Gzip && strings.Contains(req.Header.Get("Accept-Encoding"), "gzip") {
		body = r.gz
		h.Set("Content-Encoding", "gzip")
		h.Set("Vary", "Accept-Encoding")
	}
	if r.ContentType != "" {
		h.Set("Content-Type", r.ContentType)
	}
	if !r.Chunked {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(r.Status)
	if req.Method == http.MethodHead {
		return
	}
	pieces := 1
	if r.Chunked || r.Slow > 0 {
		pieces = 8
	}
	step := (len(body) + pieces - 1) / pieces
	for i := 0; i < len(body); i += step {
		end := min(i+step, len(body))
		if _, err := w.Write(body[i:end]); err != nil {
			return
		}
		if pieces > 1 {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if r.Slow > 0 && end < len(body) {
			select {
			case <-time.After(r.Slow / time.Duration(pieces)):
			case <-req.Context().Done():
				return
			}
		}
	}
}

// Server is the site listening on a loopback port.
type Server struct {
	Site *Site
	URL  string // "http://127.0.0.1:PORT"
	srv  *http.Server
	ln   net.Listener

	holds holds
}

// Start serves site on 127.0.0.1 on a free port.
func Start(site *Site) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sitetest: listen: %w", err)
	}
	s := &Server{Site: site, URL: "http://" + ln.Addr().String(), ln: ln}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.holds.wait(w, r) {
			site.ServeHTTP(w, r)
		}
	})}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server (answers still held by Hold are not sent).
func (s *Server) Close() error {
	s.holds.close()
	return s.srv.Close()
}

// URLs returns the absolute URL of every path of the site, in Paths order.
func (s *Server) URLs() []string {
	var out []string
	for _, p := range s.Site.Paths() {
		out = append(out, s.URL+p)
	}
	return out
}

// Add adds (or replaces) a resource; call it before serving.
func (s *Site) Add(r *Resource) {
	for i, old := range s.Resources {
		if old.Path == r.Path {
			s.Resources = append(s.Resources[:i], s.Resources[i+1:]...)
			break
		}
	}
	s.Resources = append(s.Resources, r)
	s.index()
}

// Blob returns n deterministic pseudo-random bytes (incompressible).
func Blob(seed uint64, n int) []byte {
	rnd := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := rnd.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// NewLarge returns a site for throughput measurements: a root page linking
// n resources of about size bytes each, alternating HTML text pages
// (compressible) and binary blobs (incompressible), every payload distinct.
func NewLarge(n, size int) *Site {
	rnd := rand.New(rand.NewPCG(42, 43))
	words := strings.Fields("archive web crawl record replay memento capture digest revisit payload library heritage collection harvest snapshot preservation")
	s := &Site{modTime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	var root bytes.Buffer
	root.WriteString("<!DOCTYPE html><html><head><title>Large site</title></head><body>\n")
	var links []string
	for i := 0; i < n; i++ {
		var r *Resource
		if i%2 == 0 {
			var b bytes.Buffer
			fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>Page %d</title></head><body><p>", i)
			for b.Len() < size {
				b.WriteString(words[rnd.IntN(len(words))])
				b.WriteByte(' ')
				if rnd.IntN(12) == 0 {
					fmt.Fprintf(&b, "%d.</p>\n<p>", rnd.Uint32())
				}
			}
			b.WriteString("</p></body></html>\n")
			r = &Resource{Path: fmt.Sprintf("/p/%d.html", i), ContentType: "text/html; charset=utf-8", Body: b.Bytes()}
		} else {
			r = &Resource{Path: fmt.Sprintf("/b/%d.bin", i), ContentType: "application/octet-stream", Body: Blob(uint64(i), size)}
		}
		links = append(links, r.Path)
		fmt.Fprintf(&root, "<a href=\"%s\">%d</a>\n", r.Path, i)
		s.Resources = append(s.Resources, r)
	}
	root.WriteString("</body></html>\n")
	s.Resources = append(s.Resources, &Resource{Path: "/", ContentType: "text/html; charset=utf-8", Body: root.Bytes(), Links: links})
	s.index()
	return s
}
