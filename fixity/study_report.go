package fixity

import (
	"fmt"
	"slices"
	"sort"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// Hash policies the study tables are computed for.
const (
	// PolicyWayside is Wayside's hardened root (Manifest.Root): the
	// "full" policy of Fig 27.
	PolicyWayside = "wayside"
	// PolicyAlgorithm1 is the study's Algorithm 1 root.
	PolicyAlgorithm1 = "algorithm1"
	// PolicyEntity hashes only the entity bodies of the included
	// resources (EntityRoot): the "entity-only" policy of Fig 28.
	PolicyEntity = "entity-only"
)

// ArchiveStudy holds the study's per-archive tables and figures, computed
// from the comparable (non-transient) replays of each memento, in the order
// they were recorded: download k of a memento is its k-th comparable
// replay.
type ArchiveStudy struct {
	Archive  string `json:"archive"`
	Mementos int    `json:"mementos"`
	// Downloads is the largest number of comparable downloads of one
	// memento (the x range of Figs 27-28).
	Downloads int `json:"downloads"`
	// Policies holds one row of Table 5 and the figures per hash policy:
	// PolicyWayside always, PolicyAlgorithm1 and PolicyEntity when the
	// report could read the manifests.
	Policies []PolicyStats `json:"policies"`
	// Checks counts guideline findings by check name.
	Checks map[string]int `json:"checks,omitempty"`
}

// PolicyStats is Table 5 and Figs 20, 21 and 27/28 for one hash policy.
type PolicyStats struct {
	Policy   string `json:"policy"`
	Mementos int    `json:"mementos"`
	// Table 5: mementos whose downloads all gave one hash, that gave two
	// or more distinct hashes, and (among those with two or more
	// downloads) that gave a different hash on every download.
	OneHash            int     `json:"one_hash"`
	Several            int     `json:"several"`
	AlwaysDifferent    int     `json:"always_different"`
	OneHashPct         float64 `json:"one_hash_pct"`
	SeveralPct         float64 `json:"several_pct"`
	AlwaysDifferentPct float64 `json:"always_different_pct"`
	// Histogram is Fig 20: Histogram[k-1] mementos produced k distinct
	// hashes.
	Histogram []int `json:"histogram"`
	// Cumulative is Fig 21: Cumulative[k-1] is the percentage of
	// mementos that produced at most k distinct hashes.
	Cumulative []float64 `json:"cumulative"`
	// NewPerDownload is Figs 27-28: NewPerDownload[i] mementos produced at
	// download i+1 a hash none of their earlier downloads produced
	// (download 1 always does).
	NewPerDownload []int `json:"new_per_download"`
}

// EntityRoot is the entity-only hash of m: the RFC 9162 tree over
// Encode('E', key, entity hash) for each included resource that has an
// entity (the raw body hash when there is one, else the rewritten one),
// sorted by key, then entity hash. Status, headers and URI-Ms are ignored.
func EntityRoot(m *Manifest) merkle.Hash {
	type kv struct{ k, e string }
	var es []kv
	for i := range m.Resources {
		r := &m.Resources[i]
		if !r.Included() {
			continue
		}
		if e := entity(r); e != "" {
			es = append(es, kv{r.Key, e})
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].k != es[j].k {
			return es[i].k < es[j].k
		}
		return es[i].e < es[j].e
	})
	leaves := make([][]byte, len(es))
	for i, e := range es {
		leaves[i] = merkle.Encode(merkle.TagEntity, []byte(e.k), []byte(e.e))
	}
	return merkle.Root(leaves)
}

// studyDownload is the hashes of one comparable download under each policy
// ("" when unknown).
type studyDownload map[string]string

// buildStudy computes the per-archive study tables. downloads holds, per
// archive and memento, the comparable downloads in order.
func buildStudy(archives []string, downloads map[string]map[string][]studyDownload, checks map[string]map[string]int, policies []string) []ArchiveStudy {
	var out []ArchiveStudy
	for _, a := range archives {
		ms := downloads[a]
		st := ArchiveStudy{Archive: a, Mementos: len(ms), Checks: checks[a]}
		urims := make([]string, 0, len(ms))
		for u, ds := range ms {
			urims = append(urims, u)
			st.Downloads = max(st.Downloads, len(ds))
		}
		sort.Strings(urims)
		for _, pol := range policies {
			ps := PolicyStats{Policy: pol, NewPerDownload: make([]int, st.Downloads)}
			var distinct []int
			for _, u := range urims {
				seen := map[string]bool{}
				n := 0
				for i, d := range ms[u] {
					h := d[pol]
					if h == "" {
						continue
					}
					n++
					if !seen[h] {
						seen[h] = true
						ps.NewPerDownload[i]++
					}
				}
				if n == 0 {
					continue
				}
				ps.Mementos++
				k := len(seen)
				distinct = append(distinct, k)
				switch {
				case k == 1:
					ps.OneHash++
				default:
					ps.Several++
				}
				if n >= 2 && k == n {
					ps.AlwaysDifferent++
				}
			}
			if ps.Mementos == 0 {
				continue
			}
			maxK := slices.Max(distinct)
			ps.Histogram = make([]int, maxK)
			for _, k := range distinct {
				ps.Histogram[k-1]++
			}
			ps.Cumulative = make([]float64, maxK)
			acc := 0
			for i, c := range ps.Histogram {
				acc += c
				ps.Cumulative[i] = pct(acc, ps.Mementos)
			}
			ps.OneHashPct, ps.SeveralPct, ps.AlwaysDifferentPct = pct(ps.OneHash, ps.Mementos), pct(ps.Several, ps.Mementos), pct(ps.AlwaysDifferent, ps.Mementos)
			st.Policies = append(st.Policies, ps)
		}
		out = append(out, st)
	}
	return out
}

// pct is 100*n/d rounded to two decimals.
func pct(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(int(10000*float64(n)/float64(d)+0.5)) / 100
}

// StudyText renders the study tables as plain text (the pinned form).
func (r *Report) StudyText() string {
	var b []byte
	w := func(format string, a ...any) { b = fmt.Appendf(b, format, a...) }
	for _, st := range r.Study {
		w("archive %s: %d mementos, up to %d downloads\n", st.Archive, st.Mementos, st.Downloads)
		for _, ps := range st.Policies {
			w("  table5 %-11s mementos %d  one-hash %d (%.2f%%)  several %d (%.2f%%)  always-different %d (%.2f%%)\n",
				ps.Policy, ps.Mementos, ps.OneHash, ps.OneHashPct, ps.Several, ps.SeveralPct, ps.AlwaysDifferent, ps.AlwaysDifferentPct)
			w("  fig20  %-11s %v\n", ps.Policy, ps.Histogram)
			w("  fig21  %-11s %v\n", ps.Policy, ps.Cumulative)
			w("  fig27/28 %-9s %v\n", ps.Policy, ps.NewPerDownload)
		}
		names := make([]string, 0, len(st.Checks))
		for n := range st.Checks {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			w("  check  %s %d\n", n, st.Checks[n])
		}
	}
	return string(b)
}
