package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

func mergeStrings(t *testing.T, inputs []string) (string, MergeStats, error) {
	var maps []*Map
	var names []string
	for i, in := range inputs {
		m, err := NewMap([]byte(in))
		if err != nil {
			return "", MergeStats{}, err
		}
		if err := m.Check(); err != nil {
			return "", MergeStats{}, err
		}
		maps = append(maps, m)
		names = append(names, fmt.Sprintf("map%d", i+1))
	}
	var out bytes.Buffer
	st, err := Merge(&out, maps, names)
	return out.String(), st, err
}

func TestMergeDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/merge.txt", func(t *testing.T, c *ddtest.Case) string {
		inputs := strings.Split(c.Input, "==\n")
		out, st, err := mergeStrings(t, inputs)
		if err != nil {
			return "error: " + err.Error()
		}
		// Every positive key of every input is positive in the merge.
		m, _ := NewMap([]byte(out))
		if err := m.Check(); err != nil {
			t.Errorf("%s: merged map fails Check: %v", c.Pos, err)
		}
		for _, in := range inputs {
			for _, l := range strings.Split(in, "\n") {
				f := strings.Fields(l)
				if len(f) < 2 || strings.HasPrefix(l, "!") || f[1] == "0" || strings.HasPrefix(f[1], "0/") {
					continue
				}
				if got, _ := m.Lookup([]byte(f[0]), nil); !got.Present {
					t.Errorf("%s: %s lost by the merge", c.Pos, f[0])
				}
			}
		}
		return out + fmt.Sprintf("# lines %d summed %d exclusions-resolved %d", st.Lines, st.Summed, st.ExclusionsResolved)
	})
}

// TestDefectNothingSummedOnMerge: the reference implementation kept one of
// the duplicate lines; Wayside sums them with honest bounds.
func TestDefectNothingSummedOnMerge(t *testing.T) {
	out, st, err := mergeStrings(t, []string{"com,a)/ 3/1\ncom,b)/* 10+/4\n", "com,a)/ 4/1\ncom,b)/* 5/2\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := "!meta {\"merged_from\":[\"map1\",\"map2\"]}\ncom,a)/ 7/2-\ncom,b)/* 15+/6-\n"
	if out != want || st.Summed != 2 {
		t.Fatalf("got %q (%+v), want %q", out, st, want)
	}
}

// TestDefectFirstRecordNeverLookedAt: the reference binary search never
// compared the first record. Every record of maps of 1 to 40 lines is
// found, the first included.
func TestDefectFirstRecordNeverLookedAt(t *testing.T) {
	for n := 1; n <= 40; n++ {
		var sb strings.Builder
		sb.WriteString("!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&sb, "com,h%03d)/ %d\n", i, i+1)
		}
		m, err := NewMap([]byte(sb.String()))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("com,h%03d)/", i)
			if got, err := m.Lookup([]byte(k), nil); err != nil || !got.Present || string(got.Key) != k {
				t.Fatalf("n=%d: %s: %+v %v", n, k, got, err)
			}
		}
	}
}

// TestDefectCrashAfterLastRecord: the reference crashed on keys sorting
// after the last record. Keys before, between and after all answer.
func TestDefectCrashAfterLastRecord(t *testing.T) {
	m, err := NewMap([]byte("com,b)/ 1\ncom,d)/ 1")) // no final newline either
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"com,a)/": false, "com,b)/": true, "com,c)/": false, "com,d)/": true, "com,e)/": false, "zzzz,zz)/zz": false, "~)/": false} {
		got, err := m.Lookup([]byte(k), nil)
		if err != nil || got.Present != want {
			t.Errorf("%s: %+v %v, want %v", k, got, err, want)
		}
	}
}

