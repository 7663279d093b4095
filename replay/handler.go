package replay

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/warcfile"
)

// Options configure a Handler.
type Options struct {
	// Index is the capture index answered from (required).
	Index *captureindex.Index
	// WARCDirs are searched for the WARC files the index names by base
	// name (warcio.FindFile: final name or ".open"), and the WACZ files holding
	// WARC files named "coll.wacz#NAME" (warcfile.Locations).
	WARCDirs []string
	// Locations opens the WARC files the index names (base names in
	// WARCDirs, location URLs: s3://, http(s)://, file://); nil: one made
	// of WARCDirs (warcfile.NewLocations).
	Locations *warcfile.Locations
	// PublicURL, when set, is the absolute URL the handler is reached at
	// (e.g. "https://archive.example.org/wayside"), used in Link headers,
	// TimeMaps and redirects; otherwise they are built from the request's
	// Host and the mount path.
	PublicURL string
	// MaxResults caps the lines of one CDX API answer (and its limit);
	// default 100000.
	MaxResults int
	// PageSize is the number of mementos per TimeMap page (and the default
	// pageSize of the CDX API's paging); default 10000.
	PageSize int
	// MaxRewriteBytes is the largest HTML or CSS body rewritten (decoded);
	// larger ones are served as archived. Default 16 MiB.
	MaxRewriteBytes int64
	// MaxRewrites bounds the bodies being rewritten at once (each is held
	// in memory); default 8.
	MaxRewrites int
	// Logger receives warnings (WARC files that cannot be read, responses
	// cut short).
	Logger *slog.Logger
	// FuzzyParams are the query parameters fuzzy matching ignores when no
	// capture has a URI-R's exact query (nil: DefaultFuzzyParams; empty
	// and non-nil: no fuzzy matching).
	FuzzyParams []string
	// Aliases maps a urlkey to the urlkey it is another name of
	// (OutbackCDX's @alias): a URI-R with no capture of its own is
	// answered with its alias's.
	Aliases map[string]string
	// Rules returns the access rules in force (called once per request,
	// so rules swapped in while serving apply to the next request); nil,
	// or a nil result: every capture is allowed.
	Rules func() *Rules
	// WACZKey signs the WACZ files of the …/wacz route (nil: unsigned).
	WACZKey *ecdsa.PrivateKey
}

// View is how one request sees the archive: where it came in and as
// whom.
type View struct {
	// Mount is the escaped path prefix the handler is reached under ("",
	// or e.g. "/t/<token>").
	Mount string
	// AccessPoint is the access point rules are decided for ("public",
	// "staff", "reading-room", ...).
	AccessPoint string
	// ContentURL, when set, is the absolute URL of the origin archived
	// content is served from: URI-Ms in TimeMaps, Link headers and
	// TimeGate redirects point there, never at the origin answering the
	// request.
	ContentURL string
	// APIURL, when set, is the absolute URL of the origin answering
	// TimeMaps and TimeGates: Link headers and TimeMaps name those there.
	APIURL string
	// MementosOnly limits the routes to mementos (raw and rewritten
	// replay): the content origin serves nothing else.
	MementosOnly bool
	// Sandbox serves rewritten mementos in an opaque origin (CSP
	// "sandbox allow-scripts": no same-origin access, forms, popups or
	// top-level navigation), for an origin that also answers an API or
	// takes a token: archived scripts run, but never as that origin.
	Sandbox bool
	// Framed keeps archived pages inside a frame they cannot navigate out
	// of (Chromium has no CSP navigate-to): on the API origin (ContentURL
	// set) a browser's top-level navigation to a memento
	// (Sec-Fetch-Dest: document) gets a script-less page framing the
	// memento from the content origin, with Content-Security-Policy
	// frame-src limited to the content origin and an iframe sandbox
	// without allow-top-navigation or allow-popups; on the content origin
	// (MementosOnly) such a navigation is redirected to that page on
	// APIURL, and mementos may be framed by APIURL.
	Framed bool
}

