package postdedup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// Policy selects which responses take part in deduplication. Originals
// and duplicates must both pass it.
type Policy struct {
	// MinPayloadSize is the smallest payload deduplicated (default
	// DefaultMinPayloadSize; empty payloads never are).
	MinPayloadSize int64
	// Statuses lists the HTTP statuses deduplicated (default 2xx).
	Statuses []dedupindex.StatusRange
	// Match is dedupindex.MatchDigest (URL-agnostic, default) or MatchURL
	// (a copy refers only to an original of the same URL).
	Match dedupindex.Match
}

// DefaultMinPayloadSize is the default size floor: below it a revisit
// record saves little or nothing over the response it replaces.
const DefaultMinPayloadSize = 1024

func (p *Policy) defaults() {
	if p.MinPayloadSize < 1 {
		p.MinPayloadSize = DefaultMinPayloadSize
	}
	if p.Statuses == nil {
		p.Statuses = []dedupindex.StatusRange{{Min: 200, Max: 299}}
	}
}

// why returns why e is outside the policy ("" when inside).
func (p *Policy) why(e *Entry) string {
	if e.PayloadLength < p.MinPayloadSize || e.PayloadLength == 0 {
		return "payload below the size floor"
	}
	for _, r := range p.Statuses {
		if e.Status >= r.Min && e.Status <= r.Max {
			return ""
		}
	}
	return "status outside the filter"
}

// ResolveOptions configure Resolve.
type ResolveOptions struct {
	Policy Policy
	// Index, when set, is consulted for originals in other collections
	// (read only); Scope names the scope to look in (default
	// dedupindex.DefaultScope). Such an original is used only when its
	// record can be read from OriginalDirs and its payload equals the copy
	// byte for byte.
	Index        dedupindex.Index
	Scope        string
	OriginalDirs []string
	// MaxVariants bounds the distinct payloads kept per digest cluster
	// (true collisions); copies beyond it are kept in full (default 16).
	MaxVariants int
	// MaxMemory bounds the stage's buffers as ManifestOptions.MaxMemory
	// does: each sort (the plan's, the pin join's) holds a 32nd of it in
	// memory before a run is spilled to TempDir, and a cluster's
	// reference payloads an eighth (a larger payload is streamed from its
	// record for each comparison), so that the process stays near
	// MaxMemory whatever the size of the input (default 256 MiB).
	MaxMemory int64
	TempDir   string
	// Progress, when set, is called every few thousand clusters.
	Progress func(ResolveStats)
}

// ResolveStats summarises Resolve.
type ResolveStats struct {
	Entries       int   `json:"entries"`
	Clusters      int   `json:"clusters"`
	Duplicates    int   `json:"duplicates"`     // copies planned as revisits
	External      int   `json:"external"`       // of which refer to another collection
	SavedPayload  int64 `json:"saved_payload"`  // payload bytes no longer stored
	SavedStored   int64 `json:"saved_stored"`   // stored bytes of the copies (before their revisits)
	BytesCompared int64 `json:"bytes_compared"` // payload bytes compared byte for byte
	// Collisions counts copies whose digest matched a reference but whose
	// payload differs: they are kept in full (and may start a new variant).
	Collisions int `json:"collisions"`
	// Pinned counts records kept in full because a revisit already in the
	// input refers to them.
	Pinned int `json:"pinned"`
	// Kept counts records left as they are, by reason code.
	Kept map[string]int `json:"kept,omitempty"`
	// BadInput lists damaged or unusual records (by file and offset).
	BadInput []Problem `json:"bad_input,omitempty"`
	// CollisionList lists the copies found to collide.
	CollisionList []Problem `json:"collision_list,omitempty"`
}

// maxListed bounds the per-record lists in stats (counts stay exact).
const maxListed = 10000

func (s *ResolveStats) keep(code string) {
	if s.Kept == nil {
		s.Kept = map[string]int{}
	}
	s.Kept[code]++
}

type resolver struct {
	opts      ResolveOptions
	files     *openFiles
	kc        *keyCheck
	inputs    map[string]bool // absolute paths of the inputs
	st        ResolveStats
	plan      *cdxj.Sorter
	pins      *pinCursor
	buf       []byte
	loaded    int64        // reference payload bytes held for the cluster
	live      []*reference // references holding payloads
	externals []warcfile.ReadFile
	locs      *warcfile.Locations // opens externals' originals (OriginalDirs)
}

