package crawl

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// Verify names how a digest match is confirmed before a revisit is written.
type Verify string

// Collision checks.
const (
	// VerifySize requires the payload lengths to be equal too (default;
	// skipped when the original's length is unknown).
	VerifySize Verify = "size"
	// VerifyBytes re-reads the original record from its WARC file and
	// compares the payloads byte for byte.
	VerifyBytes Verify = "bytes"
)

// ParseVerify parses a --verify value.
func ParseVerify(s string) (Verify, error) {
	switch Verify(s) {
	case VerifySize, VerifyBytes:
		return Verify(s), nil
	case "":
		return VerifySize, nil
	}
	return "", fmt.Errorf("crawl: unknown verify mode %q (want size or bytes)", s)
}

// Dedup is what the recorder needs from the dedup layer; it is satisfied by
// *dedupindex.Deduper (a policy in front of a dedupindex.Index).
type Dedup interface {
	Decide(ctx context.Context, c dedupindex.Candidate) (dedupindex.Decision, error)
	Commit(ctx context.Context, t dedupindex.Ticket, o dedupindex.Original) error
	Cancel(ctx context.Context, t dedupindex.Ticket) error
	Index() dedupindex.Index
	Policy() dedupindex.Policy
}

// Options configures a Recorder.
type Options struct {
	// Writer receives the records (required).
	Writer *warcfile.Writer
	// Dedup enables crawl-time deduplication (nil: every response is
	// written in full).
	Dedup Dedup
	// Verify is the collision check for digest matches (default VerifySize).
	Verify Verify
	// OriginalDirs are searched, after the writer's directory, for the WARC
	// files of originals (VerifyBytes, ReadOriginal).
	OriginalDirs []string
	// Conditional sends If-None-Match / If-Modified-Since built from the
	// validators of the URL's last original and turns a 304 answer into a
	// server-not-modified revisit.
	Conditional bool
	// MaxBody caps the entity body read per response (0: no cap); a longer
	// body is cut and recorded with WARC-Truncated: length.
	MaxBody int64
	// MaxDuration caps the time per fetch from sending the request to the
	// end of the body (0: no cap); a body still arriving then is cut and
	// recorded with WARC-Truncated: time.
	MaxDuration time.Duration
	// Timeout bounds dialing and waiting for response headers (default 30s).
	Timeout time.Duration
	// Allow is consulted before every request; a non-nil error refuses the
	// URL (scope enforcement). Nil allows http and https URLs.
	Allow func(u *url.URL) error
	// TLSConfig is used for https (nil: system roots).
	TLSConfig *tls.Config
	// MaxConnsPerHost bounds connections per host (default 8).
	MaxConnsPerHost int
	// Logger receives warnings (collisions, index errors).
	Logger *slog.Logger
}

// Stats are the recorder's counters.
type Stats struct {
	Fetches         int64            // exchanges recorded
	Responses       int64            // full response records
	RevisitsDigest  int64            // identical-payload-digest revisits
	RevisitsNotMod  int64            // server-not-modified revisits
	Pending         int64            // full responses written because a claim was pending
	Skipped         map[string]int64 // responses not deduplicated, by reason (policy)
	Collisions      int64            // digest matched, verification failed
	Truncated       int64            // responses recorded with WARC-Truncated
	Errors          int64            // dedup index errors (the fetch was still recorded in full)
	PayloadBytes    int64            // payload bytes received
	SavedBytes      int64            // payload bytes not stored thanks to revisits
	ConditionalSent int64            // requests sent with validators
}

// Recorder is an http.RoundTripper that records every exchange it carries
// into WARC files: a request record with the exact bytes sent and a response
// (or revisit) record with the exact bytes received, both after TLS and with
// chunked framing and content encoding as on the wire. It speaks HTTP/1.1
// only and never decodes content encodings (the caller's Accept-Encoding is
// sent as given; none is added).
//
// RoundTrip reads the whole body (up to MaxBody/MaxDuration), writes the
// records, waits until they are durable, commits the dedup claim and
// delivers the captures, and only then returns the response, whose Body
// replays the payload (content-coding kept). A Recorder is safe for
// concurrent use.
type Recorder struct {
	opts Options
	tr   *http.Transport
	log  *slog.Logger
	st   struct {
		fetches, responses, revDigest, revNotMod, pending, collisions, truncated, errors, payload, saved, cond atomic.Int64
	}
	skipMu  sync.Mutex
	skipped map[string]int64
	claims  ownClaims
}