// Handler serves the access routes of one capture index, as pywb lays
// them out (see the package documentation).
type Handler struct {
	opts     Options
	fuzzy    map[string]bool
	idx      *captureindex.Index
	log      *slog.Logger
	rewrites chan struct{}
	locs     *warcfile.Locations
}

// New returns a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Index == nil {
		return nil, errors.New("replay: no capture index")
	}
	if opts.MaxResults <= 0 {
		opts.MaxResults = 100000
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 10000
	}
	if opts.MaxRewriteBytes <= 0 {
		opts.MaxRewriteBytes = 16 << 20
	}
	if opts.MaxRewrites <= 0 {
		opts.MaxRewrites = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.PublicURL = strings.TrimSuffix(opts.PublicURL, "/")
	if opts.FuzzyParams == nil {
		opts.FuzzyParams = DefaultFuzzyParams
	}
	locs := opts.Locations
	if locs == nil {
		locs = warcfile.NewLocations(opts.WARCDirs)
	}
	return &Handler{opts: opts, fuzzy: fuzzySet(opts.FuzzyParams), idx: opts.Index, log: opts.Logger, rewrites: make(chan struct{}, opts.MaxRewrites), locs: locs}, nil
}

// Error is an answer other than 200 the handler chose (a 4xx with a
// message naming the input and the problem, or a 404 for what the archive
// does not hold), returned before anything was written.
type Error struct {
	Code int
	Msg  string
	// Header holds headers to send with the error (Link, Vary).
	Header http.Header
}

func (e *Error) Error() string { return e.Msg }

func badRequest(format string, a ...any) error {
	return &Error{Code: http.StatusBadRequest, Msg: fmt.Sprintf(format, a...)}
}

func notFound(h http.Header, format string, a ...any) error {
	return &Error{Code: http.StatusNotFound, Msg: fmt.Sprintf(format, a...), Header: h}
}

// path is a parsed access route.
type path struct {
	coll    string
	collURL string // absolute URL prefix of the collection, ending in "/"
	// collPath is collURL without scheme and host: rewritten links are
	// host-relative, so a page works under any name the archive has.
	collPath string
	kind     int
	format   string // timemap format
	ts       string // memento timestamp, as given
	mod      string // replay modifier
	uriR     string
	rest     string // the route after the collection
	// mementoURL is the URL prefix of URI-Ms, ending in "/": collURL, or
	// the collection on the content origin.
	mementoURL string
	chk        *Checker
	sandbox    bool // View.Sandbox
	// frameAncestor is an origin besides the content origin that may
	// frame mementos (View.Framed: the API origin).
	frameAncestor string
}

const (
	routeCDX = iota + 1
	routeTimeMap
	routeTimeGate
	routeMemento
	routeWACZ
)

