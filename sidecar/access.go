package sidecar

import (
	"context"
	"crypto/ecdsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/wacz"
)

// AccessConfig configures the capture index and the access routes (CDX
// API, Memento TimeMaps and TimeGate, raw and rewritten replay).
type AccessConfig struct {
	// Index is the capture index directory. Default DataDir/capture-index;
	// "-" disables the capture index and the access routes.
	Index string `yaml:"index"`
	// PublicURL is the absolute URL clients reach the daemon at, used in
	// TimeMaps, Link headers and redirects (default: from each request's
	// Host).
	PublicURL string `yaml:"public_url"`
	// MaxResults caps the lines of one CDX API answer. Default 100000.
	MaxResults int `yaml:"max_results"`
	// TimeMapPageSize is the number of mementos per TimeMap page.
	// Default 10000.
	TimeMapPageSize int `yaml:"timemap_page_size"`
	// Rules is an access rules file (pywb's .aclj, OutbackCDX's .json) or
	// a directory of them; changes are picked up while serving. Empty: no
	// rules, every capture is shown.
	Rules string `yaml:"rules"`
	// DefaultAccess applies when no rule matches: allow (default), block
	// or exclude.
	DefaultAccess string `yaml:"default_access"`
	// AccessPoint is the access point of the token-authorised listeners
	// (the Unix socket and listen.tcp) in rules' "user" fields. Default
	// "staff".
	AccessPoint string `yaml:"access_point"`
	// ReloadInterval is how often the rules files are checked for
	// changes. Default 250ms.
	ReloadInterval time.Duration `yaml:"reload_interval"`
	// FuzzyParams are the query parameters replay and the TimeGate ignore
	// when no capture has a URI-R's exact query (default: pywb's cache
	// busters, replay.DefaultFuzzyParams; [] turns fuzzy matching off).
	FuzzyParams []string `yaml:"fuzzy_params"`
	// Aliases is a file of "@alias SOURCE TARGET" lines (OutbackCDX's):
	// a URI-R without captures is answered with its alias's.
	Aliases string `yaml:"aliases"`
	// WACZKey is a PEM file with the ECDSA private key that signs the WACZ
	// files of the …/wacz route ("": unsigned; `wayside wacz pubkey`
	// prints a key's public half).
	WACZKey string `yaml:"wacz_key"`
	// Storage maps a collection to the storage URL its WARC files are
	// in (file:///DIR or a directory path, s3://BUCKET/PREFIX?endpoint=…,
	// http(s)://…): index lines POSTed to /<collection> (OutbackCDX's
	// loading, for WARCs the daemon does not read) name their file
	// relative to it. A collection without one takes no POSTed lines.
	Storage map[string]string `yaml:"storage"`
	// Tokens are read-only tokens, each choosing an access point (a
	// reading room's terminals carry theirs): on listen.tcp, in the path
	// (/t/<token>/<collection>/…) or as X-Wayside-Token / Authorization:
	// Bearer, they grant the access routes only (CDX API, TimeMaps,
	// TimeGate, replay) as seen from that access point.
	Tokens []AccessToken `yaml:"tokens"`
}

// AccessToken is one token of access.tokens.
type AccessToken struct {
	Token       string `yaml:"token"`
	AccessPoint string `yaml:"access_point"`
}

func (c *AccessConfig) enabled() bool { return c.Index != "-" }

// check validates the access keys (called by Config.Validate).
func (c *AccessConfig) check(add func(key, msg string)) {
	switch c.DefaultAccess {
	case "", "allow", "block", "exclude":
	default:
		add("access.default_access", fmt.Sprintf("%q is not one of allow, block, exclude", c.DefaultAccess))
	}
	if c.ReloadInterval < 0 {
		add("access.reload_interval", "must not be negative")
	}
	if c.Rules != "" {
		if _, err := os.Stat(c.Rules); err != nil {
			add("access.rules", err.Error())
		}
	}
	for coll, u := range c.Storage {
		if err := checkLoadCollection(coll); err != nil {
			add("access.storage", err.Error())
		}
		if _, err := storageBase(u); err != nil {
			add("access.storage."+coll, err.Error())
		}
	}
	if c.Aliases != "" {
		if _, err := replay.LoadAliases(c.Aliases); err != nil {
			add("access.aliases", err.Error())
		}
	}
	for i, t := range c.Tokens {
		k := fmt.Sprintf("access.tokens[%d]", i)
		if len(t.Token) < 16 || strings.ContainsAny(t.Token, "/ \t\r\n") {
			add(k+".token", "want at least 16 characters, no '/' or white space")
		}
		if t.AccessPoint == "" {
			add(k+".access_point", "missing")
		}
	}
}