// NewRecorder returns a Recorder writing to opts.Writer.
func NewRecorder(opts Options) (*Recorder, error) {
	if opts.Writer == nil {
		return nil, errors.New("crawl: recorder needs a Writer")
	}
	if opts.Verify == "" {
		opts.Verify = VerifySize
	}
	if _, err := ParseVerify(string(opts.Verify)); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxConnsPerHost <= 0 {
		opts.MaxConnsPerHost = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &dialer{d: net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}, tls: opts.TLSConfig}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.dial,
		DialTLSContext:        d.dialTLS,
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:    true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   opts.MaxConnsPerHost,
		MaxConnsPerHost:       opts.MaxConnsPerHost,
		IdleConnTimeout:       60 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
		ReadBufferSize:        64 << 10,
		WriteBufferSize:       16 << 10,
	}
	return &Recorder{opts: opts, tr: tr, log: opts.Logger}, nil
}

// Stats returns a snapshot of the counters.
func (r *Recorder) Stats() Stats {
	return Stats{
		Fetches: r.st.fetches.Load(), Responses: r.st.responses.Load(),
		RevisitsDigest: r.st.revDigest.Load(), RevisitsNotMod: r.st.revNotMod.Load(),
		Pending: r.st.pending.Load(), Collisions: r.st.collisions.Load(),
		Truncated: r.st.truncated.Load(), Errors: r.st.errors.Load(),
		PayloadBytes: r.st.payload.Load(), SavedBytes: r.st.saved.Load(),
		ConditionalSent: r.st.cond.Load(), Skipped: r.skippedCopy(),
	}
}

func (r *Recorder) skip(reason string) {
	r.skipMu.Lock()
	if r.skipped == nil {
		r.skipped = map[string]int64{}
	}
	r.skipped[reason]++
	r.skipMu.Unlock()
}

func (r *Recorder) skippedCopy() map[string]int64 {
	r.skipMu.Lock()
	defer r.skipMu.Unlock()
	m := make(map[string]int64, len(r.skipped))
	for k, v := range r.skipped {
		m[k] = v
	}
	return m
}

// Writer returns the WARC writer.
func (r *Recorder) Writer() *warcfile.Writer { return r.opts.Writer }

// CloseIdleConnections closes idle keep-alive connections.
func (r *Recorder) CloseIdleConnections() { r.tr.CloseIdleConnections() }

// Result describes what the recorder did with one exchange. Pass a *Result
// in the request context with WithResult to receive it.
type Result struct {
	// Captures are the durable records written (response or revisit first,
	// then the request).
	Captures []wayside.Capture
	// Original is set for revisits: the capture whose payload the revisit
	// stands for. For a 304 it lets a crawler read the unchanged page.
	Original *dedupindex.Original
	// Truncated is the WARC-Truncated value written ("" if none).
	Truncated string
}

type resultKey struct{}

