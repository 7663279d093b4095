package fixity

import (
	"fmt"
	"slices"
	"sort"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// Class is the kind of change between two replays of one memento, after the
// study's taxonomy.
type Class string

// The study's seven change classes, in the order they are checked (first
// match wins).
const (
	ClassSet                Class = "set"                 // the set of resources differs
	ClassStatus             Class = "status"              // a resource's HTTP status differs
	ClassURIM               Class = "urim"                // the URI-M (or its redirect chain) differs, entity unchanged
	ClassHeader             Class = "header"              // only selected headers differ, entity and URI-M unchanged
	ClassRepresentation     Class = "representation"      // the entity changed at the same URI-M
	ClassURIMRepresentation Class = "urim-representation" // redirected to another memento whose entity differs
	ClassTimeout            Class = "timeout"             // a resource got no response in one replay
)

// Wayside's extra classes. ClassOther is a change the study has no name
// for; the others are outcomes that are not changes.
const (
	ClassOther     Class = "other"     // roots differ but no included resource explains it (e.g. tampering with the manifest's resource list order)
	ClassNone      Class = "none"      // same root
	ClassAccepted  Class = "accepted"  // a root already in the accepted-state set
	ClassTransient Class = "transient" // a replay met a transient error: not compared
	ClassRefused   Class = "refused"   // the URI-M is outside the configured archives: not replayed
	ClassMissing   Class = "missing"   // the archive answered the URI-M with an error status (404, 410...): no memento, not compared
	// ClassURIMHeaderV1 is the merged URI-M/Header class that histories
	// written before the two were split (policy wayside-fixity/1) hold.
	// It still counts as a change; new records never use it.
	ClassURIMHeaderV1 Class = "urim-header"
)

// StudyClasses returns the study's seven change classes in its order.
func StudyClasses() []Class { return slices.Clone(classOrder[:7]) }

// classOrder is the study's order, then Wayside's extra change class.
var classOrder = []Class{ClassSet, ClassStatus, ClassURIM, ClassHeader, ClassRepresentation, ClassURIMRepresentation, ClassTimeout, ClassOther}

// ChangeClasses returns the change classes in the order they are checked:
// the study's seven, then ClassOther.
func ChangeClasses() []Class { return slices.Clone(classOrder) }

// IsChange reports whether c counts as a change of the memento.
func (c Class) IsChange() bool { return slices.Contains(classOrder, c) || c == ClassURIMHeaderV1 }

// Change is the result of comparing two manifests of one URI-M.
type Change struct {
	Class Class `json:"class"`
	// Resources lists every resource that differs, with its own class.
	Resources []ResourceChange `json:"resources,omitempty"`
	// LikeForLike is false when the two replays used a different browser
	// or exclusion policy, so a change may come from the tooling.
	LikeForLike bool     `json:"like_for_like"`
	Notes       []string `json:"notes,omitempty"`
	Before      string   `json:"before"`
	After       string   `json:"after"`
	// Checks are the guideline 5-7 findings of either replay ("before" or
	// "after"): a flagged replay's root may differ for the archive's
	// reasons, not the memento's.
	Checks []ChangeCheck `json:"checks,omitempty"`
}

// ChangeCheck is a guideline finding of one of the two compared replays.
type ChangeCheck struct {
	When string `json:"when"` // "before" or "after"
	Check
}

// ResourceChange names one resource that caused a change.
type ResourceChange struct {
	Key    string `json:"key"`
	URL    string `json:"url"`
	Class  Class  `json:"class"`
	Detail string `json:"detail"`
	Before string `json:"before,omitempty"` // resource root before (rewritten side)
	After  string `json:"after,omitempty"`
	// Leaves names the leaves that differ, e.g. "rewritten status 200→404",
	// "raw header x-archive-orig-server", "raw body", "rewritten uri-m".
	Leaves []string `json:"leaves,omitempty"`
}

// Compare classifies the change from a to b (two replays of the same
// URI-M). It does not look at accepted states; see CompareAccepted.
func Compare(a, b *Manifest) Change {
	ch := Change{Before: a.Root.String(), After: b.Root.String(),
		LikeForLike: a.Context.Browser == b.Context.Browser && a.Context.PolicyDigest == b.Context.PolicyDigest}
	if !ch.LikeForLike {
		ch.Notes = append(ch.Notes, fmt.Sprintf("different context: browser %q vs %q, policy %s vs %s",
			a.Context.Browser, b.Context.Browser, short(a.Context.PolicyDigest), short(b.Context.PolicyDigest)))
	}
	if a.CanonicalURIM != b.CanonicalURIM {
		ch.Notes = append(ch.Notes, fmt.Sprintf("different URI-Ms: %s vs %s", a.CanonicalURIM, b.CanonicalURIM))
	}
	for _, c := range a.Checks {
		ch.Checks = append(ch.Checks, ChangeCheck{When: "before", Check: c})
	}
	for _, c := range b.Checks {
		ch.Checks = append(ch.Checks, ChangeCheck{When: "after", Check: c})
	}
	if a.Root == b.Root {
		ch.Class = ClassNone
		return ch
	}
	ga, gb := groups(a), groups(b)
	keys := map[string]bool{}
	for k := range ga {
		keys[k] = true
	}
	for k := range gb {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	found := map[Class]bool{}
	for _, k := range sorted {
		xs, ys := ga[k], gb[k]
		if len(xs) != len(ys) {
			detail := fmt.Sprintf("loaded %d time(s) before, %d after", len(xs), len(ys))
			for _, side := range []struct {
				when string
				m    *Manifest
			}{{"before", a}, {"after", b}} {
				for _, r := range side.m.Resources {
					if r.Key == k && r.Excluded == ExcludedWrongStatus {
						detail += fmt.Sprintf("; %s it was dropped for a wrong status (guideline 7)", side.when)
						break
					}
				}
			}
			u := ""
			if len(xs) > 0 {
				u = xs[0].URL
			} else {
				u = ys[0].URL
			}
			ch.Resources = append(ch.Resources, ResourceChange{Key: k, URL: u, Class: ClassSet, Detail: detail})
			found[ClassSet] = true
			continue
		}
		for i := range xs {
			c, detail := pairClass(xs[i], ys[i])
			if c == ClassNone {
				continue
			}
			found[c] = true
			leaves := append(leafDiff("rewritten", xs[i].Rewritten, ys[i].Rewritten), leafDiff("raw", xs[i].Raw, ys[i].Raw)...)
			ch.Resources = append(ch.Resources, ResourceChange{Key: k, URL: ys[i].URL, Class: c, Detail: detail,
				Before: rootOf(xs[i].Rewritten), After: rootOf(ys[i].Rewritten), Leaves: leaves})
		}
	}
	ch.Class = ClassOther
	for _, c := range classOrder {
		if found[c] {
			ch.Class = c
			break
		}
	}
	if ch.Class == ClassOther {
		ch.Notes = append(ch.Notes, "roots differ but no included resource does")
	}
	return ch
}

// CompareAccepted compares cur with the previous comparable manifest prev,
// unless cur's root is in the accepted-state set, or either replay was
// transient.
func CompareAccepted(accepted []merkle.Hash, prev, cur *Manifest) Change {
	if cur.Context.Transient {
		return Change{Class: ClassTransient, After: cur.Root.String(), LikeForLike: true, Notes: cur.Context.Errors}
	}
	if slices.Contains(accepted, cur.Root) {
		ch := Change{Class: ClassAccepted, After: cur.Root.String(), LikeForLike: true}
		if prev == nil {
			ch.Class, ch.Notes = ClassNone, []string{"first replay"}
			return ch
		}
		ch.Before = prev.Root.String()
		if prev.Root == cur.Root {
			ch.Class = ClassNone
		}
		return ch
	}
	if prev == nil {
		return Change{Class: ClassNone, After: cur.Root.String(), LikeForLike: true, Notes: []string{"first replay"}}
	}
	return Compare(prev, cur)
}

func rootOf(p *Response) string {
	if p == nil {
		return ""
	}
	return p.Root.String()
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// groups returns the included resources of m by key, each group in
// canonical order.
func groups(m *Manifest) map[string][]*Resource {
	rs := slices.Clone(m.Resources)
	sortResources(rs)
	g := map[string][]*Resource{}
	for i := range rs {
		if rs[i].Included() {
			g[rs[i].Key] = append(g[rs[i].Key], &rs[i])
		}
	}
	return g
}

// entity returns the hash that stands for a resource's entity: the raw body
// when hashed (it includes text), else the rewritten body hash.
func entity(r *Resource) string {
	if r.Raw != nil && r.Raw.Body == BodyHashed {
		return r.Raw.BodyHash.String()
	}
	if r.Rewritten != nil && r.Rewritten.Body == BodyHashed {
		return r.Rewritten.BodyHash.String()
	}
	return ""
}

func finalURIM(r *Resource) string {
	if r.Rewritten == nil {
		return ""
	}
	s := r.Rewritten.FinalURIM
	for _, h := range r.Rewritten.Redirects {
		s += fmt.Sprintf(" <%d %s", h.Status, h.URIM)
	}
	return s
}

// pairClass classifies the difference between two replays of one resource.
func pairClass(x, y *Resource) (Class, string) {
	if rootOf(x.Rewritten) == rootOf(y.Rewritten) && rootOf(x.Raw) == rootOf(y.Raw) {
		return ClassNone, ""
	}
	rx, ry := x.Rewritten, y.Rewritten
	if !rx.hasResponse() || !ry.hasResponse() {
		return ClassTimeout, fmt.Sprintf("outcome %s before, %s after", outcome(rx), outcome(ry))
	}
	if rx.Status != ry.Status {
		return ClassStatus, fmt.Sprintf("status %d before, %d after", rx.Status, ry.Status)
	}
	if x.Raw.hasResponse() && y.Raw.hasResponse() && x.Raw.Status != y.Raw.Status {
		return ClassStatus, fmt.Sprintf("raw status %d before, %d after", x.Raw.Status, y.Raw.Status)
	}
	sameURIM := finalURIM(x) == finalURIM(y)
	if entity(x) == entity(y) {
		if !sameURIM {
			return ClassURIM, fmt.Sprintf("URI-M %s before, %s after; entity unchanged", finalURIM(x), finalURIM(y))
		}
		return ClassHeader, "selected headers changed: " + headerDiff(x, y)
	}
	if sameURIM {
		return ClassRepresentation, fmt.Sprintf("entity %s before, %s after", short(entity(x)), short(entity(y)))
	}
	return ClassURIMRepresentation, fmt.Sprintf("URI-M %s before, %s after, and its entity %s before, %s after",
		rx.FinalURIM, ry.FinalURIM, short(entity(x)), short(entity(y)))
}

func outcome(p *Response) string {
	if p == nil {
		return "missing"
	}
	return p.statusField()
}

// headerDiff lists the header names whose values differ on either side.
func headerDiff(x, y *Resource) string {
	names := map[string]bool{}
	diff := func(a, b *Response) {
		if a == nil || b == nil {
			return
		}
		am, bm := map[string][]string{}, map[string][]string{}
		for _, h := range a.Headers {
			am[h.Name] = append(am[h.Name], h.Value)
		}
		for _, h := range b.Headers {
			bm[h.Name] = append(bm[h.Name], h.Value)
		}
		for n := range am {
			if !slices.Equal(am[n], bm[n]) {
				names[n] = true
			}
		}
		for n := range bm {
			if !slices.Equal(am[n], bm[n]) {
				names[n] = true
			}
		}
	}
	diff(x.Rewritten, y.Rewritten)
	diff(x.Raw, y.Raw)
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "(no selected header differs; redirects or raw side differ)"
	}
	return fmt.Sprint(out)
}

// leafDiff names the leaves of one side of a resource that differ.
func leafDiff(side string, a, b *Response) []string {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil || b == nil:
		return []string{side + " response missing on one side"}
	case a.Root == b.Root:
		return nil
	}
	var out []string
	if a.statusField() != b.statusField() {
		out = append(out, fmt.Sprintf("%s status %s→%s", side, a.statusField(), b.statusField()))
	}
	if a.HeadersRoot != b.HeadersRoot {
		am, bm := map[string]string{}, map[string]string{}
		for _, h := range a.Headers {
			am[h.Name] += h.Value + "\n"
		}
		for _, h := range b.Headers {
			bm[h.Name] += h.Value + "\n"
		}
		names := map[string]bool{}
		for n, v := range am {
			if bm[n] != v {
				names[n] = true
			}
		}
		for n, v := range bm {
			if am[n] != v {
				names[n] = true
			}
		}
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, n := range sorted {
			out = append(out, side+" header "+n)
		}
	}
	if a.Body != b.Body || a.BodyHash != b.BodyHash {
		out = append(out, side+" body")
	}
	if a.FinalURIM != b.FinalURIM {
		out = append(out, side+" uri-m")
	}
	if !slices.EqualFunc(a.Redirects, b.Redirects, func(x, y Hop) bool { return x.Status == y.Status && x.URIM == y.URIM }) {
		out = append(out, side+" redirects")
	}
	return out
}
