package dedupindex

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

// Match selects how a new capture is matched against originals.
type Match int

const (
	// MatchDigest (the default) is URL-agnostic: any original with the same
	// payload digest in a consulted scope is a duplicate.
	MatchDigest Match = iota
	// MatchURL also requires the same target URI, compared by URLKey (SURT),
	// like Heritrix's default same-URL deduplication.
	MatchURL
)

func (m Match) String() string {
	switch m {
	case MatchDigest:
		return "digest"
	case MatchURL:
		return "url"
	}
	return "unknown"
}

// ParseMatch parses "digest" (also "url-agnostic") or "url" (also "same-url").
func ParseMatch(s string) (Match, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "digest", "url-agnostic", "":
		return MatchDigest, nil
	case "url", "same-url":
		return MatchURL, nil
	}
	return 0, fmt.Errorf("dedupindex: unknown match mode %q (want digest or url)", s)
}

// StatusRange is an inclusive range of HTTP status codes.
type StatusRange struct{ Min, Max int }

// ParseStatuses parses a comma-separated status filter such as "2xx",
// "200-299,304" or "200".
func ParseStatuses(s string) ([]StatusRange, error) {
	var out []StatusRange
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		var r StatusRange
		switch {
		case len(f) == 3 && f[1:] == "xx":
			// HTTP defines the classes 1xx to 5xx; single codes and ranges
			// may go up to 999 (servers do answer 999).
			if f[0] < '1' || f[0] > '5' {
				return nil, fmt.Errorf("dedupindex: %q is not an HTTP status class (1xx to 5xx)", f)
			}
			r = StatusRange{int(f[0]-'0') * 100, int(f[0]-'0')*100 + 99}
		case strings.Contains(f, "-"):
			lo, hi, _ := strings.Cut(f, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("dedupindex: bad status range %q", f)
			}
			r = StatusRange{a, b}
		default:
			a, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("dedupindex: bad status %q", f)
			}
			r = StatusRange{a, a}
		}
		if r.Min < 100 || r.Max > 999 || r.Min > r.Max {
			return nil, fmt.Errorf("dedupindex: bad status range %q", f)
		}
		out = append(out, r)
	}
	return out, nil
}

// Policy decides which captures are deduplicated and against what.
type Policy struct {
	// Match is MatchDigest (default) or MatchURL.
	Match Match
	// MinPayloadSize is the smallest payload, in bytes, that is
	// deduplicated (default and minimum 1: empty payloads never are).
	MinPayloadSize int64
	// Statuses lists the HTTP statuses deduplicated (default 2xx).
	Statuses []StatusRange
	// Scope is the read-write scope: claims and commits go there, and its
	// originals are duplicates (default DefaultScope).
	Scope string
	// ReadOnlyScopes are consulted, in order and before Scope, for
	// originals but never written (earlier crawls, other collections).
	ReadOnlyScopes []string
	// Window, when positive, ignores originals dated more than Window
	// before the new capture: the new capture is written in full and (in
	// the read-write scope, with an index implementing WindowClaimer)
	// becomes the original.
	Window time.Duration
}

// withDefaults returns p with defaults filled in, or an error.
func (p Policy) withDefaults() (Policy, error) {
	if p.Match != MatchDigest && p.Match != MatchURL {
		return p, fmt.Errorf("dedupindex: policy: unknown match mode %d", p.Match)
	}
	if p.MinPayloadSize < 1 {
		p.MinPayloadSize = 1
	}
	if p.Statuses == nil {
		p.Statuses = []StatusRange{{200, 299}}
	}
	for _, r := range p.Statuses {
		if r.Min > r.Max {
			return p, fmt.Errorf("dedupindex: policy: bad status range %d-%d", r.Min, r.Max)
		}
	}
	if p.Scope == "" {
		p.Scope = DefaultScope
	}
	for _, s := range p.ReadOnlyScopes {
		if s == "" || s == p.Scope {
			return p, fmt.Errorf("dedupindex: policy: read-only scope %q is empty or the read-write scope", s)
		}
	}
	if p.Window < 0 {
		return p, fmt.Errorf("dedupindex: policy: negative window %s", p.Window)
	}
	p.Statuses = slices.Clone(p.Statuses)
	p.ReadOnlyScopes = slices.Clone(p.ReadOnlyScopes)
	return p, nil
}

