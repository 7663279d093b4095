package fixity

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// ManifestFormat is the version of the manifest JSON layout written. Format
// 2 added the Algorithm 1 roots, evidence references, guideline checks, raw
// header values and hop details; format 1 manifests still read and verify.
const ManifestFormat = 2

// Outcomes of one response.
const (
	OutcomeOK      = "ok"      // a response arrived (any status)
	OutcomeFailed  = "failed"  // the request failed without a response
	OutcomeTimeout = "timeout" // no response before the hard cap
	OutcomeBlocked = "blocked" // refused by fixity's scope rules
)

// Body rules: what was hashed for an entity body.
const (
	BodyHashed        = "hashed"         // BodyHash is SHA-256 of the decoded entity
	BodyTextRewritten = "text-rewritten" // a rewritten text body: never hashed
	BodyNone          = "none"           // no entity (redirect, failure, 204, 304, HEAD)
)

// Manifest records one replay of a composite memento: its root, every leaf
// that went into it and the context, enough to recompute the root without a
// browser (Verify) and to explain a change (Compare).
type Manifest struct {
	Format        int         `json:"format"`
	URIM          string      `json:"urim"`
	CanonicalURIM string      `json:"canonical_urim"`
	Archive       string      `json:"archive"`
	Root          merkle.Hash `json:"root"`
	RewrittenRoot merkle.Hash `json:"rewritten_root"`
	RawRoot       merkle.Hash `json:"raw_root"`
	// Algorithm1 holds the roots computed exactly as the study's
	// Algorithm 1 (see the package doc), beside Wayside's hardened Root.
	// Absent in format 1 manifests.
	Algorithm1 *Algorithm1Roots `json:"algorithm1,omitempty"`
	Context    Context          `json:"context"`
	// Checks records what the study's guidelines 5-7 found (raw not raw,
	// an archive-side cache answered, a resource with a wrong status).
	Checks    []Check    `json:"checks,omitempty"`
	Resources []Resource `json:"resources"`
	// Evidence references the WARC files this replay was kept in, if any.
	// It is not part of any root: evidence may be evicted while the
	// manifest stays.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Algorithm1Roots are the roots of the study's four nested trees: the green
// root over the red roots of the rewritten and the raw capture.
type Algorithm1Roots struct {
	Root      merkle.Hash `json:"root"`
	Rewritten merkle.Hash `json:"rewritten"`
	Raw       merkle.Hash `json:"raw"`
}

// Context is what a later comparison needs to know to compare like with like.
type Context struct {
	Browser       string    `json:"browser"`
	UserAgent     string    `json:"user_agent,omitempty"`
	PolicyVersion string    `json:"policy_version"`
	PolicyDigest  string    `json:"policy_digest"`
	Started       time.Time `json:"started"`
	Finished      time.Time `json:"finished"`
	// Settled is "quiet" when loading went quiet, "cap" when the hard cap
	// ended the wait with requests still pending.
	Settled string `json:"settled"`
	// Transient is set when the replay met an error that must not be
	// compared as a change (5xx, timeout, browser crash); Errors says why.
	Transient bool     `json:"transient,omitempty"`
	Errors    []string `json:"errors,omitempty"`
	// LiveWeb lists URLs outside the archive list that the page tried to
	// load; they were blocked and are not part of the root.
	LiveWeb []string `json:"live_web,omitempty"`
	// Warnings are observations that do not affect the root, e.g. a raw
	// memento that does not look raw.
	Warnings []string `json:"warnings,omitempty"`
}

// Resource is one resource of the composite memento: one request chain the
// page made (redirects followed), keyed by its canonical URI-R.
type Resource struct {
	// Key is the canonical URI-R (for mementos) or canonical URL.
	Key string `json:"key"`
	// URL is the URL that stands for the resource, as loaded: the
	// requested URL, or the first URI-M its redirects reached when the
	// request escaped rewriting (RequestedURL then holds what was asked).
	URL          string `json:"url"`
	RequestedURL string `json:"requested_url,omitempty"`
	// URIM is the canonical requested URI-M ("" when not a memento).
	URIM string `json:"urim,omitempty"`
	// Datetime is the 14-digit (or shorter) timestamp of the requested URI-M.
	Datetime string `json:"datetime,omitempty"`
	Type     string `json:"type,omitempty"`
	// Excluded names why the resource is not part of the root ("live-web",
	// "replay-infrastructure", or an archive rule's reason).
	Excluded  string    `json:"excluded,omitempty"`
	Rewritten *Response `json:"rewritten,omitempty"`
	Raw       *Response `json:"raw,omitempty"`
}

// Response is what one side (rewritten replay or raw fetch) got for a resource.
type Response struct {
	FinalURL    string      `json:"final_url,omitempty"`
	FinalURIM   string      `json:"final_urim"`
	Outcome     string      `json:"outcome"`
	Status      int         `json:"status,omitempty"`
	Error       string      `json:"error,omitempty"`
	Redirects   []Hop       `json:"redirects,omitempty"`
	Headers     []Header    `json:"headers,omitempty"`
	MIME        string      `json:"mime,omitempty"`
	Body        string      `json:"body"`
	BodyHash    merkle.Hash `json:"body_hash,omitzero"`
	BodyLength  int64       `json:"body_length,omitempty"`
	HeadersRoot merkle.Hash `json:"headers_root"`
	Root        merkle.Hash `json:"root"`
	// Suspect is set on a raw response that does not look raw (it holds
	// rewritten URI-Ms). It is a warning and not hashed.
	Suspect string `json:"suspect,omitempty"`
	// Cache names the signs that a cache answered (guideline 6), e.g.
	// "age: 3600; x-cache: HIT"; not hashed.
	Cache string `json:"cache,omitempty"`
	// Evidence locates the response record of this response in the
	// evidence WARC of its side (Manifest.Evidence), when kept.
	Evidence *RecordRef `json:"evidence,omitempty"`
}

// Hop is one redirect in a request chain.
type Hop struct {
	Status int    `json:"status"`
	URIM   string `json:"urim"` // canonical URL that answered with the redirect
	// URL is the URL that answered, as loaded (format 2), and Headers its
	// selected headers; neither is part of the hardened root, both are
	// part of the Algorithm 1 root.
	URL     string   `json:"url,omitempty"`
	Headers []Header `json:"headers,omitempty"`
}

// Header is one selected response header (lowercase name).
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Raw is the value as served when Value is canonicalised (Location);
	// the Algorithm 1 root hashes it, the hardened root hashes Value.
	Raw string `json:"raw,omitempty"`
}