// accessTokenPoint returns the access point of an access.tokens token.
func (s *Server) accessTokenPoint(tok string) (string, bool) {
	if tok == "" {
		return "", false
	}
	for _, t := range s.cfg.Access.Tokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(t.Token)) == 1 {
			return t.AccessPoint, true
		}
	}
	return "", false
}

// headerAccessToken finds an access.tokens token in X-Wayside-Token or
// Authorization: Bearer.
func (s *Server) headerAccessToken(r *http.Request) (string, bool) {
	if p, ok := s.accessTokenPoint(r.Header.Get("X-Wayside-Token")); ok {
		return p, true
	}
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return s.accessTokenPoint(strings.TrimSpace(b))
	}
	return "", false
}

// access is the replay handler over the capture index the consumers keep.
type access struct {
	idx     *captureindex.Index
	h       *replay.Handler
	methods map[string]*route
	rules   *accessRules
	point   string // the access point of the token-authorised listeners
	// storage maps the collections that take POSTed index lines to
	// their storage URL (access.storage, normalised); load is their
	// route.
	storage map[string]string
	load    map[string]*route
}

// accessRules holds the rules in force: an atomic pointer swapped as a
// whole (by the file watcher, the daemon's rule routes or a config
// reload), read once per request.
type accessRules struct {
	path string
	def  replay.Access
	log  *slog.Logger
	cur  atomic.Pointer[replay.Rules]
	mu   sync.Mutex // serialises loads and edits
	// stamp fingerprints the files last loaded; lastErr is the last load's
	// error ("" when it succeeded).
	stamp   string
	lastErr string
	loads   atomic.Int64
}

// fingerprint names the rules files with their sizes and modification
// times: it changes when one is written, added or removed.
func (a *accessRules) fingerprint() string {
	fi, err := os.Stat(a.path)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	add := func(name string, fi os.FileInfo) {
		fmt.Fprintf(&b, "%s %d %d\n", name, fi.Size(), fi.ModTime().UnixNano())
	}
	if !fi.IsDir() {
		add(a.path, fi)
		return b.String()
	}
	ents, err := os.ReadDir(a.path)
	if err != nil {
		return "error: " + err.Error()
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".aclj") || strings.HasSuffix(n, ".json") {
			if fi, err := e.Info(); err == nil {
				add(n, fi)
			}
		}
	}
	return b.String()
}

// reload loads the rules when their files changed (always when force).
// A file that does not parse keeps the rules in force and is reported.
func (a *accessRules) reload(force bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.fingerprint()
	if !force && st == a.stamp {
		return nil
	}
	rs, err := replay.LoadRules(a.path, a.def)
	a.stamp = st
	if err != nil {
		a.lastErr = err.Error()
		a.log.Warn("access rules not reloaded: the rules in force stay", "err", err)
		return fmt.Errorf("sidecar: %w", err)
	}
	a.lastErr = ""
	a.cur.Store(rs)
	a.loads.Add(1)
	a.log.Info("access rules loaded", "path", a.path, "rules", rs.Len())
	return nil
}

// watchRules reloads the rules of the access settings in force when their
// files change, until ctx ends: after a config reload that is the new
// settings' rules (s.acc()).
func (s *Server) watchRules(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if a := s.acc(); a != nil && a.rules != nil {
				a.rules.reload(false)
			}
		}
	}
}

// AccessRules returns the access rules in force (nil: none).
func (s *Server) AccessRules() *replay.Rules {
	a := s.acc()
	if a == nil || a.rules == nil {
		return nil
	}
	return a.rules.cur.Load()
}

// SetAccessRules puts rs in force from the next request on (a config
// reload's entry point; the file watcher keeps watching access.rules).
func (s *Server) SetAccessRules(rs *replay.Rules) error {
	a := s.acc()
	if a == nil || a.rules == nil {
		return errors.New("sidecar: access rules are not enabled (access.rules)")
	}
	a.rules.cur.Store(rs)
	return nil
}

