package testarchive

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/replay"
)

// Memento is one archived response.
type Memento struct {
	URIR     string
	Datetime time.Time
	Status   int
	Header   http.Header
	Body     []byte
}

// Timestamp returns the 14-digit timestamp of m.
func (m *Memento) Timestamp() string { return m.Datetime.UTC().Format(tsLayout) }

const tsLayout = "20060102150405"

// Fault changes what the server answers for one URI-R, in rewritten and raw
// replay alike (it models a change on the archive's side).
type Fault struct {
	// Status, when non-zero, replaces the archived status (and the body
	// with a short error page).
	Status int
	// Header sets or replaces original headers (exposed as X-Archive-Orig-*).
	Header map[string]string
	// RedirectTo, a 14-digit timestamp, redirects every request for the
	// URI-R to that memento (temporally-closest redirect gone elsewhere).
	RedirectTo string
	// Body replaces the archived entity body.
	Body []byte
	// Hang makes the server never answer, until the client gives up.
	Hang bool
	// ExtraHTML is appended to an HTML page before rewriting (e.g. an extra
	// <img>, or a script that reaches the live web).
	ExtraHTML string
	// AliasLinks makes the page's rewritten links use the alias host name.
	AliasLinks bool
	// RawRewritten makes the id_ modifier serve the rewritten body, as
	// archives that do not support raw replay do.
	RawRewritten bool
	// Cached marks every answer as served by an archive-side cache that
	// ignores the client's Cache-Control: no-cache (see faults.go).
	Cached bool
	// SoftNotFound answers 200 with an HTML "not archived" page instead of
	// the memento: a soft 404 (see faults.go).
	SoftNotFound bool
}

// Server is a running test archive. Create it with New.
type Server struct {
	coll     string
	ln       net.Listener
	srv      *http.Server
	port     string
	closing  chan struct{}
	mu       sync.Mutex
	mementos map[string][]*Memento
	faults   map[string]Fault
	requests int
}

// New starts a server for collection coll (e.g. "web") on 127.0.0.1 with a
// random port.
func New(coll string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testarchive: listen: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := &Server{coll: coll, ln: ln, port: port, closing: make(chan struct{}),
		mementos: map[string][]*Memento{}, faults: map[string]Fault{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server, releasing hung handlers.
func (s *Server) Close() error {
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	return s.srv.Close()
}

// Host is the primary host name (127.0.0.1:port).
func (s *Server) Host() string { return "127.0.0.1:" + s.port }

// AliasHost is the second host name of the same archive (localhost:port).
func (s *Server) AliasHost() string { return "localhost:" + s.port }

// URL returns the base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return "http://" + s.Host() }

// URIM returns the URI-M of urir at timestamp ts.
func (s *Server) URIM(ts, urir string) string {
	return fmt.Sprintf("%s/%s/%s/%s", s.URL(), s.coll, ts, urir)
}

// Requests returns how many requests the server has answered or is answering.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Add stores a memento.
func (s *Server) Add(m Memento) {
	k := key(m.URIR)
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := m
	list := append(s.mementos[k], &cp)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Datetime.Before(list[j].Datetime) })
	s.mementos[k] = list
}

// Mementos returns the URI-Rs held, sorted.
func (s *Server) Mementos() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.mementos {
		out = append(out, l[0].URIR)
	}
	sort.Strings(out)
	return out
}

// Inject sets the fault for urir, replacing any earlier one.
func (s *Server) Inject(urir string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[key(urir)] = f
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string]Fault{}
}

// key normalises a URI-R for lookup: lowercase scheme and host, no
// fragment, "/" for an empty path.
func key(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Scheme = strings.ToLower(p.Scheme)
	p.Host = strings.ToLower(p.Host)
	p.Fragment = ""
	if p.Path == "" {
		p.Path = "/"
	}
	return p.String()
}

var tsSeg = regexp.MustCompile(`^([0-9]{1,14})([a-z]{2}_)?$`)

// ServeHTTP routes /static/, URI-Ms and referer fallbacks.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	if r.Host != s.Host() && r.Host != s.AliasHost() {
		http.Error(w, "testarchive: unknown Host "+r.Host, http.StatusMisdirectedRequest)
		return
	}
	p := r.URL.EscapedPath()
	if strings.HasPrefix(p, "/static/") {
		s.serveStatic(w, r)
		return
	}
	prefix := "/" + s.coll + "/"
	if strings.HasPrefix(p, prefix) {
		rest := p[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i > 0 {
			if m := tsSeg.FindStringSubmatch(rest[:i]); m != nil {
				urir := rest[i+1:]
				if r.URL.RawQuery != "" {
					urir += "?" + r.URL.RawQuery
				}
				s.serveMemento(w, r, m[1], m[2], fixScheme(urir))
				return
			}
		}
	}
	s.refererFallback(w, r)
}

// fixScheme restores "http://" from the "http:/" form that path cleaning
// produces.
func fixScheme(u string) string {
	for _, sc := range []string{"http:/", "https:/"} {
		if strings.HasPrefix(u, sc) && !strings.HasPrefix(u, sc+"/") {
			return sc + "/" + u[len(sc):]
		}
	}
	if !strings.Contains(u, "://") {
		return "http://" + u
	}
	return u
}