// Included reports whether r is part of the root.
func (r *Resource) Included() bool { return r.Excluded == "" }

// Main returns the resource of the requested URI-M itself (the main
// document), or nil when the replay recorded none.
func (m *Manifest) Main() *Resource {
	for i := range m.Resources {
		if res := &m.Resources[i]; res.URL == m.URIM || res.RequestedURL == m.URIM {
			return res
		}
	}
	return nil
}

// Unusable says why the root of this replay must not be compared (nor
// taken as a baseline), or "" when it may be: the replay recorded no
// answer for the URI-M itself, the archive answered it with an error
// status (4xx: no memento there; 5xx: transient), or the replay met
// transient errors. transient says whether a retry may help. One rule for
// wayside fixity replay and the sweeper.
func (m *Manifest) Unusable() (reason string, transient bool) {
	main := m.Main()
	switch {
	case main == nil || main.Rewritten == nil:
		return "the replay recorded no answer for the URI-M itself", true
	case main.Rewritten.Outcome == OutcomeTimeout:
		return "the URI-M got no answer before the time limit (timeout)", true
	case main.Rewritten.Outcome != OutcomeOK:
		return "the request for the URI-M " + main.Rewritten.Outcome, true
	case main.Rewritten.Status >= 500:
		return fmt.Sprintf("the archive answered %d %s: a transient error", main.Rewritten.Status, http.StatusText(main.Rewritten.Status)), true
	case main.Rewritten.Status >= 400:
		return fmt.Sprintf("the archive answered %d %s: no memento there", main.Rewritten.Status, http.StatusText(main.Rewritten.Status)), false
	case m.Context.Transient:
		return "transient errors: " + strings.Join(m.Context.Errors, "; "), true
	}
	return "", false
}