// ReloadAccessRules reads access.rules again now.
func (s *Server) ReloadAccessRules() error {
	a := s.acc()
	if a == nil || a.rules == nil {
		return errors.New("sidecar: access rules are not enabled (access.rules)")
	}
	return a.rules.reload(true)
}

// openAccess builds the replay handler over the consumers' capture index
// (ConsumersConfig adds it unless access.index is "-"); nil when disabled.
func (s *Server) openAccess() (*access, error) { return s.openAccessFor(s.cfg) }

// openAccessFor builds the replay handler for cfg (its watched
// directories and access settings).
func (s *Server) openAccessFor(cfg Config) (*access, error) {
	idx := s.cons.Captures
	if idx == nil {
		return nil, nil
	}
	ac := cfg.Access
	a := &access{idx: idx, point: ac.AccessPoint}
	if a.point == "" {
		a.point = "staff"
	}
	var key *ecdsa.PrivateKey
	if ac.WACZKey != "" {
		b, err := os.ReadFile(ac.WACZKey)
		if err == nil {
			key, err = wacz.ParseKey(b)
		}
		if err != nil {
			return nil, fmt.Errorf("sidecar: access.wacz_key %s: %w", ac.WACZKey, err)
		}
	}
	opts := replay.Options{WACZKey: key, Index: idx, WARCDirs: cfg.localDirs(), PublicURL: ac.PublicURL,
		MaxResults: ac.MaxResults, PageSize: ac.TimeMapPageSize, Logger: s.log.With("component", "replay"),
		FuzzyParams: ac.FuzzyParams}
	if ac.Aliases != "" {
		var err error
		if opts.Aliases, err = replay.LoadAliases(ac.Aliases); err != nil {
			return nil, fmt.Errorf("sidecar: %w", err)
		}
	}
	if ac.Rules != "" {
		a.rules = &accessRules{path: ac.Rules, def: replay.Access(ac.DefaultAccess), log: s.log.With("component", "access")}
		if err := a.rules.reload(true); err != nil {
			return nil, err
		}
		opts.Rules = a.rules.cur.Load
	} else if ac.DefaultAccess != "" && ac.DefaultAccess != "allow" {
		rs, err := replay.NewRules(nil, replay.Access(ac.DefaultAccess))
		if err != nil {
			return nil, fmt.Errorf("sidecar: %w", err)
		}
		opts.Rules = func() *replay.Rules { return rs }
	}
	h, err := replay.New(opts)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	a.h = h
	if err := s.setLoadRoutes(a, ac.Storage); err != nil {
		return nil, err
	}
	rt := &route{name: "access", method: http.MethodGet, cdx: true, h: s.handleAccess}
	a.methods = map[string]*route{http.MethodGet: rt, http.MethodHead: rt}
	return a, nil
}

// routesFor finds the routes of a path: the fixed routes, else the access
// routes of a collection the capture index holds.
func (s *Server) routesFor(p string) (map[string]*route, bool) {
	if m, ok := s.routes[p]; ok {
		return m, true
	}
	if m, ok := s.aggregateRoutes(p); ok {
		return m, true
	}
	if s.acc() != nil {
		if m, ok := s.acc().loadRoutes(p); ok {
			return m, true
		}
		if _, ok := s.acc().h.Collection(p); ok {
			return s.acc().methods, true
		}
	}
	return nil, false
}

// mount returns the escaped path prefix a request came in under: the CDX
// token segment, if any.
func mount(r *http.Request) string {
	ep := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(ep, "/t/"); ok {
		if tok, _, ok := strings.Cut(rest, "/"); ok {
			return "/t/" + tok
		}
	}
	return ""
}

func (s *Server) handleAccess(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	if ri.hexDigest {
		return errorf(http.StatusNotFound, "no such route %s (/hex/ applies to the dedup CDX routes only)", r.URL.Path)
	}
	v := replay.View{Mount: mount(r), AccessPoint: s.acc().point}
	if ri.point != "" {
		v.AccessPoint = ri.point // an access.tokens token's
	}
	if ri.kind == viaTCP {
		// The token listener answers the API: archived content never runs
		// as its origin (a browser reaches it with the CDX token in the
		// path, which the content could read).
		if f := s.contentFront(); f != nil {
			v.ContentURL = f.contentURL
		} else {
			v.Sandbox, v.Framed = true, true
		}
	}
	return replayError(w, s.acc().h.ServeView(w, r, v))
}