// refererFallback redirects a host-relative request that escaped rewriting
// to the URI-M it meant, using the URI-M in the Referer.
func (s *Server) refererFallback(w http.ResponseWriter, r *http.Request) {
	if loc, ok := replay.EscapedTarget(r.Referer(), "/"+s.coll+"/", r.URL); ok {
		redirect(w, loc)
		return
	}
	http.Error(w, "testarchive: not a URI-M and no memento Referer", http.StatusNotFound)
}

// closest returns the memento of urir closest in time to ts.
func (s *Server) closest(urir, ts string) *Memento {
	for len(ts) < 14 {
		ts += "0"
	}
	want, err := time.Parse(tsLayout, ts)
	if err != nil {
		want = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *Memento
	var bestD time.Duration
	for _, m := range s.mementos[key(urir)] {
		d := m.Datetime.Sub(want)
		if d < 0 {
			d = -d
		}
		if best == nil || d < bestD {
			best, bestD = m, d
		}
	}
	return best
}

func (s *Server) fault(urir string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.faults[key(urir)]
	return f, ok
}

func (s *Server) linkHeader(r *http.Request, urir string) string {
	base := "http://" + r.Host + "/" + s.coll
	return fmt.Sprintf(`<%s>; rel="original", <%s/%s>; rel="timegate", <%s/timemap/link/%s>; rel="timemap"; type="application/link-format"`, urir, base, urir, base, urir)
}

func (s *Server) serveMemento(w http.ResponseWriter, r *http.Request, ts, mod, urir string) {
	f, hasFault := s.fault(urir)
	if hasFault && f.Hang {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		case <-time.After(5 * time.Minute):
		}
		return
	}
	m := s.closest(urir, ts)
	if m == nil {
		w.Header().Set("Link", s.linkHeader(r, urir))
		http.Error(w, "testarchive: no memento of "+urir, http.StatusNotFound)
		return
	}
	target := m.Timestamp()
	if hasFault && f.RedirectTo != "" {
		target = f.RedirectTo
	}
	if target != ts {
		w.Header().Set("Link", s.linkHeader(r, urir))
		w.Header().Set("Vary", "accept-datetime")
		redirect(w, fmt.Sprintf("/%s/%s%s/%s", s.coll, target, mod, urir))
		return
	}
	if hasFault && f.RedirectTo != "" {
		// The forced target may not be an exact memento: serve the closest.
		m = s.closest(urir, target)
	}
	status, body := m.Status, m.Body
	hdr := m.Header.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	if hasFault {
		for k, v := range f.Header {
			hdr.Set(k, v)
		}
		if f.Body != nil {
			body = f.Body
		}
		if f.Status != 0 {
			status = f.Status
			body = []byte(fmt.Sprintf("testarchive: injected status %d\n", f.Status))
			hdr.Set("Content-Type", "text/plain")
		}
	}
	out := w.Header()
	rewritten := mod != replay.ModRaw || (hasFault && f.RawRewritten)
	var rw *replay.Rewriter
	if mod != replay.ModRaw {
		rw, _ = replay.NewRewriter("/"+s.coll+"/", ts, urir)
	}
	for k, vs := range replay.ArchivedHeaders(hdr, rw, false) {
		out[k] = vs
	}
	out.Set("Memento-Datetime", m.Datetime.UTC().Format(http.TimeFormat))
	out.Set("Link", s.linkHeader(r, urir))
	out.Set("Cache-Control", "no-store")
	out.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if rewritten {
		body = s.rewrite(r, urir, ts, hdr.Get("Content-Type"), body, f)
	}
	if hasFault {
		status, body = guidelineFaults(f, out, urir, status, body)
	}
	out.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// serveStatic serves replay infrastructure: a banner image and a replay
// script, both different on every request.
func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/static/replay.js":
		w.Header().Set("Content-Type", "application/javascript")
		fmt.Fprintf(w, "/* testarchive replay %d */\nwindow.__replayTS = %q;\n", rand.Int64(), time.Now().Format(time.RFC3339Nano))
	case "/static/banner.png":
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBytes(uint8(rand.IntN(256)), uint8(rand.IntN(256)), 0))
	default:
		http.NotFound(w, r)
	}
}

// redirect answers 302 with loc as is (http.Redirect would clean the
// "http://" inside a URI-M path down to "http:/").
func redirect(w http.ResponseWriter, loc string) {
	w.Header().Set("Location", loc)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	fmt.Fprintf(w, "Found: %s\n", loc)
}

// Pages returns the URI-Ms (at their own timestamps) of every HTML memento
// with status 200, sorted: ready-made sweep targets.
func (s *Server) Pages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.mementos {
		for _, m := range l {
			if m.Status == http.StatusOK && strings.HasPrefix(strings.ToLower(m.Header.Get("Content-Type")), "text/html") {
				out = append(out, fmt.Sprintf("%s/%s/%s/%s", s.URL(), s.coll, m.Timestamp(), m.URIR))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