// statusField is the value of the status leaf.
func (p *Response) statusField() string {
	if p.Outcome == OutcomeOK {
		return strconv.Itoa(p.Status)
	}
	return p.Outcome
}

// hasResponse reports whether a response arrived.
func (p *Response) hasResponse() bool { return p != nil && p.Outcome == OutcomeOK }

// seal computes HeadersRoot and Root of p from its recorded fields.
func (p *Response) seal() {
	sort.Slice(p.Headers, func(i, j int) bool {
		if p.Headers[i].Name != p.Headers[j].Name {
			return p.Headers[i].Name < p.Headers[j].Name
		}
		return p.Headers[i].Value < p.Headers[j].Value
	})
	hl := make([][]byte, len(p.Headers))
	for i, h := range p.Headers {
		hl[i] = merkle.Encode(merkle.TagHeader, []byte(h.Name), []byte(h.Value))
	}
	p.HeadersRoot = merkle.Root(hl)
	leaves := [][]byte{
		merkle.Encode(merkle.TagStatus, []byte(p.statusField())),
		merkle.Encode(merkle.TagHeadersRoot, p.HeadersRoot[:]),
	}
	if p.Body == BodyHashed {
		leaves = append(leaves, merkle.Encode(merkle.TagBody, p.BodyHash[:]))
	} else {
		leaves = append(leaves, merkle.Encode(merkle.TagNoBody, []byte(p.Body)))
	}
	u := merkle.Sum([]byte(p.FinalURIM))
	leaves = append(leaves, merkle.Encode(merkle.TagURIM, u[:]))
	for _, h := range p.Redirects {
		leaves = append(leaves, merkle.Encode(merkle.TagRedirect, []byte(strconv.Itoa(h.Status)), []byte(h.URIM)))
	}
	p.Root = merkle.Root(leaves)
}

// sortResources puts resources in canonical order: key, datetime, then the
// rewritten and raw roots, so equal composite mementos list them alike.
func sortResources(rs []Resource) {
	root := func(p *Response) string {
		if p == nil {
			return ""
		}
		return p.Root.String()
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		if a.Datetime != b.Datetime {
			return a.Datetime < b.Datetime
		}
		if ra, rb := root(a.Rewritten), root(b.Rewritten); ra != rb {
			return ra < rb
		}
		if ra, rb := root(a.Raw), root(b.Raw); ra != rb {
			return ra < rb
		}
		return a.URL < b.URL
	})
}

// Seal computes every hash of m from its recorded fields, in place: the
// per-response trees, the two capture trees and the root.
func (m *Manifest) Seal() {
	for i := range m.Resources {
		r := &m.Resources[i]
		if r.Rewritten != nil {
			r.Rewritten.seal()
		}
		if r.Raw != nil {
			r.Raw.seal()
		}
	}
	sortResources(m.Resources)
	var rw, raw [][]byte
	for i := range m.Resources {
		r := &m.Resources[i]
		if !r.Included() {
			continue
		}
		if r.Rewritten != nil {
			rw = append(rw, merkle.Encode(merkle.TagResource, []byte(r.Key), r.Rewritten.Root[:]))
		}
		if r.Raw != nil {
			raw = append(raw, merkle.Encode(merkle.TagResource, []byte(r.Key), r.Raw.Root[:]))
		}
	}
	m.RewrittenRoot = merkle.Root(rw)
	m.RawRoot = merkle.Root(raw)
	m.Root = merkle.Root([][]byte{
		merkle.Encode(merkle.TagCapture, []byte("rewritten"), m.RewrittenRoot[:]),
		merkle.Encode(merkle.TagCapture, []byte("raw"), m.RawRoot[:]),
	})
	if m.Format >= 2 {
		a := ComputeAlgorithm1(m)
		m.Algorithm1 = &a
	}
}

