package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/replay"
	"golang.org/x/net/netutil"
)

// PublicConfig is the public, read-only front of the archive: listeners
// that need no token and serve only what readers may see (replay,
// TimeMaps, TimeGate, CDX reads, the MementoMap), each an access point of
// the access rules, with archived content on an origin of its own.
type PublicConfig struct {
	// Listen is the address of the public API listener (CDX reads,
	// TimeMaps, TimeGate, MementoMap); empty: no public front.
	Listen string `yaml:"listen"`
	// ContentListen is the address archived content (mementos) is served
	// from: an origin of its own, so archived scripts never run on an
	// origin that answers anything else. Default: Listen's host, any port.
	ContentListen string `yaml:"content_listen"`
	// URL and ContentURL are the absolute URLs clients reach the two
	// listeners at (behind a proxy: e.g. https://archive.example.org and
	// https://content.example.org); default http://<bound address>.
	URL        string `yaml:"url"`
	ContentURL string `yaml:"content_url"`
	// AccessPoint is the access point of this front in the rules. Default
	// "public".
	AccessPoint string `yaml:"access_point"`
	// AllowNonLoopback permits addresses that are not loopback.
	AllowNonLoopback bool `yaml:"allow_non_loopback"`
	// AccessPoints are more fronts, each its own access point (a reading
	// room's terminals reach its listener only).
	AccessPoints []PublicPoint `yaml:"access_points"`
}

// PublicPoint is one more public front: an access point with its two
// listeners.
type PublicPoint struct {
	Name          string `yaml:"name"`
	Listen        string `yaml:"listen"`
	ContentListen string `yaml:"content_listen"`
	URL           string `yaml:"url"`
	ContentURL    string `yaml:"content_url"`
}

// points lists every public front, the main one first.
func (c *PublicConfig) points() []PublicPoint {
	var out []PublicPoint
	if c.Listen != "" {
		name := c.AccessPoint
		if name == "" {
			name = "public"
		}
		out = append(out, PublicPoint{Name: name, Listen: c.Listen, ContentListen: c.ContentListen, URL: c.URL, ContentURL: c.ContentURL})
	}
	return append(out, c.AccessPoints...)
}

