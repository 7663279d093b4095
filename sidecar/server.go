package sidecar

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/ingest"
	"golang.org/x/net/netutil"
)

// Options are the parts a Server is built from besides its Config.
type Options struct {
	// Index is the dedup index the API and the CDX endpoint serve and ingest
	// writes to. Required. The caller opens and closes it.
	Index dedupindex.Index
	// Logger receives structured logs. Default: discard.
	Logger *slog.Logger
	// Version is reported by /v1/status.
	Version string
	// LoadConfig reads the configuration again for a reload (SIGHUP in
	// `wayside serve`, POST /v1/admin/reload): the config file with the
	// command line's overrides, completed by Defaults. nil: the daemon
	// cannot reload (the route answers 501).
	LoadConfig func() (Config, error)
}

// Server is the sidecar daemon. Build it with New, run it with Run.
type Server struct {
	cfg     Config
	idx     dedupindex.Index
	log     *slog.Logger
	metrics *Metrics
	version string
	started time.Time

	routes         map[string]map[string]*route // path → method → route
	metricsHandler http.Handler
	mapLink        string   // Link header announcing the MementoMap
	linkHdr        []string // {mapLink}, shared by every answer (see hdrJSON)

	leases *leases
	ingest *ingest.Ingester
	cons   *consumers.Set
	fixity *FixityService
	access *access // nil when access.index is "-"
	mig    migrateJobs

	agg       *aggregate.Aggregator // nil unless aggregate.archives is set
	aggRoutes map[string]*route

	mu        sync.Mutex
	fronts    []*front // the public fronts, once listening
	tcpAddr   net.Addr
	unixPath  string
	allowHost map[string]bool

	reload reloader      // configuration reload (reload.go)
	ready  chan struct{} // closed once Run listens and ingests
}