func (p Policy) statusOK(s int) bool {
	for _, r := range p.Statuses {
		if s >= r.Min && s <= r.Max {
			return true
		}
	}
	return false
}

// Action is what the crawler must do with a capture.
type Action int

const (
	// WriteResponse: write a full response record and do not commit it.
	WriteResponse Action = iota + 1
	// WriteResponseAndCommit: write a full response record, make it
	// durable, then Commit the decision's Ticket (Cancel it on failure).
	WriteResponseAndCommit
	// WriteRevisit: write a revisit record referring to Decision.Original.
	WriteRevisit
)

func (a Action) String() string {
	switch a {
	case WriteResponse:
		return "write-response"
	case WriteResponseAndCommit:
		return "write-response-and-commit"
	case WriteRevisit:
		return "write-revisit"
	}
	return "unknown"
}

// Reason explains a Decision; crawlers count and log them.
type Reason string

// Reasons.
const (
	ReasonDuplicate   Reason = "duplicate"     // an original exists: revisit
	ReasonNew         Reason = "new"           // no original: this capture becomes it
	ReasonPending     Reason = "pending"       // another writer is storing the original
	ReasonExpired     Reason = "expired"       // the only original is older than the window
	ReasonEmpty       Reason = "empty-payload" // empty payloads are never deduplicated
	ReasonTooSmall    Reason = "too-small"     // payload below MinPayloadSize
	ReasonStatus      Reason = "status"        // status not in the filter
	ReasonUnsupported Reason = "unsupported"   // the index cannot replace an expired original
)

// Candidate describes a fetched response before it is written.
type Candidate struct {
	URI           string    // target URI
	Digest        string    // payload digest, any encoding package digest parses
	PayloadLength int64     // entity length after removing transfer-encoding
	Status        int       // HTTP status
	Date          time.Time // WARC-Date the record will get (zero: now)
}

// Decision is the result of Deduper.Decide.
type Decision struct {
	Action Action `json:"action"`
	Reason Reason `json:"reason"`
	// Key is the key consulted (zero when no lookup was needed).
	Key Key `json:"key"`
	// Original and Scope are set for WriteRevisit: the original to refer to
	// and the scope it was found in.
	Original Original `json:"original"`
	Scope    string   `json:"scope,omitempty"`
	// Ticket is set for WriteResponseAndCommit.
	Ticket Ticket `json:"ticket"`
}

// Deduper applies a Policy in front of an Index. It is safe for
// concurrent use.
type Deduper struct {
	idx Index
	pol Policy
	now func() time.Time
}

// NewDeduper returns a Deduper applying p to idx.
func NewDeduper(idx Index, p Policy) (*Deduper, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Deduper{idx: idx, pol: p, now: time.Now}, nil
}

// Policy returns the effective policy (defaults filled in).
func (d *Deduper) Policy() Policy { return d.pol }

// Index returns the underlying index.
func (d *Deduper) Index() Index { return d.idx }

// Key returns the key a capture of uri with payload digest dig has in
// scope under the policy.
func (d *Deduper) Key(scope, uri, dig string) (Key, error) {
	c, err := digest.Normalize(dig)
	if err != nil {
		return Key{}, fmt.Errorf("dedupindex: %w", err)
	}
	return d.pol.Match.Key(scope, uri, c), nil
}

// Key returns the key of an original of uri with the canonical payload
// digest dig in scope under match mode m: under MatchURL it carries the
// SURT of uri (URLKey).
func (m Match) Key(scope, uri, dig string) Key {
	k := Key{Scope: scope, Digest: dig}
	if m == MatchURL {
		k.URL = URLKey(uri)
	}
	return k
}