// point returns the front whose access point is name, or nil.
func (c *PublicConfig) point(name string) *PublicPoint {
	for _, p := range c.points() {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// check validates the public keys (called by Config.Validate).
func (c *PublicConfig) check(accessEnabled bool, add func(key, msg string)) {
	for i, p := range c.points() {
		key := "public"
		if c.Listen == "" || i > 0 {
			j := i
			if c.Listen != "" {
				j--
			}
			key = fmt.Sprintf("public.access_points[%d]", j)
			if p.Name == "" {
				add(key+".name", "missing")
			}
		}
		if !accessEnabled {
			add(key+".listen", "the public front serves the capture index: access.index must not be \"-\"")
		}
		for _, a := range []struct{ k, v string }{{".listen", p.Listen}, {".content_listen", p.ContentListen}} {
			if a.v == "" {
				if a.k == ".listen" {
					add(key+a.k, "missing")
				}
				continue
			}
			host, _, err := net.SplitHostPort(a.v)
			if err != nil {
				add(key+a.k, fmt.Sprintf("%q: %v", a.v, err))
				continue
			}
			if !c.AllowNonLoopback && !isLoopbackHost(host) {
				add(key+a.k, fmt.Sprintf("%q is not a loopback address (set public.allow_non_loopback: true to bind it anyway)", a.v))
			}
		}
		if p.ContentListen != "" && p.ContentListen == p.Listen {
			add(key+".content_listen", "must differ from listen: archived content gets an origin of its own")
		}
		for _, u := range []struct{ k, v string }{{".url", p.URL}, {".content_url", p.ContentURL}} {
			if u.v != "" && !strings.HasPrefix(u.v, "http://") && !strings.HasPrefix(u.v, "https://") {
				add(key+u.k, fmt.Sprintf("%q is not an http(s) URL", u.v))
			}
		}
		if p.URL != "" && p.URL == p.ContentURL {
			add(key+".content_url", "must differ from url: archived content gets an origin of its own")
		}
	}
}

// front is a running public front.
type front struct {
	PublicPoint
	apiAddr, contentAddr net.Addr
	apiURL, contentURL   string
}

// PublicFront is a public front as /v1/access reports it.
type PublicFront struct {
	AccessPoint string `json:"access_point"`
	URL         string `json:"url"`
	ContentURL  string `json:"content_url"`
}

// startPublic binds the public fronts' listeners and serves them until
// stop is called.
func (s *Server) startPublic(ctx context.Context) (stop func(context.Context), err error) {
	var servers []*http.Server
	var lns []net.Listener
	stop = func(sctx context.Context) {
		for _, srv := range servers {
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
			}
		}
	}
	fail := func(err error) (func(context.Context), error) {
		for _, l := range lns {
			l.Close()
		}
		return nil, fmt.Errorf("sidecar: public: %w", err)
	}
	var fronts []*front
	for _, p := range s.cfg.Public.points() {
		f := &front{PublicPoint: p}
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, "tcp", p.Listen)
		if err != nil {
			return fail(err)
		}
		lns = append(lns, l)
		caddr := p.ContentListen
		if caddr == "" {
			host, _, _ := net.SplitHostPort(p.Listen)
			caddr = net.JoinHostPort(host, "0")
		}
		cl, err := lc.Listen(ctx, "tcp", caddr)
		if err != nil {
			return fail(err)
		}
		lns = append(lns, cl)
		f.apiAddr, f.contentAddr = l.Addr(), cl.Addr()
		f.apiURL, f.contentURL = strings.TrimSuffix(p.URL, "/"), strings.TrimSuffix(p.ContentURL, "/")
		if f.apiURL == "" {
			f.apiURL = "http://" + l.Addr().String()
		}
		if f.contentURL == "" {
			f.contentURL = "http://" + cl.Addr().String()
		}
		fronts = append(fronts, f)
	}
	lim := s.cfg.Limits
	var wg sync.WaitGroup
	for i, l := range lns {
		f, content := fronts[i/2], i%2 == 1
		srv := &http.Server{
			Handler:           s.publicHandler(f, content),
			ReadHeaderTimeout: lim.ReadHeaderTimeout,
			ReadTimeout:       lim.ReadTimeout,
			IdleTimeout:       lim.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return ctx },
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
		servers = append(servers, srv)
		wg.Add(1)
		go func(l net.Listener) {
			defer wg.Done()
			if err := srv.Serve(netutil.LimitListener(l, lim.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Warn("sidecar: public listener failed", "addr", l.Addr().String(), "err", err)
			}
		}(l)
	}
	s.mu.Lock()
	s.fronts = fronts
	s.mu.Unlock()
	for _, f := range fronts {
		s.log.Info("sidecar: public front", "access_point", f.Name, "url", f.apiURL, "content_url", f.contentURL)
	}
	if s.cfg.Listen.TCP != "" {
		s.log.Info("sidecar: mementos asked of listen.tcp", "served", s.tcpReplay())
	}
	return func(sctx context.Context) { stop(sctx); wg.Wait() }, nil
}

// tcpReplay says how listen.tcp answers memento requests (AccessState,
// the start-up log): redirected to a front's content origin, or served
// in an opaque origin.
func (s *Server) tcpReplay() string {
	if f := s.contentFront(); f != nil {
		return "redirected to the content origin " + f.contentURL + " (listen.content_front: " + f.Name + ")"
	}
	return "sandboxed: served in an opaque origin (CSP sandbox allow-scripts), set listen.content_front to serve them from a content origin"
}

// contentFront is the running front listen.content_front names, or nil.
func (s *Server) contentFront() *front {
	name := s.listen().ContentFront
	if name == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.fronts {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// PublicFronts returns the running public fronts.
func (s *Server) PublicFronts() []PublicFront {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PublicFront
	for _, f := range s.fronts {
		out = append(out, PublicFront{AccessPoint: f.Name, URL: f.apiURL, ContentURL: f.contentURL})
	}
	return out
}

// publicHandler serves one public listener: the API side (CDX reads,
// TimeMaps, TimeGate, MementoMap, the aggregate routes, /healthz; mementos
// are redirected to the content origin) or the content side (mementos only). Nothing else
// exists there: no write, admin, dedup, metrics or ingest route, whatever
// the path.
func (s *Server) publicHandler(f *front, content bool) http.Handler {
	kind := "public"
	if content {
		kind = "content"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		name := s.servePublic(sw, r, f, content)
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		s.metrics.ObserveRequest(kind+"_"+name, r.Method, code, time.Since(start))
	})
}

func (s *Server) servePublic(w http.ResponseWriter, r *http.Request, f *front, content bool) string {
	h := w.Header()
	if !content {
		// Public reads: any page may read TimeMaps and CDX answers (no
		// credentials are involved).
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "Link, Location, Memento-Datetime, Vary")
		h.Set("Link", s.mapLink)
	}
	switch {
	case r.Method == http.MethodOptions && !content:
		h.Set("Access-Control-Allow-Methods", "GET, HEAD")
		h.Set("Access-Control-Allow-Headers", "Accept-Datetime")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return "preflight"
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		h.Set("Allow", "GET, HEAD")
		refuse(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("method %s: this listener is read-only (GET, HEAD)", r.Method))
		return "denied"
	case r.ContentLength != 0 || len(r.TransferEncoding) > 0:
		refuse(w, r, http.StatusBadRequest, "a read-only request has no body")
		return "denied"
	case r.Header.Get("Service-Worker") != "":
		refuse(w, r, http.StatusForbidden, "Service Worker scripts are not served from this archive")
		return "denied"
	}
	p := r.URL.Path
	if acc := s.acc(); acc != nil {
		if _, ok := acc.h.Collection(r.URL.EscapedPath()); ok {
			// Framed: a browser's top-level navigation shows the memento
			// in a sandboxed frame it cannot navigate out of.
			v := replay.View{AccessPoint: f.Name, APIURL: f.apiURL, Framed: true}
			if content {
				v.MementosOnly = true
			} else {
				v.ContentURL = f.contentURL
			}
			if err := acc.h.ServeView(w, r, v); err != nil {
				var e *replay.Error
				if errors.As(err, &e) {
					replay.WriteError(w, err)
				} else if !errors.Is(err, context.Canceled) {
					s.log.Warn("public request failed", "err", err)
					writeError(w, http.StatusInternalServerError, "the archive could not answer (logged)")
				}
			}
			if content {
				return "memento"
			}
			return "access"
		}
	}
	if h := s.aggregator(); !content && h != nil && strings.HasPrefix(p, aggregateRoot) {
		h.mu.RLock()
		a := h.a
		var err error
		if a != nil {
			rest := strings.TrimPrefix(r.URL.EscapedPath(), aggregateRoot)
			err = a.Serve(w, r, rest, f.apiURL+strings.TrimSuffix(aggregateRoot, "/"))
		}
		h.mu.RUnlock()
		if a != nil {
			if err != nil {
				replay.WriteError(w, err)
			}
			return "aggregate"
		}
	}
	if !content {
		switch p {
		case "/healthz":
			s.handleHealthz(w, r, nil)
			return "healthz"
		case api.PathMementoMap:
			if err := s.handlePublicMap(w, r, f.Name); err != nil {
				var ae *apiError
				if errors.As(err, &ae) {
					writeError(w, ae.code, ae.msg)
				} else {
					writeError(w, http.StatusInternalServerError, err.Error())
				}
			}
			return "mementomap"
		}
	} else if acc := s.acc(); acc != nil {
		if loc, ok := acc.h.RefererTarget(r, ""); ok {
			h.Set("Location", loc)
			w.WriteHeader(http.StatusFound)
			return "replay_referer"
		}
	}
	refuse(w, r, http.StatusNotFound, fmt.Sprintf("no such route %s", p))
	return "unknown"
}

// handlePublicMap serves the live MementoMap to a public front without
// the keys the rules exclude at its access point (rules without date
// conditions: the map has no dates), so the map reveals no URL the
// archive hides.
func (s *Server) handlePublicMap(w http.ResponseWriter, r *http.Request, point string) error {
	l, err := s.liveMap()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rs := s.AccessRules()
	out := io.Writer(w)
	var lf *lineFilter
	if rs.Len() > 0 {
		chk := rs.Checker(point)
		lf = &lineFilter{w: w, keep: func(line []byte) bool {
			if len(line) == 0 || line[0] == '!' {
				return true
			}
			key, _, _ := bytes.Cut(line, []byte(" "))
			k := strings.TrimSuffix(string(key), "*")
			return chk.Decide(k, time.Time{}).Visible()
		}}
		out = lf
	}
	if _, err := l.WriteTo(out); err != nil {
		s.log.Warn("mementomap: serving the map failed", "err", err)
	} else if lf != nil {
		lf.flush()
	}
	return nil
}

// lineFilter passes the lines keep accepts; a line longer than 1 MiB is
// passed whole without being judged (map lines are short).
type lineFilter struct {
	w    io.Writer
	keep func([]byte) bool
	buf  []byte
	err  error
}

func (f *lineFilter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && f.err == nil {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			f.buf = append(f.buf, p...)
			if len(f.buf) > 1<<20 {
				_, f.err = f.w.Write(f.buf)
				f.buf = f.buf[:0]
			}
			break
		}
		line := p[:i+1]
		if len(f.buf) > 0 {
			f.buf = append(f.buf, line...)
			line = f.buf
		}
		if f.keep(bytes.TrimRight(line, "\r\n")) {
			_, f.err = f.w.Write(line)
		}
		f.buf = f.buf[:0]
		p = p[i+1:]
	}
	if f.err != nil {
		return 0, f.err
	}
	return n, nil
}

func (f *lineFilter) flush() {
	if len(f.buf) > 0 && f.err == nil && f.keep(f.buf) {
		f.w.Write(f.buf)
	}
}