// Resolve reads manifest parts, walks each digest cluster in copy-number
// order, compares candidate copies with their cluster's original byte for
// byte and writes the plan (one line per copy to rewrite as a revisit,
// sorted by file and offset) to out, atomically.
func Resolve(ctx context.Context, manifests []string, out string, opts ResolveOptions) (ResolveStats, error) {
	opts.Policy.defaults()
	if opts.MaxVariants <= 0 {
		opts.MaxVariants = 16
	}
	if opts.Scope == "" {
		opts.Scope = dedupindex.DefaultScope
	}
	ms, err := readManifests(manifests)
	if err != nil {
		return ResolveStats{}, err
	}
	defer func() {
		for _, m := range ms {
			m.Close()
		}
	}()
	r := &resolver{opts: opts, files: &openFiles{}, kc: newKeyCheck(ms[0].Header), inputs: map[string]bool{}}
	defer r.files.close()
	for _, f := range unionFiles(ms) {
		if abs, err := filepath.Abs(f.Path); err == nil {
			r.inputs[abs] = true
		}
	}
	revisits := 0
	for _, f := range unionFiles(ms) {
		revisits += f.Revisits
	}
	if revisits > 0 {
		pins, err := buildPins(ctx, manifests, opts)
		if err != nil {
			return r.st, err
		}
		defer pins.close()
		r.pins = pins
	}
	r.plan = cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(opts.MaxMemory, 1), TempDir: opts.TempDir})
	defer r.plan.Close()
	r.locs = warcfile.NewLocations(opts.OriginalDirs)
	defer func() {
		for _, f := range r.externals {
			f.Close()
		}
		r.locs.Close()
	}()
	for part, m := range ms {
		if err := r.walk(ctx, part, m); err != nil {
			return r.st, err
		}
	}
	for _, m := range ms {
		for _, p := range m.Problems {
			r.badInput(p)
		}
	}
	hdr := PlanHeader{Format: lineFormat, Manifests: manifests, Policy: opts.Policy}
	err = fsutil.WriteFileAtomic(out, 0o644, func(w io.Writer) error {
		hb, _ := json.Marshal(hdr)
		fmt.Fprintf(w, "%s\t%s\n", planFormat, hb)
		_, err := r.plan.WriteTo(w)
		return err
	})
	if err != nil {
		return r.st, fmt.Errorf("postdedup: plan: %w", err)
	}
	return r.st, nil
}

func (r *resolver) badInput(p Problem) {
	if len(r.st.BadInput) < maxListed {
		r.st.BadInput = append(r.st.BadInput, p)
	}
}

// walk processes the clusters of one manifest part, entry by entry:
// memory holds one cluster's references, never the cluster.
func (r *resolver) walk(ctx context.Context, part int, m *ManifestReader) error {
	var cur string
	groups := map[string]*group{}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.opts.Progress != nil && n%(64<<10) == 0 && n > 0 {
				r.opts.Progress(r.st)
			}
		}
		e, err := m.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		r.st.Entries++
		if e.Key != cur {
			cur = e.Key
			clear(groups)
			// The cluster's references go with it: r.live held on to
			// every payload loaded since the start (memory grew with the
			// input).
			clear(r.live)
			r.live, r.loaded = r.live[:0], 0
			r.st.Clusters++
		}
		if err := r.entry(ctx, part, e, groups); err != nil {
			return err
		}
	}
}

// group is a cluster, or (same-URL matching) the part of a cluster with
// one URL: its references (distinct payloads), earliest first.
type group struct {
	refs   []*reference
	looked bool // the external index was consulted
}

// entry decides what becomes of one record, in copy-number order.
func (r *resolver) entry(ctx context.Context, part int, e *Entry, groups map[string]*group) error {
	if e.Key == noKey || !e.CanBeOriginal() {
		r.note(e, e.NotOriginal)
		return nil
	}
	if why := r.opts.Policy.why(e); why != "" {
		r.st.keep("policy")
		return nil
	}
	gk := ""
	if r.opts.Policy.Match == dedupindex.MatchURL {
		gk = dedupindex.URLKey(e.URI)
	}
	g := groups[gk]
	if g == nil {
		g = &group{}
		groups[gk] = g
	}
	pinned := r.pins.pinned(part, e.linePrefix())
	if pinned {
		r.st.Pinned++
	}
	if !g.looked && r.opts.Index != nil {
		g.looked = true
		ref, err := r.external(ctx, e)
		if err != nil {
			return err
		}
		if ref != nil {
			g.refs = append(g.refs, ref)
		}
	}
	if len(g.refs) == 0 {
		// The earliest capture is the original: it stays as it is.
		g.refs = append(g.refs, &reference{orig: localOriginal(e), entry: e})
		return nil
	}
	if pinned {
		return nil
	}
	if !e.CanBeDuplicate() {
		r.note(e, e.NotDuplicate)
		return nil
	}
	for _, ref := range g.refs {
		if e.SameAs != "" && e.SameAs == ref.class() && len(e.Head) > 0 {
			// Compared byte for byte during the scan (e and ref are both
			// equal to the record e.SameAs names).
			r.st.BytesCompared += e.PayloadLength
			return r.addCopy(e, e.Version, e.Headers, e.Head, ref)
		}
	}
	for _, ref := range g.refs {
		same, rec, err := r.sameAs(ref, e)
		if err != nil {
			return err
		}
		r.track(ref)
		if same {
			if rec.HTTP == nil || int64(len(rec.HTTP.Head)) != rec.HTTP.HeadLength || len(rec.HTTP.Head) == 0 {
				return fmt.Errorf("postdedup: %s offset %d: HTTP head not read back", e.Path, e.Offset)
			}
			var hs [][2]string
			for _, f := range rec.Headers {
				hs = append(hs, [2]string{f.Name, f.Value})
			}
			return r.addCopy(e, rec.Version, hs, rec.HTTP.Head, ref)
		}
	}
	// A true collision: the digest matches but the payload differs. The
	// copy is kept in full and becomes a reference of its own.
	r.st.Collisions++
	if len(r.st.CollisionList) < maxListed {
		r.st.CollisionList = append(r.st.CollisionList, Problem{Path: e.Path, Offset: e.Offset,
			Message: fmt.Sprintf("payload differs from the original %s (%s offset %d) with the same digest %s: kept in full", g.refs[0].orig.RecordID, g.refs[0].orig.Path, g.refs[0].orig.Offset, e.Key)})
	}
	if len(g.refs) < r.opts.MaxVariants {
		g.refs = append(g.refs, &reference{orig: localOriginal(e), entry: e})
	}
	return nil
}