// TestDefectPublicSuffixRollups: the reference rolled up uk,co,* br,com,*
// and pt,gov,*, answering every unseen domain under them positively.
func TestDefectPublicSuffixRollups(t *testing.T) {
	var sb strings.Builder
	var keys []string
	for _, ps := range []string{"br,com", "pt,gov", "uk,co", "io,github", "com"} {
		for i := 0; i < 40; i++ {
			keys = append(keys, fmt.Sprintf("%s,site%02d)/", ps, i), fmt.Sprintf("%s,site%02d)/p", ps, i))
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		sb.WriteString(k + " 1\n")
	}
	out, _, err := compactString(t, sb.String(), CompactOptions{Wh: 0, Wp: 0})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewMap([]byte(out))
	for _, k := range []string{"br,com,unseen)/", "pt,gov,unseen)/", "uk,co,unseen)/", "io,github,unseen)/", "com,unseen)/"} {
		if got, _ := m.Lookup([]byte(k), nil); got.Present {
			t.Errorf("%s answered present via %s", k, got.Key)
		}
	}
	for _, bad := range []string{"\nbr,com,*", "\npt,gov,*", "\nuk,co,*", "\ncom,*", "\nio,github,*", "\n* "} {
		if strings.Contains(out, bad) {
			t.Errorf("public suffix rolled up: %q in\n%s", bad, out)
		}
	}
	checkRecall(t, "public suffixes", sb.String(), out)
}

// TestDefectDroppedHeadersCountsSuffixesJSON: the reference dropped headers,
// M/R counts, suffixes, JSON blocks and keys without a comma. Compaction
// (of untouched lines) and merge keep them all.
func TestDefectDroppedHeadersCountsSuffixesJSON(t *testing.T) {
	in := "!context [\"http://oduwsdl.github.io/contexts/ukvs\"]\n!id {\"uri\":\"http://archive.example.org/\"}\n" +
		"!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}\n!meta {\"name\":\"x\"}\n" +
		"1,0,0,127)/a 2+/1~ {\"note\":\"ip\"}\n" +
		"com,example)/ 400-/100\n" +
		"localhost)/x /50 {\"datetime\":{\"2014\":\"20~/10\"}}\n" +
		"localhost:8080)/ /\n"
	out, _, err := compactString(t, in, CompactOptions{Wh: 100, Wp: 100, Means: &DepthMeans{Host: []float64{1, 1}, Path: []float64{1}}})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, "\n1,0,0", "\n!meta {\"compaction\":{\"means\":\"1,1;1\",\"wh\":100,\"wp\":100}}\n1,0,0", 1)
	if out != want {
		t.Fatalf("compaction changed untouched lines:\n%s\nwant\n%s", out, want)
	}
	merged, _, err := mergeStrings(t, []string{in, "localhost)/x 3 {\"other\":1}\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"!context", "!id", "!fields", "!meta {\"name\":\"x\"}", "1,0,0,127)/a 2+/1~ {\"note\":\"ip\"}",
		"com,example)/ 400-/100", "localhost)/x 3+/50+ {\"merged\":[{\"datetime\":{\"2014\":\"20~/10\"}},{\"other\":1}]}", "localhost:8080)/ /"} {
		if !strings.Contains(merged, s) {
			t.Errorf("merge lost %q:\n%s", s, merged)
		}
	}
}

// randomMap returns a sorted random map over a small alphabet (so nodes
// share prefixes and have many children), with exact and wildcard
// exclusions.
func randomMap(r *rand.Rand) string {
	hosts := []string{"com,a", "com,a,b", "com,a,c", "com,b", "uk,co,x", "uk,co,x,y", "uk,co,z", "localhost", "1,0,0,127", "org,a-b", "org,a"}
	segs := []string{"a", "b", "a.html", "a-b", "c", "%20x", "1", "~u"}
	set := map[string]string{}
	n := 1 + r.IntN(120)
	for i := 0; i < n; i++ {
		k := hosts[r.IntN(len(hosts))] + ")/"
		d := r.IntN(4)
		for j := 0; j < d; j++ {
			if j > 0 {
				k += "/"
			}
			k += segs[r.IntN(len(segs))]
		}
		v := fmt.Sprintf("%d/%d", 1+r.IntN(9), 1+r.IntN(3))
		switch x := r.IntN(20); {
		case x == 0:
			v = "0"
		case x == 1:
			v = "0/7"
		case x == 2 && d > 0:
			k = strings.TrimSuffix(k, "/") + "/*"
			if r.IntN(2) == 0 {
				v = "0"
			}
		case x == 3:
			v = "3+/"
		}
		set[k] = v
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k + " " + set[k] + "\n")
	}
	return sb.String()
}

// TestCompactPropertyRecall: for random inputs and random weights, every
// key of the input is still answered as before after compaction (recall
// 1.0, exclusions hold), compaction chains, and the parallel output equals
// the single-process output.
func TestCompactPropertyRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 150; i++ {
		in := randomMap(r)
		opts := CompactOptions{Wh: r.Float64() * 2, Wp: r.Float64() * 2}
		if r.IntN(3) == 0 {
			m := DepthMeans{Host: []float64{r.Float64() * 3, r.Float64() * 3}, Path: []float64{r.Float64() * 3, r.Float64() * 3}}
			opts.Means = &m
		}
		out, _, err := compactString(t, in, opts)
		if err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, in)
		}
		checkRecall(t, fmt.Sprintf("case %d (%+v)\n%s", i, opts, in), in, out)
		again, _, err := compactString(t, out, CompactOptions{Wh: 0, Wp: 0})
		if err != nil {
			t.Fatalf("case %d chained: %v", i, err)
		}
		checkRecall(t, fmt.Sprintf("case %d chained", i), in, again)
		opts.Workers = 1 + r.IntN(4)
		par, _, err := compactString(t, in, opts)
		if err != nil || par != out {
			t.Fatalf("case %d: %d workers differ (%v):\n%s\nvs\n%s", i, opts.Workers, err, par, out)
		}
	}
}