// replayError turns a *replay.Error (the access and aggregate routes'
// answers other than 200) into the router's error, with its headers.
func replayError(w http.ResponseWriter, err error) error {
	var e *replay.Error
	if errors.As(err, &e) {
		for k, vs := range e.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		return errorf(e.Code, "%s", e.Msg)
	}
	return err
}

// refererRedirect sends a request that escaped rewriting (a host-relative
// URL a replayed page's script built) back into the archive, when its
// Referer is a memento of this daemon reached with the CDX token (on TCP).
func (s *Server) refererRedirect(w http.ResponseWriter, r *http.Request, kind listenerKind) bool {
	if s.acc() == nil || r.Referer() == "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	ref, err := http.NewRequest(http.MethodGet, r.Referer(), nil)
	if err != nil {
		return false
	}
	m := mount(ref)
	if kind == viaTCP {
		tok := strings.TrimPrefix(m, "/t/")
		if m == "" || s.listen().CDXToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.listen().CDXToken)) != 1 {
			return false
		}
	}
	loc, ok := s.acc().h.RefererTarget(r, m)
	if !ok {
		return false
	}
	w.Header().Set("Location", loc)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	fmt.Fprintf(w, "Found: %s\n", loc)
	return true
}

// status reports the capture index for /v1/status (nil when disabled); its
// queue (delivered, dropped, behind) is among the consumers'.
func (a *access) status(ctx context.Context) *api.CapturesStatus {
	if a == nil {
		return nil
	}
	out := &api.CapturesStatus{Collections: []api.CollectionStatus{}}
	st, err := a.idx.Stats(ctx)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.DiskBytes = st.DiskBytes
	for _, sc := range st.Scopes {
		out.Collections = append(out.Collections, api.CollectionStatus{Name: sc.Scope, Captures: sc.Captures, Revisits: sc.Revisits, Unresolved: sc.Unresolved})
	}
	return out
}

// startAccess starts what serves and guards access besides the main
// listeners: the rules file watcher and the public fronts. stop ends
// both.
func (s *Server) startAccess(ctx context.Context) (stop func(context.Context), err error) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if s.access != nil {
		every := s.cfg.Access.ReloadInterval
		if every <= 0 {
			every = 250 * time.Millisecond
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.watchRules(wctx, every) }()
	}
	stopPublic := func(context.Context) {}
	if len(s.cfg.Public.points()) > 0 {
		if stopPublic, err = s.startPublic(wctx); err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
	}
	return func(sctx context.Context) {
		stopPublic(sctx)
		cancel()
		wg.Wait()
	}, nil
}

// AccessState is the answer of GET /v1/access: the rules in force and the
// public fronts.
type AccessState struct {
	Rules       string   `json:"rules,omitempty"` // access.rules
	Default     string   `json:"default_access"`
	AccessPoint string   `json:"access_point"` // of the token-authorised listeners
	Lines       []string `json:"lines"`        // the rules, as .aclj lines
	Loads       int64    `json:"loads"`        // times the rules were (re)loaded
	Error       string   `json:"error,omitempty"`
	// Fronts are the public fronts (public.listen, public.access_points).
	Fronts []PublicFront `json:"fronts"`
	// TCPReplay says how listen.tcp answers memento requests: redirected
	// to a content origin (listen.content_front) or sandboxed.
	TCPReplay string `json:"tcp_replay,omitempty"`
}

// AccessCheck is the answer of GET /v1/access/check.
type AccessCheck struct {
	URL         string `json:"url"`
	Key         string `json:"key"`
	At          string `json:"at"`
	AccessPoint string `json:"access_point"`
	Access      string `json:"access"`
	Rule        string `json:"rule,omitempty"`   // the deciding rule, as an .aclj line
	Source      string `json:"source,omitempty"` // where it was read
	Reason      string `json:"reason,omitempty"`
}

// AccessEdit is the answer of POST and DELETE /v1/access/rules.
type AccessEdit struct {
	File    string   `json:"file"`
	Added   []string `json:"added,omitempty"`
	Removed int      `json:"removed"`
}

func (s *Server) addAccessRoutes() {
	s.add(&route{name: "access_state", method: "GET", path: "/v1/access", h: s.handleAccessState})
	s.add(&route{name: "access_check", method: "GET", path: "/v1/access/check", h: s.handleAccessCheck})
	s.add(&route{name: "access_add", method: "POST", path: "/v1/access/rules", maxBody: 64 << 10, h: s.handleAccessEdit})
	s.add(&route{name: "access_remove", method: "DELETE", path: "/v1/access/rules", maxBody: 64 << 10, h: s.handleAccessEdit})
}