// New builds a server from a validated config.
func New(cfg Config, opts Options) (*Server, error) {
	if opts.Index == nil {
		return nil, errors.New("sidecar: new: no index")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.CheckDirs(); err != nil {
		return nil, err
	}
	if err := cfg.PrepareDirs(opts.Logger); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		idx:     opts.Index,
		log:     opts.Logger,
		metrics: NewMetrics(),
		version: opts.Version,
		started: time.Now(),
		leases:  newLeases(cfg.Limits.ClaimTTL),
		ready:   make(chan struct{}),
	}
	var err error
	if s.cons, err = consumers.Open(cfg.ConsumersConfig(s.log)); err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	ic := cfg.IngestConfig(s.cons.CatchUp, s.metrics.Ingest, s.log)
	ic.ObserveBatch = func(d time.Duration) { s.metrics.ingestBatches.Observe(d.Seconds()) }
	s.ingest, err = ingest.New(ic, s.idx, s.cons.Fanout)
	s.reload.init(cfg, opts.LoadConfig)
	if err == nil {
		s.fixity, err = newFixityService(cfg.Fixity, s.metrics, s.log)
	}
	if err != nil {
		s.cons.Close()
		return nil, err
	}
	s.buildRoutes()
	s.mapLink = `</mementomap>; rel="mementomap"`
	if cfg.Map.PublicURL != "" {
		s.mapLink = "<" + cfg.Map.PublicURL + `>; rel="mementomap"`
	}
	s.linkHdr = []string{s.mapLink}
	if s.access, err = s.openAccess(); err != nil {
		s.cons.Close()
		return nil, err
	}
	if err := s.openAggregate(); err != nil {
		s.cons.Close()
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	s.metrics.reg.MustRegister(newStateCollector(s))
	if s.agg != nil {
		s.metrics.reg.MustRegister(s.agg)
	}
	s.metricsHandler = s.metrics.handler(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	return s, nil
}

// Ready is closed once Run has bound its listeners and started ingest
// (what `wayside serve` reports to systemd as READY=1).
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Metrics returns the server's counters.
func (s *Server) Metrics() *Metrics { return s.metrics }

// TCPAddr returns the bound TCP address once Run has started listening, or nil.
func (s *Server) TCPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpAddr
}

type listenerKind int

const (
	viaUnix listenerKind = iota + 1
	viaTCP
)

// reqInfo is what the router learned about a request before the handler.
type reqInfo struct {
	kind      listenerKind
	hexDigest bool // the /hex prefix asks for hex digests in CDX answers
	pathToken bool // authorised by the read-only CDX token in the path
	// point is the access point of an access.tokens token the request
	// carries; such a request reaches the access routes only.
	point string
}

type route struct {
	name   string
	method string
	path   string
	open   bool // reachable without a token (still Host/Origin checked)
	cdx    bool // reachable with the read-only CDX path token
	// maxBody bounds the request body (default limits.max_body_bytes).
	maxBody int64
	h       func(w http.ResponseWriter, r *http.Request, ri *reqInfo) error
}

func (s *Server) add(rt *route) {
	if s.routes == nil {
		s.routes = map[string]map[string]*route{}
	}
	m := s.routes[rt.path]
	if m == nil {
		m = map[string]*route{}
		s.routes[rt.path] = m
	}
	m[rt.method] = rt
	if rt.method == http.MethodGet {
		if _, ok := m[http.MethodHead]; !ok {
			m[http.MethodHead] = rt
		}
	}
}

func (s *Server) buildRoutes() {
	s.add(&route{name: "healthz", method: "GET", path: "/healthz", open: true, h: s.handleHealthz})
	s.add(&route{name: "metrics", method: "GET", path: "/metrics", h: s.handleMetrics})
	s.add(&route{name: "status", method: "GET", path: "/v1/status", h: s.handleStatus})
	s.add(&route{name: "admin_reload", method: "POST", path: "/v1/admin/reload", h: s.handleReload})
	s.add(&route{name: "admin_backup", method: "POST", path: "/v1/admin/backup", h: s.handleBackup})
	s.addDedupRoutes()
	s.addIndexRoutes()
	s.addMaintRoutes()
	s.addCDXRoutes()
	s.addIngestRoutes()
	s.addMapRoutes()
	s.addFixityRoutes()
	s.addCharacterizeRoutes()
	s.addAccessRoutes()
	s.addMigrateRoutes()
}

// Handler returns the HTTP handler as served on the Unix socket (no token,
// no Host check: the socket's 0600 mode is the access control).
func (s *Server) Handler() http.Handler { return s.handlerFor(viaUnix) }

func (s *Server) handlerFor(kind listenerKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header()["Link"] = s.linkHdr
		sw := &statusWriter{ResponseWriter: w}
		name := s.serve(sw, r, kind)
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		d := time.Since(start)
		s.metrics.ObserveRequest(name, r.Method, code, d)
		lvl := slog.LevelDebug
		if code >= 500 {
			lvl = slog.LevelWarn
		}
		// The raw path is not logged: it may carry the CDX token.
		if s.log.Enabled(r.Context(), lvl) {
			s.log.Log(r.Context(), lvl, "request", "route", name, "method", r.Method, "code", code, "dur", d)
		}
	})
}

// refuse answers a request the router turns away without reading its
// body. A request with a body gets Connection: close, so the server does
// not wait for (and read) a body a client may be trickling.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	// The connection is closed after the answer, and nothing more is read
	// from it: a refused client holds no connection slot.
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
	writeError(w, code, msg)
}

