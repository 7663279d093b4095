package fixity

import (
	"sort"
	"strconv"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// ComputeAlgorithm1 computes the study's Algorithm 1 roots of m from its
// recorded leaves, as the package doc describes (section "Algorithm 1");
// m is not modified.
func ComputeAlgorithm1(m *Manifest) Algorithm1Roots {
	var rw, raw []a1Resource
	for i := range m.Resources {
		r := &m.Resources[i]
		if !r.Included() {
			continue
		}
		rw = append(rw, a1Resources(r.Rewritten)...)
		raw = append(raw, a1Resources(r.Raw)...)
	}
	a := Algorithm1Roots{Rewritten: a1Red(rw), Raw: a1Red(raw)}
	a.Root = merkle.PlainRoot([]merkle.Hash{a.Rewritten, a.Raw})
	return a
}

// a1Resource is one resource of a capture as the study's WARC holds it: one
// HTTP response (a redirect hop is a resource of its own) and its blue root.
type a1Resource struct {
	urim string
	blue merkle.Hash
}

// a1Resources returns the resources one response contributes: one per
// redirect hop, then the final answer. A response that never arrived is in
// no WARC and contributes nothing.
func a1Resources(p *Response) []a1Resource {
	if p == nil || p.Outcome != OutcomeOK {
		return nil
	}
	var out []a1Resource
	for _, h := range p.Redirects {
		u := h.URL
		if u == "" {
			u = h.URIM // format 1 manifests kept only the canonical form
		}
		out = append(out, a1Resource{urim: u, blue: a1Blue(h.Status, h.Headers, nil, u)})
	}
	u := p.FinalURL
	if u == "" {
		u = p.FinalURIM
	}
	var body *merkle.Hash
	// The rewritten side hashes bodies of non-text types only, the raw side
	// every body: exactly what Body == BodyHashed records.
	if p.Body == BodyHashed {
		body = &p.BodyHash
	}
	return append(out, a1Resource{urim: u, blue: a1Blue(p.Status, p.Headers, body, u)})
}

// a1Blue is the blue tree of one resource: (brown root, SHA-256(R),
// SHA-256(URI-M)), the entity node left out when no entity is hashed.
func a1Blue(status int, hs []Header, body *merkle.Hash, urim string) merkle.Hash {
	nodes := []merkle.Hash{a1Brown(status, hs)}
	if body != nil {
		nodes = append(nodes, *body)
	}
	nodes = append(nodes, merkle.PlainLeaf([]byte(urim)))
	return merkle.PlainRoot(nodes)
}

// a1Brown is the brown tree over the status and the selected headers, each
// a line "name: value" (the status as ":status: 200"), sorted.
func a1Brown(status int, hs []Header) merkle.Hash {
	lines := []string{":status: " + strconv.Itoa(status)}
	for _, h := range hs {
		v := h.Value
		if h.Raw != "" {
			v = h.Raw
		}
		lines = append(lines, h.Name+": "+v)
	}
	sort.Strings(lines)
	nodes := make([]merkle.Hash, len(lines))
	for i, l := range lines {
		nodes[i] = merkle.PlainLeaf([]byte(l))
	}
	return merkle.PlainRoot(nodes)
}

// a1Red is the red tree of one capture over its blue roots, ordered by
// URI-M, then blue root.
func a1Red(rs []a1Resource) merkle.Hash {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].urim != rs[j].urim {
			return rs[i].urim < rs[j].urim
		}
		return rs[i].blue.String() < rs[j].blue.String()
	})
	nodes := make([]merkle.Hash, len(rs))
	for i, r := range rs {
		nodes[i] = r.blue
	}
	return merkle.PlainRoot(nodes)
}