// WithResult returns a context that makes RoundTrip fill res.
func WithResult(ctx context.Context, res *Result) context.Context {
	return context.WithValue(ctx, resultKey{}, res)
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		return nil, errors.New("crawl: request without URL")
	}
	if err := r.allow(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	ctx := req.Context()
	var notModOf *dedupindex.Original
	if r.opts.Conditional && r.opts.Dedup != nil && req.Header.Get("If-None-Match") == "" && req.Header.Get("If-Modified-Since") == "" &&
		(req.Method == "" || req.Method == http.MethodGet) {
		if o := r.validatorsFor(ctx, req.URL.String()); o != nil {
			req = req.Clone(ctx)
			if o.ETag != "" {
				req.Header.Set("If-None-Match", o.ETag)
			}
			if o.LastModified != "" {
				req.Header.Set("If-Modified-Since", o.LastModified)
			}
			notModOf = o
			r.st.cond.Add(1)
		}
	}

	ex := &exchange{maxBody: r.opts.MaxBody}
	fetchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	if r.opts.MaxDuration > 0 {
		t := time.AfterFunc(r.opts.MaxDuration, func() { timedOut.Store(true); cancel() })
		defer t.Stop()
	}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if c, ok := info.Conn.(*recConn); ok {
			c.attach(ex)
		}
	}}
	start := time.Now()
	out := req.WithContext(httptrace.WithClientTrace(fetchCtx, trace))
	resp, err := r.tr.RoundTrip(out)
	if err != nil {
		ex.finish()
		if timedOut.Load() {
			return nil, fmt.Errorf("crawl: fetch %s: no response within %s: %w", req.URL, r.opts.MaxDuration, context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("crawl: fetch %s: %w", req.URL, err)
	}
	truncated, err := r.drain(resp, &timedOut)
	rawReq, rawResp := ex.finish()
	if err != nil && ctx.Err() != nil {
		// The caller gave up (shutdown): nothing is recorded for an
		// exchange cut short by us.
		return nil, fmt.Errorf("crawl: fetch %s: %w", req.URL, ctx.Err())
	}
	if err != nil {
		truncated = "disconnect"
	}
	if ex.cut && truncated != "time" {
		truncated = "length"
	}
	if len(rawReq) == 0 || len(rawResp) == 0 {
		// Never write a record without the bytes it describes.
		return nil, fmt.Errorf("crawl: fetch %s: connection bytes not captured (request %d, response %d bytes)", req.URL, len(rawReq), len(rawResp))
	}
	r.st.fetches.Add(1)
	parsed, perr := parseResponse(rawResp)
	// Interim 1xx responses (100 Continue, 103 Early Hints) precede the
	// final response on the wire; the record holds the final response so
	// that every reader finds the same payload.
	for perr == nil && parsed.status >= 100 && parsed.status < 200 && parsed.status != http.StatusSwitchingProtocols && parsed.headLen < len(rawResp) {
		rawResp = rawResp[parsed.headLen:]
		parsed, perr = parseResponse(rawResp)
	}
	if perr != nil {
		return nil, fmt.Errorf("crawl: fetch %s: recorded response unreadable: %w", req.URL, perr)
	}
	r.st.payload.Add(int64(len(parsed.payload)))
	ip := ""
	if ta, ok := ex.remote.(*net.TCPAddr); ok {
		ip = ta.IP.String()
	} else if ex.remote != nil {
		ip, _, _ = net.SplitHostPort(ex.remote.String())
	}
	x := &fetched{uri: req.URL.String(), date: warcio.RecordDate(start, r.opts.Writer.Version()), ip: ip,
		rawReq: rawReq, rawResp: rawResp, resp: parsed, truncated: truncated, notModOf: notModOf}
	wctx := context.WithoutCancel(ctx)
	rc, err := r.write(wctx, x)
	if err != nil {
		return nil, err
	}
	dst, _ := ctx.Value(resultKey{}).(*Result)
	if b, ok := ctx.Value(batchedKey{}).(*batched); ok && b != nil {
		// The caller hands the wait off: what is known before the
		// records are durable now, the rest to done once they are.
		if dst != nil {
			*dst = Result{Original: rc.orig, Truncated: rc.truncated}
		}
		b.started, b.payload = true, parsed.payload
		for _, pl := range rc.wr.Placements {
			b.written += pl.Length
		}
		go func() { b.done(r.finish(wctx, rc, true)) }()
	} else {
		res, err := r.finish(wctx, rc, false)
		if err != nil {
			return nil, err
		}
		if dst != nil {
			*dst = *res
		}
	}
	// Hand the caller the response it asked for, body replayed from the
	// recorded payload.
	resp.Body = io.NopCloser(bytes.NewReader(parsed.payload))
	if truncated != "" {
		resp.ContentLength = int64(len(parsed.payload))
	}
	resp.Request = req
	return resp, nil
}

type batchedKey struct{}

// batched makes RoundTrip return as soon as the records are written,
// before they are durable: done receives the Result (or the error) from
// another goroutine once they are durable and the dedup claim is
// committed, after a group commit shared with other exchanges
// (warcfile.Writer.WaitDurableBatched). started says whether RoundTrip
// got that far (then done is called exactly once; else never). A Result
// passed with WithResult gets Original and Truncated at once, Captures
// never (done has them). The crawler uses it to fetch on while records
// gather for one fsync.
type batched struct {
	done    func(*Result, error)
	started bool   // set by RoundTrip, in the caller's goroutine
	written int64  // stored bytes of the records written, set with started
	payload []byte // the recorded payload (what the response's Body replays), set with started
}

// withBatched returns a context carrying b for RoundTrip.
func withBatched(ctx context.Context, b *batched) context.Context {
	return context.WithValue(ctx, batchedKey{}, b)
}

func (r *Recorder) allow(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("crawl: refusing %q: only http and https URLs are fetched", u.String())
	}
	if u.Host == "" {
		return fmt.Errorf("crawl: refusing %q: no host", u.String())
	}
	if r.opts.Allow != nil {
		if err := r.opts.Allow(u); err != nil {
			return err
		}
	}
	return nil
}

// drain reads the body to its end or a cap and reports the WARC-Truncated
// reason.
func (r *Recorder) drain(resp *http.Response, timedOut *atomic.Bool) (string, error) {
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if r.opts.MaxBody > 0 {
		body = io.LimitReader(resp.Body, r.opts.MaxBody+1)
	}
	n, err := io.Copy(io.Discard, body)
	if timedOut.Load() {
		return "time", nil
	}
	if err != nil {
		return "", err
	}
	if r.opts.MaxBody > 0 && n > r.opts.MaxBody {
		return "length", nil
	}
	return "", nil
}

func (r *Recorder) validatorsFor(ctx context.Context, uri string) *dedupindex.Original {
	os, err := r.opts.Dedup.Index().ByURL(ctx, r.opts.Dedup.Policy().Scope, dedupindex.URLKey(uri))
	if err != nil {
		r.st.errors.Add(1)
		r.log.Warn("crawl: dedup index by-URL lookup failed; sending an unconditional request", "uri", uri, "err", err)
		return nil
	}
	for i := len(os) - 1; i >= 0; i-- {
		o := os[i]
		if o.TargetURI == uri && o.Status/100 == 2 && (o.ETag != "" || o.LastModified != "") {
			return &o
		}
	}
	return nil
}