var tsSegment = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,14})([a-z]{2}_)?$`) })

// Collection returns the collection named by the first segment of an
// (escaped) route path, and whether it is one of the index's (the default
// collection always is, empty or not): only those paths are the handler's.
func (h *Handler) Collection(p string) (string, bool) {
	p = strings.TrimPrefix(p, "/")
	coll, _, ok := strings.Cut(p, "/")
	if !ok || coll == "" {
		return "", false
	}
	return coll, h.idx.HasScope(coll) || coll == h.idx.DefaultScope()
}

// UnknownCollection reports whether p has the shape of an access route
// (/<coll>/cdx, /<coll>/timemap/..., /<coll>/<timestamp>/..., or
// /<coll>/<URI-R>) of a collection the index does not hold, and returns
// the 404 that names it and lists the collections there are.
func (h *Handler) UnknownCollection(p string) (*Error, bool) {
	coll, ok := h.Collection(p)
	if ok || coll == "" {
		return nil, false
	}
	rest := strings.TrimPrefix(p, "/")[len(coll)+1:]
	switch {
	case rest == "cdx", strings.HasPrefix(rest, "timemap/"), strings.HasPrefix(rest, "http:"), strings.HasPrefix(rest, "https:"),
		rest != "" && rest[0] >= '0' && rest[0] <= '9':
	default:
		return nil, false
	}
	known := h.idx.Scopes()
	if d := h.idx.DefaultScope(); d != "" && !slices.Contains(known, d) {
		known = append(known, d)
		slices.Sort(known)
	}
	return &Error{Code: http.StatusNotFound, Msg: fmt.Sprintf("unknown collection %q (collections: %s)", coll, strings.Join(known, ", "))}, true
}

// parsePath parses the escaped path after the mount.
func (h *Handler) parsePath(r *http.Request, mount, p string) (*path, error) {
	coll, ok := h.Collection(p)
	if !ok {
		return nil, notFound(nil, "no collection %q in this archive (collections: %s)", coll, strings.Join(h.idx.Scopes(), ", "))
	}
	out := &path{coll: coll, collURL: h.baseURL(r, mount) + "/" + coll + "/"}
	out.collPath = out.collURL
	if i := strings.Index(out.collURL, "://"); i >= 0 {
		if j := strings.IndexByte(out.collURL[i+3:], '/'); j >= 0 {
			out.collPath = out.collURL[i+3+j:]
		}
	}
	rest := strings.TrimPrefix(p, "/")[len(coll)+1:]
	out.rest = rest
	out.mementoURL = out.collURL
	withQuery := func(u string) string {
		if r.URL.RawQuery != "" {
			u += "?" + r.URL.RawQuery
		}
		return u
	}
	switch {
	case rest == "cdx":
		out.kind = routeCDX
		return out, nil
	case rest == "wacz":
		out.kind = routeWACZ
		return out, nil
	case strings.HasPrefix(rest, "timemap/"):
		format, after, _ := strings.Cut(strings.TrimPrefix(rest, "timemap/"), "/")
		switch format {
		case "link", "json", "cdxj":
		default:
			return nil, badRequest("timemap format %q: want link, json or cdxj (…/timemap/link/<URI-R>)", format)
		}
		out.kind, out.format = routeTimeMap, format
		if seg, tail, ok := strings.Cut(after, "/"); ok && len(seg) == 14 && strings.Trim(seg, "0123456789") == "" {
			out.ts, after = seg, tail // a later page: …/timemap/link/<from>/<URI-R>
		}
		out.uriR = withQuery(after)
	default:
		seg, tail, ok := strings.Cut(rest, "/")
		if m := tsSegment().FindStringSubmatch(seg); ok && m != nil {
			out.kind, out.ts, out.mod, out.uriR = routeMemento, m[1], m[2], withQuery(tail)
		} else {
			out.kind, out.uriR = routeTimeGate, withQuery(rest)
		}
	}
	var err error
	if out.uriR, err = ParseURIR(unescapeWhole(out.uriR)); err != nil {
		return nil, badRequest("%v", err)
	}
	return out, nil
}

// unescapeWhole decodes a URI-R a client escaped as a whole
// ("http%3A%2F%2Fexample.com%2F").
func unescapeWhole(u string) string {
	if low := strings.ToLower(u); strings.HasPrefix(low, "http%3a") || strings.HasPrefix(low, "https%3a") {
		if d, err := url.PathUnescape(u); err == nil {
			return d
		}
	}
	return u
}

// RouteURIR reads the URI-R ending a route, as the access routes do: rest
// is the escaped path after the route's prefix and rawQuery the request's
// (a URI-R's query arrives as the request's); a URI-R escaped as a whole
// is decoded; then ParseURIR.
func RouteURIR(rest, rawQuery string) (string, error) {
	if rawQuery != "" {
		rest += "?" + rawQuery
	}
	return ParseURIR(unescapeWhole(rest))
}

// baseURL is the absolute URL of the mount point.
func (h *Handler) baseURL(r *http.Request, mount string) string {
	if h.opts.PublicURL != "" {
		return h.opts.PublicURL + mount
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + mount
}

// Serve answers one access request whose escaped path starts with mount
// (the prefix the handler is reached under, "" or e.g. "/t/<token>").
// Before anything is written, it returns an *Error for an answer other than
// 200/302 that the request caused; any other error is the archive's (a WARC
// file that cannot be read). Once a body is partly sent, a failure cuts the
// connection (http.ErrAbortHandler).
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, mount string) error {
	return h.ServeView(w, r, View{Mount: mount})
}

// ServeView is Serve for a request seen through v: its access point's
// rules decide what it may see, and URI-Ms point at v.ContentURL.
func (h *Handler) ServeView(w http.ResponseWriter, r *http.Request, v View) error {
	mount := v.Mount
	if r.Header.Get("Service-Worker") != "" {
		// A Service Worker registered by archived content would answer for
		// every capture under its scope: never served.
		return &Error{Code: http.StatusForbidden, Msg: "Service Worker scripts are not served from this archive"}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return &Error{Code: http.StatusMethodNotAllowed, Msg: fmt.Sprintf("method %s: the access routes are read-only (GET, HEAD)", r.Method)}
	}
	ep := r.URL.EscapedPath()
	if !strings.HasPrefix(ep, mount) {
		return notFound(nil, "no such route %s", ep)
	}
	p, err := h.parsePath(r, mount, ep[len(mount):])
	if err != nil {
		return err
	}
	if v.MementosOnly && p.kind != routeMemento {
		return notFound(nil, "no such route %s (this origin serves archived content only)", ep)
	}
	if v.APIURL != "" {
		p.collURL = strings.TrimSuffix(v.APIURL, "/") + "/" + p.coll + "/"
	}
	if v.ContentURL != "" {
		p.mementoURL = strings.TrimSuffix(v.ContentURL, "/") + "/" + p.coll + "/"
	}
	if v.ContentURL != "" && !v.MementosOnly && p.kind == routeMemento {
		// Archived content is served from its own origin only.
		loc := p.mementoURL + p.rest
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		if v.Framed && r.Header.Get("Sec-Fetch-Dest") == "document" {
			writeFrame(w, r, loc, originOf(v.ContentURL), frameSandbox, p)
			return nil
		}
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
		return nil
	}
	if v.Framed && v.Sandbox && p.kind == routeMemento {
		if r.Header.Get("Sec-Fetch-Dest") == "document" {
			// An origin shared with an API or a token: the memento is
			// framed from the same URL, in an opaque origin (no
			// allow-same-origin).
			writeFrame(w, r, framedSelf(r, p), "'self'", frameSandboxOpaque, p)
			return nil
		}
		// A sandboxed document's 'self' is opaque to Chromium's
		// frame-ancestors check: the frame page's origin is named.
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		p.frameAncestor = scheme + "://" + r.Host
	}
	if v.Framed && v.MementosOnly && v.APIURL != "" && p.kind == routeMemento {
		if r.Header.Get("Sec-Fetch-Dest") == "document" {
			// A browser opening archived content at the top level: it is
			// shown framed, from the API origin.
			loc := p.collURL + p.rest
			if r.URL.RawQuery != "" {
				loc += "?" + r.URL.RawQuery
			}
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusFound)
			return nil
		}
		p.frameAncestor = originOf(v.APIURL)
	}
	var rs *Rules
	if h.opts.Rules != nil {
		rs = h.opts.Rules()
	}
	p.chk = rs.Checker(v.AccessPoint)
	p.sandbox = v.Sandbox
	if p.kind != routeMemento {
		// Lists of captures change with the rules: caches (an aggregator's
		// among them) revalidate, so a rule change reaches their answers.
		w.Header().Set("Cache-Control", "no-cache")
	}
	switch p.kind {
	case routeCDX:
		return h.serveCDX(w, r, p)
	case routeWACZ:
		return h.serveWACZ(w, r, p)
	case routeTimeMap:
		return h.serveTimeMap(w, r, p)
	case routeTimeGate:
		return h.serveTimeGate(w, r, p)
	default:
		return h.serveMemento(w, r, p)
	}
}

// ServeHTTP serves the routes at the root (no mount), writing errors as
// text.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.Serve(w, r, ""); err != nil {
		WriteError(w, err)
	}
}

// WriteError writes an error returned by Serve as a plain-text answer.
func WriteError(w http.ResponseWriter, err error) {
	code, msg := http.StatusInternalServerError, err.Error()
	var e *Error
	if errors.As(err, &e) {
		code = e.Code
		for k, vs := range e.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
	}
	http.Error(w, msg, code)
}

// RefererTarget redirects a request that escaped rewriting (a host-relative
// URL built by a script, such as "/img/x.png") to the URI-M it meant: when
// the Referer is a memento of a collection of this archive on the same
// host, see EscapedTarget. It returns the Location, or false.
func (h *Handler) RefererTarget(r *http.Request, mount string) (string, bool) {
	ref, err := url.Parse(r.Referer())
	if err != nil || ref.Host != r.Host || !strings.HasPrefix(ref.EscapedPath(), mount+"/") {
		return "", false
	}
	coll, ok := h.Collection(ref.EscapedPath()[len(mount):])
	if !ok {
		return "", false
	}
	return EscapedTarget(r.Referer(), mount+"/"+coll+"/", r.URL)
}

// EscapedTarget returns the URI-M a request that escaped rewriting meant,
// as pywb and Wayback find it: referer is a URI-M whose path starts with
// prefix (a collection's path, "/web/") and u the request's URL; u's path
// and query are resolved against the referer's URI-R and the result is put
// at the referer's timestamp (no modifier).
func EscapedTarget(referer, prefix string, u *url.URL) (string, bool) {
	ref, err := url.Parse(referer)
	if err != nil {
		return "", false
	}
	rest, ok := strings.CutPrefix(ref.EscapedPath(), prefix)
	if !ok {
		return "", false
	}
	seg, tail, ok := strings.Cut(rest, "/")
	m := tsSegment().FindStringSubmatch(seg)
	if !ok || m == nil {
		return "", false
	}
	if ref.RawQuery != "" {
		tail += "?" + ref.RawQuery
	}
	uriR, err := ParseURIR(tail)
	if err != nil {
		return "", false
	}
	base, err := url.Parse(uriR)
	if err != nil {
		return "", false
	}
	target := base.ResolveReference(&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery})
	return prefix + m[1] + "/" + target.String(), true
}

// originOf returns scheme://host[:port] of an absolute URL.
func originOf(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return pu.Scheme + "://" + pu.Host
}

// frameSandbox is what a framed memento may do: run scripts as its own
// (content) origin, submit forms and open dialogs inside its frame;
// never navigate the top level or open windows.
const frameSandbox = "allow-scripts allow-same-origin allow-forms allow-modals allow-downloads"

// frameSandboxOpaque is frameSandbox for a memento on an origin shared
// with an API or a token (View.Sandbox): its own origin is opaque.
const frameSandboxOpaque = "allow-scripts allow-modals"

// writeFrame answers a browser's top-level navigation to a memento
// (View.Framed): a page without scripts whose only content is the memento
// (loc) in an iframe sandboxed as sandbox says, and whose
// Content-Security-Policy lets that frame navigate within frameSrc (the
// content origin, or 'self') only.
func writeFrame(w http.ResponseWriter, r *http.Request, loc, frameSrc, sandbox string, p *path) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-src "+frameSrc+
		"; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Vary", "Sec-Fetch-Dest")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	fmt.Fprintf(w, `<!doctype html>
<html><head><meta charset="utf-8"><title>%s (archived %s)</title>
<style>html,body{margin:0;height:100%%;overflow:hidden}iframe{border:0;width:100%%;height:100%%;display:block}</style>
</head><body><iframe src="%s" sandbox="%s"></iframe></body></html>
`, html.EscapeString(p.uriR), html.EscapeString(p.ts), html.EscapeString(loc), sandbox)
}

// framedSelf is the URL a memento on its own origin is framed from: its
// URL with the modifier mp_ (pywb's framed-page modifier; rewritten like
// none), or without it when it has one: Chromium does not load a frame
// whose URL is an ancestor's.
func framedSelf(r *http.Request, p *path) string {
	ep := r.URL.EscapedPath()
	seg := p.ts + p.mod + "/"
	mod := "mp_"
	if p.mod != "" {
		mod = ""
	}
	loc := ep
	if strings.HasSuffix(ep, p.rest) && strings.HasPrefix(p.rest, seg) {
		loc = ep[:len(ep)-len(p.rest)] + p.ts + mod + "/" + p.rest[len(seg):]
	}
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	return loc
}