// serve authenticates and dispatches one request; it returns the route name
// for metrics.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, kind listenerKind) string {
	ri := &reqInfo{kind: kind}
	// Origin "null" on a read through a path token is archived content,
	// framed in an opaque origin, asking for its own resources (no script
	// can read the answers): the access routes only (checked below).
	nullRead := r.Header.Get("Origin") == "null" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(r.URL.Path, "/t/")
	if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o) && !nullRead {
		refuse(w, r, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed (listen.allowed_origins)", o))
		return "denied"
	}
	if kind == viaTCP && !s.hostAllowed(r.Host) {
		refuse(w, r, http.StatusForbidden, fmt.Sprintf("host %q is not allowed (listen.allowed_hosts)", r.Host))
		return "denied"
	}
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/t/"); ok {
		tok, after, _ := strings.Cut(rest, "/")
		if pt, ok := s.accessTokenPoint(tok); ok && kind == viaTCP {
			ri.point = pt
		} else if kind == viaTCP && (s.listen().CDXToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.listen().CDXToken)) != 1) {
			refuse(w, r, http.StatusUnauthorized, "bad token in path (listen.cdx_token)")
			return "denied"
		}
		ri.pathToken = true
		p = "/" + after
	}
	if rest, ok := strings.CutPrefix(p, "/hex/"); ok {
		ri.hexDigest = true
		p = "/" + rest
	}
	methods, ok := s.routesFor(p)
	if !ok {
		if s.refererRedirect(w, r, kind) {
			return "replay_referer"
		}
		if acc := s.acc(); acc != nil {
			if e, ok := acc.h.UnknownCollection(p); ok {
				refuse(w, r, e.Code, e.Msg)
				return "unknown"
			}
		}
		refuse(w, r, http.StatusNotFound, fmt.Sprintf("no such route %s", p))
		return "unknown"
	}
	rt, ok := methods[r.Method]
	if !ok {
		var allow []string
		for m := range methods {
			allow = append(allow, m)
		}
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		refuse(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s", r.Method, p))
		return rt0name(methods)
	}
	if ri.hexDigest && !rt.cdx {
		refuse(w, r, http.StatusNotFound, fmt.Sprintf("no such route /hex%s", p))
		return "unknown"
	}
	if ri.pathToken && !rt.cdx {
		refuse(w, r, http.StatusForbidden, "the path token grants the CDX query routes only")
		return "denied"
	}
	if kind == viaTCP && !ri.pathToken && !s.tokenOK(r) && !(rt.cdx && s.cdxTokenHeaderOK(r)) {
		if pt, ok := s.headerAccessToken(r); ok {
			ri.point = pt
		}
	}
	if nullRead && rt.name != "access" && !s.originAllowed("null") {
		refuse(w, r, http.StatusForbidden, `origin "null" is not allowed (listen.allowed_origins)`)
		return "denied"
	}
	if ri.point != "" && rt.name != "access" {
		refuse(w, r, http.StatusForbidden, "an access.tokens token grants the access routes only")
		return "denied"
	}
	if kind == viaTCP && !rt.open && !ri.pathToken && ri.point == "" && !s.tokenOK(r) && !(rt.cdx && s.cdxTokenHeaderOK(r)) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="wayside"`)
		refuse(w, r, http.StatusUnauthorized, "missing or wrong token (Authorization: Bearer <listen.token>)")
		return rt.name
	}
	limit := rt.maxBody
	if limit == 0 {
		limit = s.cfg.Limits.MaxBodyBytes
	}
	if r.ContentLength > limit {
		refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds the %d bytes %s takes", r.ContentLength, limit, rt.name))
		return rt.name
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := rt.h(w, r, ri); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			writeError(w, ae.code, ae.msg)
		} else if errors.Is(err, context.Canceled) || errors.Is(err, dedupindex.ErrClosed) {
			writeError(w, http.StatusServiceUnavailable, "shutting down: "+err.Error())
		} else {
			s.log.Warn("request failed", "route", rt.name, "err", err)
			writeError(w, http.StatusInternalServerError, err.Error())
		}
	}
	return rt.name
}

func rt0name(m map[string]*route) string {
	for _, r := range m {
		return r.name
	}
	return "unknown"
}

func (s *Server) tokenOK(r *http.Request) bool {
	want := []byte(s.listen().Token)
	if len(want) == 0 {
		return false
	}
	got := r.Header.Get("X-Wayside-Token")
	if a := r.Header.Get("Authorization"); a != "" {
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			got = strings.TrimSpace(t)
		}
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1
}

// cdxTokenHeaderOK accepts the read-only CDX token as a header too
// (Heritrix can send it through WbmPersistLoadProcessor.requestHeaders,
// which keeps it out of URLs and logs).
func (s *Server) cdxTokenHeaderOK(r *http.Request) bool {
	want := []byte(s.listen().CDXToken)
	got := r.Header.Get("X-Wayside-Token")
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		got = strings.TrimSpace(a)
	}
	return len(want) > 0 && got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1
}

func (s *Server) hostAllowed(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allowHost[strings.ToLower(host)]
}

func (s *Server) originAllowed(o string) bool {
	for _, a := range s.listen().AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), o) {
			return true
		}
	}
	return false
}

// Run listens, ingests and serves until ctx is cancelled, then stops
// accepting requests, lets running ones finish (up to 10 s), stops ingest
// after its current record (checkpoint written) and writes the MementoMap.
func (s *Server) Run(ctx context.Context) error {
	var lns []net.Listener
	var kinds []listenerKind
	closeAll := func() {
		for _, l := range lns {
			l.Close()
		}
	}
	if s.cfg.Listen.Unix != "-" {
		l, err := listenUnix(s.cfg.Listen.Unix)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.unixPath = s.cfg.Listen.Unix
		s.mu.Unlock()
		lns, kinds = append(lns, l), append(kinds, viaUnix)
	}
	if s.cfg.Listen.TCP != "" {
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, "tcp", s.cfg.Listen.TCP)
		if err != nil {
			closeAll()
			return fmt.Errorf("sidecar: listen tcp: %w", err)
		}
		s.setTCPAddr(l.Addr())
		lns, kinds = append(lns, l), append(kinds, viaTCP)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	s.mig.bind(runCtx)
	stopAccess, err := s.startAccess(runCtx)
	if err != nil {
		closeAll()
		return err
	}

	var wg sync.WaitGroup
	errc := make(chan error, len(lns)+2)
	servers := make([]*http.Server, len(lns))
	lim := s.cfg.Limits
	for i, l := range lns {
		name := map[listenerKind]string{viaUnix: "unix", viaTCP: "tcp"}[kinds[i]]
		// At most max_conns connections at once: the next one waits in
		// the kernel's accept queue until one closes (the timeouts close
		// stalled ones).
		l = netutil.LimitListener(l, lim.MaxConns)
		lns[i] = l
		srv := &http.Server{
			Handler:           s.handlerFor(kinds[i]),
			ReadHeaderTimeout: lim.ReadHeaderTimeout,
			ReadTimeout:       lim.ReadTimeout,
			IdleTimeout:       lim.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			ConnState:         s.metrics.connState(name),
			BaseContext:       func(net.Listener) context.Context { return runCtx },
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
		servers[i] = srv
		wg.Add(1)
		go func(l net.Listener) {
			defer wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("sidecar: serve %s: %w", l.Addr(), err)
			}
		}(l)
	}
	ingestDone := make(chan error, 1)
	go func() { ingestDone <- s.superviseIngest(runCtx) }()
	fixDone := make(chan error, 1)
	go func() { fixDone <- s.superviseFixity(runCtx) }()
	leaseDone := make(chan struct{})
	go func() { s.runLeases(runCtx); close(leaseDone) }()
	aggDone := s.runAggregate(runCtx)
	close(s.ready)
	s.log.Info("sidecar: serving", "unix", s.unixPathOrNone(), "tcp", addrOrNone(s.TCPAddr()), "watch", s.cfg.Ingest.Dirs)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	case err := <-ingestDone:
		runErr = err
		ingestDone <- err
	}
	s.log.Info("sidecar: shutting down")
	shCtx, shCancel := context.WithTimeout(context.Background(), 10*time.Second)
	for _, srv := range servers {
		if err := srv.Shutdown(shCtx); err != nil {
			srv.Close()
		}
	}
	stopAccess(shCtx)
	shCancel()
	cancel()
	s.mig.stop() // a migration job stops with runCtx
	wg.Wait()
	if err := <-ingestDone; err != nil && runErr == nil {
		runErr = err
	}
	if err := <-fixDone; err != nil && runErr == nil {
		runErr = err
	}
	<-aggDone
	s.closeAggregate()
	<-leaseDone
	// Ingest has stopped: let the consumers finish their queues; the live
	// map merges what it holds. A consumer failure fails the run.
	if err := s.cons.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("sidecar: %w", err)
	}
	if s.cfg.Listen.Unix != "-" {
		os.Remove(s.cfg.Listen.Unix)
	}
	s.log.Info("sidecar: stopped")
	return runErr
}

func (s *Server) setTCPAddr(a net.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tcpAddr = a
	s.allowHost = map[string]bool{strings.ToLower(s.cfg.Listen.TCP): true}
	if ta, ok := a.(*net.TCPAddr); ok {
		port := strconv.Itoa(ta.Port)
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]", ta.IP.String()} {
			if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
				h = "[" + h + "]"
			}
			s.allowHost[h+":"+port] = true
		}
		if ta.Port == 80 {
			s.allowHost["localhost"] = true
			s.allowHost["127.0.0.1"] = true
		}
	}
	for _, h := range s.listen().AllowedHosts {
		s.allowHost[strings.ToLower(h)] = true
	}
}

func (s *Server) unixPathOrNone() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unixPath == "" {
		return "none"
	}
	return s.unixPath
}

func addrOrNone(a net.Addr) string {
	if a == nil {
		return "none"
	}
	return a.String()
}

// listenUnix binds path with mode 0600 and no window in which the socket
// exists with a wider mode: it binds a private temporary name, chmods it and
// renames it into place. A stale socket (nobody accepting) is replaced; a
// live one is an error.
func listenUnix(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sidecar: listen unix: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("sidecar: listen unix: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("sidecar: listen unix: %s: another daemon is listening", path)
		}
		os.Remove(path)
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d.tmp", filepath.Base(path), os.Getpid()))
	os.Remove(tmp)
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("sidecar: listen unix: %w", err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ul.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("sidecar: listen unix: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ul.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("sidecar: listen unix: %w", err)
	}
	return ul, nil
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	s.metricsHandler.ServeHTTP(w, r)
	return nil
}

// Status is the answer of GET /v1/status.
type Status = api.Status

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	st, err := s.idx.Stats(r.Context())
	if err != nil {
		return fmt.Errorf("index stats: %w", err)
	}
	out := Status{
		Version:       s.version,
		UptimeSeconds: time.Since(s.started).Seconds(),
		Problems:      s.problems(),
		Index:         st,
		Ingest:        ingestWire(s.ing().Status()),
		CrawlLog:      crawlLogWire(s.ing().CrawlLog()),
		Captures:      s.acc().status(r.Context()),
		Consumers:     s.cons.Stats(),
		Lookups:       s.metrics.Lookups.Load(),
		Claims:        s.metrics.Claims.Load(),
		Revisits:      s.metrics.Revisits.Load(),
		BytesSaved:    s.metrics.BytesSaved.Load(),
		Aggregate:     s.aggregateStatus(),
	}
	if s.cfg.Listen.Unix != "-" {
		out.Unix = s.cfg.Listen.Unix
	}
	if a := s.TCPAddr(); a != nil {
		out.TCP = a.String()
		if out.Captures != nil {
			out.Captures.TCPReplay = s.tcpReplay()
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// problems lists what the daemon cannot do: what start-up found (a fixity
// browser missing) and what holds now (ingest paused on a full disk, a
// consumer whose captures fail).
func (s *Server) problems() []string {
	var out []string
	if s.fix().problem != "" {
		out = append(out, s.fix().problem)
	}
	if p := s.reload.problem(); p != "" {
		out = append(out, p)
	}
	if p := s.ing().Status().Paused; p != "" {
		out = append(out, "ingest paused: "+p)
	}
	for _, c := range s.cons.Stats() {
		if c.Failed > 0 {
			out = append(out, fmt.Sprintf("consumer %s: %d captures failed, last error: %s", c.Name, c.Failed, c.LastError))
		}
	}
	return out
}