// Decide decides how to write c. On error the crawler writes a full
// response and does not commit.
func (d *Deduper) Decide(ctx context.Context, c Candidate) (Decision, error) {
	dg, err := digest.Parse(c.Digest)
	if err != nil {
		return Decision{}, fmt.Errorf("dedupindex: capture of %s: %w", c.URI, err)
	}
	if c.PayloadLength == 0 || isEmptyDigest(dg) {
		return Decision{Action: WriteResponse, Reason: ReasonEmpty}, nil
	}
	if c.PayloadLength < d.pol.MinPayloadSize {
		return Decision{Action: WriteResponse, Reason: ReasonTooSmall}, nil
	}
	if !d.pol.statusOK(c.Status) {
		return Decision{Action: WriteResponse, Reason: ReasonStatus}, nil
	}
	k := d.pol.Match.Key(d.pol.Scope, c.URI, dg.String())
	var notBefore time.Time
	if d.pol.Window > 0 {
		date := c.Date
		if date.IsZero() {
			date = d.now()
		}
		notBefore = date.Add(-d.pol.Window)
	}
	fresh := func(o Original) bool { return notBefore.IsZero() || !o.Date.Before(notBefore) }
	expired := false
	for _, s := range d.pol.ReadOnlyScopes {
		rk := k
		rk.Scope = s
		o, ok, err := d.idx.Lookup(ctx, rk)
		if err != nil {
			return Decision{}, fmt.Errorf("dedupindex: look up %s in scope %q: %w", k.Digest, s, err)
		}
		if ok && fresh(o) {
			return Decision{Action: WriteRevisit, Reason: ReasonDuplicate, Key: rk, Original: o, Scope: s}, nil
		}
		expired = expired || ok
	}
	var r ClaimResult
	wc, canReplace := d.idx.(WindowClaimer)
	if !notBefore.IsZero() && canReplace {
		r, err = wc.ClaimNewer(ctx, k, notBefore)
	} else {
		r, err = d.idx.Claim(ctx, k)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("dedupindex: claim %s: %w", k.Digest, err)
	}
	switch r.State {
	case Duplicate:
		if !fresh(r.Original) {
			return Decision{Action: WriteResponse, Reason: ReasonUnsupported, Key: k}, nil
		}
		return Decision{Action: WriteRevisit, Reason: ReasonDuplicate, Key: k, Original: r.Original, Scope: k.Scope}, nil
	case Pending:
		return Decision{Action: WriteResponse, Reason: ReasonPending, Key: k}, nil
	case Claimed:
		reason := ReasonNew
		if expired {
			reason = ReasonExpired
		}
		return Decision{Action: WriteResponseAndCommit, Reason: reason, Key: k, Ticket: r.Ticket}, nil
	}
	return Decision{}, fmt.Errorf("dedupindex: claim %s: unknown state %d", k.Digest, r.State)
}

// Commit records o, a durably written full response, as the original for
// a WriteResponseAndCommit decision's ticket.
func (d *Deduper) Commit(ctx context.Context, t Ticket, o Original) error {
	if t.Key.Scope != d.pol.Scope {
		return fmt.Errorf("%w: commit to scope %q (the read-write scope is %q)", ErrReadOnly, t.Key.Scope, d.pol.Scope)
	}
	return d.idx.Commit(ctx, t, o)
}

// Cancel drops the claim of a WriteResponseAndCommit decision whose record
// could not be written.
func (d *Deduper) Cancel(ctx context.Context, t Ticket) error {
	return d.idx.Cancel(ctx, t)
}

// isEmptyDigest reports whether d is the digest of the empty payload.
func isEmptyDigest(d digest.Digest) bool {
	if d.Alg == digest.SHA1 {
		return d.String() == digest.EmptySHA1
	}
	return d.Equal(digest.Of(d.Alg, nil))
}