// track counts ref's payload, once loaded, in the cluster's loaded bytes;
// beyond loadMemory (a share of MaxMemory), the cluster's other
// references are dropped and re-read when needed again.
func (r *resolver) track(ref *reference) {
	if ref.loaded && !ref.counted {
		ref.counted = true
		r.loaded += int64(len(ref.payload))
		r.live = append(r.live, ref)
	}
	if r.loaded > loadMemory(r.opts.MaxMemory) {
		for _, o := range r.live {
			if o != ref {
				o.payload, o.loaded, o.counted = nil, false, false
			}
		}
		r.live = append(r.live[:0], ref)
		r.loaded = int64(len(ref.payload))
	}
}

// addCopy plans the revisit of a copy found equal to ref.
func (r *resolver) addCopy(e *Entry, version string, headers [][2]string, head []byte, ref *reference) error {
	c := &Copy{Path: e.Path, Offset: e.Offset, Length: e.Length, RecordID: e.RecordID, URI: e.URI, Version: version,
		Head: head, Headers: headers, PayloadLength: e.PayloadLength, Key: e.Key, Original: ref.orig}
	r.st.Duplicates++
	if ref.orig.External {
		r.st.External++
	}
	r.st.SavedPayload += e.PayloadLength
	r.st.SavedStored += e.Length
	r.buf = c.appendLine(r.buf[:0])
	return r.plan.Add(r.buf)
}

// external looks the cluster's digest up in the index of other
// collections and returns a reference to a verified original there.
func (r *resolver) external(ctx context.Context, e *Entry) (*reference, error) {
	d, err := digest.Normalize(e.Capture.Digest)
	if err != nil {
		return nil, nil
	}
	k := dedupindex.Key{Scope: r.opts.Scope, Digest: d}
	if r.opts.Policy.Match == dedupindex.MatchURL {
		k.URL = dedupindex.URLKey(e.URI)
	}
	o, ok, err := r.opts.Index.Lookup(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("postdedup: look up %s in the index: %w", d, err)
	}
	if !ok {
		return nil, nil
	}
	// A base name in OriginalDirs, a WARC file stored in a WACZ, a
	// location URL (warcfile.Locations).
	f, err := r.locs.Open(ctx, o.File)
	if err != nil {
		r.st.keep("external-unreadable")
		return nil, nil
	}
	if named, ok := f.(interface{ Name() string }); !ok {
		// A WACZ member or a remote file: never one of the inputs.
	} else if abs, aerr := filepath.Abs(named.Name()); aerr == nil && r.inputs[strings.TrimSuffix(abs, warcio.OpenSuffix)] {
		f.Close()
		return nil, nil // one of the inputs: deduplicated locally
	}
	r.externals = append(r.externals, f)
	rec, err := warcio.ReadAt(f, o.File, o.Offset, o.Length, warcio.Options{})
	if err != nil {
		r.st.keep("external-unreadable")
		return nil, nil
	}
	c := rec.Capture(o.File)
	cd, _ := digest.Normalize(c.Digest)
	if rec.RecordID != o.RecordID || !c.Complete() || cd != d || rec.HTTP == nil {
		r.st.keep("external-unverified")
		return nil, nil
	}
	orig := Original{RecordID: rec.RecordID, URI: c.URI, DateText: strings.TrimSpace(rec.Header("WARC-Date")), Digest: cd,
		PayloadLength: rec.PayloadLength, File: o.File, Offset: o.Offset, Length: rec.Length, External: true}
	return &reference{orig: orig, external: f}, nil
}

// note counts an entry left as it is, and lists bad input.
func (r *resolver) note(e *Entry, reason string) {
	code := ReasonCode(reason)
	r.st.keep(code)
	if IsBadInput(code) {
		r.badInput(Problem{Path: e.Path, Offset: e.Offset, Message: reason})
	}
}

// sortedKeys returns a map's keys in order (deterministic output).
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
