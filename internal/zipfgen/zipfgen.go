// Package zipfgen generates deterministic, Zipf-skewed synthetic MementoMap
// inputs for benchmarks and evaluation: many hosts with one key, a few huge
// hosts, a TLD mix with multi-label public suffixes (co.uk, com.br, gov.pt),
// subdomains, realistic path depths and skewed fan-outs per depth.
package zipfgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Config sets the size and shape of a synthetic archive.
type Config struct {
	// Keys is the number of present (archived) keys.
	Keys int
	// Seed makes the output reproducible.
	Seed uint64
	// Absent is the number of absent keys to generate for a labelled
	// lookup set: half on archived hosts, half on unseen hosts.
	Absent int
}

// Entry is one archived key with its memento and URI-R counts.
type Entry struct {
	Key  string
	M, R int64
}

var tlds = []struct {
	suffix string // SURT form
	weight int
}{
	{"com", 45}, {"org", 8}, {"net", 6}, {"de", 6}, {"uk,co", 5}, {"br,com", 4}, {"pt,gov", 2}, {"pt", 2},
	{"jp", 3}, {"fr", 3}, {"ru", 3}, {"nl", 2}, {"it", 2}, {"au,com", 2}, {"edu", 2}, {"gov", 1}, {"io,github", 1},
	{"info", 1}, {"es", 1}, {"ca", 1},
}

var syll = []string{"ka", "lo", "mi", "ne", "ra", "to", "su", "vi", "pe", "da", "ze", "bo", "ly", "qu", "an", "or", "el", "is", "um", "ex"}
var subs = []string{"blog", "news", "m", "shop", "en", "api", "docs", "mail", "media", "static"}
var exts = []string{"", "", "", ".html", ".php", ".pdf", ".jpg", ".css", ".js"}

type gen struct {
	r    *rand.Rand
	tsum int
	seen map[string]bool
}

func (g *gen) word(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(syll[g.r.IntN(len(syll))])
	}
	return b.String()
}

func (g *gen) tld() string {
	x := g.r.IntN(g.tsum)
	for _, t := range tlds {
		if x < t.weight {
			return t.suffix
		}
		x -= t.weight
	}
	return "com"
}

// zipf draws from {0..n-1} with P(i) ∝ 1/(i+1)^s.
func (g *gen) zipf(n int, s float64) int {
	if n <= 1 {
		return 0
	}
	// Inverse transform on the continuous approximation.
	u := g.r.Float64()
	if s == 1 {
		return min(n-1, int(math.Exp(u*math.Log(float64(n+1))))-1)
	}
	a := 1 - s
	x := math.Pow(u*(math.Pow(float64(n+1), a)-1)+1, 1/a) - 1
	return min(n-1, max(0, int(x)))
}

// hostSize draws a host's key count: P(k) ∝ k^-1.9, capped.
func (g *gen) hostSize(limit int) int {
	u := g.r.Float64()
	k := int(math.Pow(1-u, -1/0.9))
	return max(1, min(k, limit))
}

func (g *gen) host() string {
	for {
		h := g.tld() + "," + g.word(2+g.r.IntN(3))
		if g.r.IntN(5) == 0 {
			h += "," + subs[g.r.IntN(len(subs))]
		}
		if !g.seen[h] {
			g.seen[h] = true
			return h
		}
	}
}

// fanout is the number of distinct segments at a path depth for a host of
// size k (shrinking with depth, like the paper's measured means).
func fanout(k, depth int) int {
	base := []float64{25, 7.25, 4.96, 3.26, 2.5, 2, 2, 2}[min(depth, 7)]
	return max(1, int(base*math.Pow(float64(k), 0.45)))
}

func (g *gen) path(k int) string {
	depth := 0
	for depth < 8 && g.r.Float64() < []float64{0.93, 0.7, 0.55, 0.4, 0.3, 0.2, 0.1, 0.05}[depth] {
		depth++
	}
	var b strings.Builder
	b.WriteByte('/')
	for d := range depth {
		if d > 0 {
			b.WriteByte('/')
		}
		i := g.zipf(fanout(k, d), 1.1)
		if g.r.IntN(10) == 0 {
			fmt.Fprintf(&b, "%d", i+1000*d)
		} else {
			b.WriteString(syll[i%len(syll)] + syll[(i/len(syll))%len(syll)])
			if i >= len(syll)*len(syll) {
				fmt.Fprintf(&b, "%d", i)
			}
		}
		if d == depth-1 {
			b.WriteString(exts[g.r.IntN(len(exts))])
		}
	}
	return b.String()
}

// Generate returns cfg.Keys present entries sorted by key and cfg.Absent
// absent keys (sorted), none of which is present.
func Generate(cfg Config) ([]Entry, []string) {
	g := &gen{r: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), seen: map[string]bool{}}
	for _, t := range tlds {
		g.tsum += t.weight
	}
	keys := make(map[string]struct{}, cfg.Keys+cfg.Absent)
	var present []Entry
	var absent []string
	type host struct {
		name string
		size int
	}
	var hosts []host
	want := cfg.Keys + cfg.Absent/2
	limit := max(1, cfg.Keys/20)
	total := 0
	for total < want {
		h := host{g.host(), g.hostSize(limit)}
		hosts = append(hosts, h)
		total += h.size
	}
	// Keys per host, the held-out ones (absent) picked at random.
	pAbsent := float64(cfg.Absent/2) / float64(total)
	for _, h := range hosts {
		made := 0
		for tries := 0; made < h.size && tries < h.size*4+8; tries++ {
			k := h.name + ")" + g.path(h.size)
			if _, dup := keys[k]; dup {
				continue
			}
			keys[k] = struct{}{}
			made++
			if g.r.Float64() < pAbsent && len(absent) < cfg.Absent/2 {
				absent = append(absent, k)
				continue
			}
			if len(present) < cfg.Keys {
				m := int64(1 + g.zipf(1000, 1.3))
				r := int64(1)
				if g.r.IntN(5) == 0 {
					r = min(m, int64(2+g.r.IntN(4)))
				}
				present = append(present, Entry{Key: k, M: m, R: r})
			}
		}
	}
	// Unseen hosts, including under multi-label public suffixes.
	for len(absent) < cfg.Absent {
		k := g.host() + ")" + g.path(1)
		if _, dup := keys[k]; !dup {
			keys[k] = struct{}{}
			absent = append(absent, k)
		}
	}
	sort.Slice(present, func(i, j int) bool { return present[i].Key < present[j].Key })
	sort.Strings(absent)
	return present, absent
}

// URI returns an http URI whose SURT (without query) is key, for keys made
// by Generate.
func URI(key string) string {
	host, path, _ := strings.Cut(key, ")")
	labels := strings.Split(host, ",")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return "http://" + strings.Join(labels, ".") + path
}