func (s *Server) handleAccessState(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	out := AccessState{Default: "allow", Lines: []string{}, Fronts: s.PublicFronts()}
	if s.cfg.Listen.TCP != "" {
		out.TCPReplay = s.tcpReplay()
	}
	if out.Fronts == nil {
		out.Fronts = []PublicFront{}
	}
	if a := s.acc(); a != nil {
		out.AccessPoint = a.point
	}
	if d := s.cfg.Access.DefaultAccess; d != "" {
		out.Default = d
	}
	if acc := s.acc(); acc != nil && acc.rules != nil {
		a := acc.rules
		out.Rules = a.path
		a.mu.Lock()
		out.Error = a.lastErr
		a.mu.Unlock()
		out.Loads = a.loads.Load()
	}
	for _, r := range s.AccessRules().List() {
		out.Lines = append(out.Lines, r.ACLJ())
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleAccessCheck(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	q := r.URL.Query()
	u := q.Get("url")
	if u == "" {
		return errorf(http.StatusBadRequest, "url: missing")
	}
	at := time.Now()
	if v := q.Get("at"); v != "" {
		t, err := replay.ParseTimestamp(v, false)
		if err != nil {
			return errorf(http.StatusBadRequest, "at: %v", err)
		}
		at = t
	}
	point := q.Get("point")
	if acc := s.acc(); point == "" && acc != nil {
		point = acc.point
	}
	writeJSON(w, http.StatusOK, CheckAccess(s.AccessRules(), u, at, point))
	return nil
}

// CheckAccess decides for a URL captured at a time, seen at an access
// point (the answer of `wayside access check` and /v1/access/check).
func CheckAccess(rs *replay.Rules, u string, at time.Time, point string) AccessCheck {
	key := captureindex.URLKey(u)
	d := rs.Checker(point).Decide(key, at)
	out := AccessCheck{URL: u, Key: key, At: replay.Timestamp(at), AccessPoint: point, Access: string(d.Access)}
	if d.Rule != nil {
		out.Rule, out.Source = d.Rule.ACLJ(), d.Rule.Source
	}
	if !d.Replayable() {
		out.Reason = d.Reason()
	}
	return out
}

// handleAccessEdit adds (POST) or removes (DELETE) rules given as a
// replay.RuleSpec, in the .aclj file of access.rules (a directory's
// wayside.aclj), then reloads the rules: they apply to the next request.
func (s *Server) handleAccessEdit(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	acc := s.acc()
	if acc == nil || acc.rules == nil {
		return errorf(http.StatusConflict, "no access rules file is configured (access.rules)")
	}
	var spec replay.RuleSpec
	if err := decodeJSON(w, r, 64<<10, &spec); err != nil {
		return err
	}
	if r.Method == http.MethodDelete && spec.Access == "" {
		spec.Access = "allow" // any access names the same place
	}
	rules, err := spec.Rules()
	if err != nil {
		return errorf(http.StatusBadRequest, "rule: %v", err)
	}
	out, err := EditAccessRules(acc.rules.path, rules, r.Method == http.MethodDelete)
	if err != nil {
		return err
	}
	if r.Method == http.MethodDelete && out.Removed == 0 {
		return errorf(http.StatusNotFound, "no rule for %s (match %s, access point %q) in %s", spec.URL, orDefault(spec.Match, "prefix"), spec.User, out.File)
	}
	if err := acc.rules.reload(true); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// EditAccessRules adds rules to (remove: removes them from) the .aclj
// file of a rules path (a directory's wayside.aclj).
func EditAccessRules(path string, rules []*replay.Rule, remove bool) (AccessEdit, error) {
	file, err := replay.RulesFile(path)
	if err != nil {
		return AccessEdit{}, errorf(http.StatusConflict, "%v", err)
	}
	out := AccessEdit{File: file}
	if remove {
		out.Removed, err = replay.EditRules(path, nil, rules)
	} else {
		_, err = replay.EditRules(path, rules, nil)
		for _, r := range rules {
			out.Added = append(out.Added, r.ACLJ())
		}
	}
	if err != nil {
		return AccessEdit{}, fmt.Errorf("sidecar: %w", err)
	}
	return out, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