// TestMergeProperty: merging random maps answers every positive key of
// every input positively.
func TestMergeProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		a, b := randomMap(r), randomMap(r)
		if r.IntN(2) == 0 {
			ca, _, err := compactString(t, a, CompactOptions{Wh: r.Float64(), Wp: r.Float64()})
			if err != nil {
				t.Fatal(err)
			}
			a = ca
		}
		out, _, err := mergeStrings(t, []string{a, b})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		m, _ := NewMap([]byte(out))
		if err := m.Check(); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for _, in := range []string{a, b} {
			src, _ := NewMap([]byte(in))
			for _, l := range strings.Split(in, "\n") {
				f := strings.Fields(l)
				if len(f) < 2 || strings.HasPrefix(l, "!") {
					continue
				}
				before, _ := src.Lookup([]byte(f[0]), nil)
				after, _ := m.Lookup([]byte(f[0]), nil)
				if before.Present && !after.Present {
					t.Fatalf("case %d: %s lost (via %s)\nA:\n%s\nB:\n%s\nmerged:\n%s", i, f[0], after.Key, a, b, out)
				}
			}
		}
	}
}

func TestCompactStreamAndSkipBad(t *testing.T) {
	in := "com,a)/ 1\ncom,b)/ x\ncom,c)/ 2\nnot-a-surt 1\ncom,d)/ 1\n"
	var out bytes.Buffer
	var skipped []string
	st, err := Compact(context.Background(), strings.NewReader(in), &out, CompactOptions{Wh: 100, Wp: 100, SkipBad: true,
		OnSkip: func(e *ukvs.Error) { skipped = append(skipped, e.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0], ":2:") || !strings.Contains(skipped[1], ":4:") {
		t.Fatalf("skips %q", skipped)
	}
	if !strings.HasSuffix(out.String(), "com,a)/ 1\ncom,c)/ 2\ncom,d)/ 1\n") || st.InLines != 3 {
		t.Fatalf("got %q %+v", out.String(), st)
	}
	if _, err := Compact(context.Background(), strings.NewReader(in), &out, CompactOptions{}); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}

// TestLookupMatchesNaive cross-checks the indexed, pruned lookup against a
// naive one (a hash of every line, candidates tried in order) and the
// indexed seek against a plain binary search over bytes.
func TestLookupMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		in := randomMap(r)
		m, err := NewMap([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]string{}
		var keys []string
		for _, l := range strings.Split(strings.TrimSpace(in), "\n") {
			f := strings.Fields(l)
			lines[f[0]] = f[1]
			keys = append(keys, f[0])
		}
		probes := append([]string{}, keys...)
		for j := 0; j < 50; j++ {
			probes = append(probes, strings.TrimSuffix(keys[r.IntN(len(keys))], "*")+[]string{"x", "a", "/a", "/b/c", "", "-"}[r.IntN(6)])
		}
		probes = append(probes, "aaa)/", "zzz)/", "com,a,b,c)/q", "uk,co,new)/", "localhost)/zz")
		var s Scratch
		for _, k := range probes {
			nk, err := NormalizeKey(nil, []byte(k))
			if err != nil {
				continue
			}
			cands, _, err := Candidates(nk, nil, nil)
			if err != nil {
				continue
			}
			var want Match
			for _, c := range cands {
				if v, ok := lines[string(c)]; ok {
					f, _ := ukvs.ParseFreq([]byte(v))
					want = Match{Present: !f.IsExclusion(), Key: c, Freq: f}
					break
				}
			}
			got, err := m.Lookup([]byte(k), &s)
			if err != nil || got.Present != want.Present || string(got.Key) != string(want.Key) || got.Freq != want.Freq {
				t.Fatalf("case %d: %s: got %+v %v, want %+v\n%s", i, k, got, err, want, in)
			}
			if p, _ := m.seek([]byte(k)); p != m.seekScan([]byte(k)) {
				t.Fatalf("case %d: seek(%s) = %d, plain search %d", i, k, p, m.seekScan([]byte(k)))
			}
		}
	}
}