// Recompute rebuilds the root of m from its leaves without a browser and
// returns it; m is not modified.
func Recompute(m *Manifest) merkle.Hash {
	c := m.clone()
	c.Seal()
	return c.Root
}

// Verify recomputes every hash of m from its recorded leaves and returns an
// error naming each stored hash that does not match.
func Verify(m *Manifest) error {
	c := m.clone()
	c.Seal()
	var bad []string
	// Compare per resource by position after sorting the original alike.
	orig := m.clone()
	sortResources(orig.Resources)
	for i := range c.Resources {
		a, b := &orig.Resources[i], &c.Resources[i]
		for _, side := range []struct {
			name string
			x, y *Response
		}{{"rewritten", a.Rewritten, b.Rewritten}, {"raw", a.Raw, b.Raw}} {
			if side.x == nil {
				continue
			}
			if side.x.HeadersRoot != side.y.HeadersRoot {
				bad = append(bad, fmt.Sprintf("resource %s (%s): headers root %s, recomputed %s", a.URL, side.name, side.x.HeadersRoot, side.y.HeadersRoot))
			}
			if side.x.Root != side.y.Root {
				bad = append(bad, fmt.Sprintf("resource %s (%s): root %s, recomputed %s", a.URL, side.name, side.x.Root, side.y.Root))
			}
		}
	}
	if m.RewrittenRoot != c.RewrittenRoot {
		bad = append(bad, fmt.Sprintf("rewritten root %s, recomputed %s", m.RewrittenRoot, c.RewrittenRoot))
	}
	if m.RawRoot != c.RawRoot {
		bad = append(bad, fmt.Sprintf("raw root %s, recomputed %s", m.RawRoot, c.RawRoot))
	}
	if m.Root != c.Root {
		bad = append(bad, fmt.Sprintf("root %s, recomputed %s", m.Root, c.Root))
	}
	switch {
	case m.Algorithm1 == nil && m.Format >= 2:
		bad = append(bad, "no Algorithm 1 roots in a format 2 manifest")
	case m.Algorithm1 != nil && *m.Algorithm1 != ComputeAlgorithm1(m):
		a := ComputeAlgorithm1(m)
		bad = append(bad, fmt.Sprintf("Algorithm 1 root %s, recomputed %s", m.Algorithm1.Root, a.Root))
	}
	if len(bad) > 0 {
		return fmt.Errorf("fixity: verify %s: %s", m.URIM, strings.Join(bad, "; "))
	}
	return nil
}

func (m *Manifest) clone() *Manifest {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("fixity: manifest does not marshal: %v", err))
	}
	var c Manifest
	if err := json.Unmarshal(b, &c); err != nil {
		panic(fmt.Sprintf("fixity: manifest does not unmarshal: %v", err))
	}
	return &c
}

// ReadManifest reads a manifest JSON file.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fixity: read manifest: %w", err)
	}
	return ParseManifest(b, path)
}

// ParseManifest decodes a manifest; name is used in errors.
func ParseManifest(b []byte, name string) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			return nil, fmt.Errorf("fixity: manifest %s: at byte offset %d: %w", name, se.Offset, err)
		}
		return nil, fmt.Errorf("fixity: manifest %s: %w", name, err)
	}
	if m.Format < 1 || m.Format > ManifestFormat {
		return nil, fmt.Errorf("fixity: manifest %s: format %d, this version reads 1 to %d", name, m.Format, ManifestFormat)
	}
	return &m, nil
}

// Marshal returns the indented JSON of m.
func (m *Manifest) Marshal() []byte {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("fixity: manifest does not marshal: %v", err))
	}
	return append(b, '\n')
}
