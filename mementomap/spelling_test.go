package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// randomURIs returns URIs over hosts that exercise every spelling question:
// www and wwwN labels, ports (default and not), IPv4 and IPv6 hosts, hosts
// without a dot, upper case, query strings, trailing slashes.
func randomURIs(r *rand.Rand, n int) []string {
	hosts := []string{
		"example.com", "www.example.com", "www2.example.com", "shop.example.com", "Example.COM",
		"example.com:8080", "example.com:80", "www.example.com:443", "a.b.example.co.uk", "news.bbc.co.uk",
		"localhost", "localhost:3000", "intranet", "192.168.1.7", "10.0.0.5:8443", "[2001:db8::1]", "[::1]:8080",
		"xn--bcher-kva.de", "github.io", "user.github.io",
	}
	segs := []string{"a", "B", "index.html", "a-b", "2019", "%7Euser", "caf%C3%A9", "x.aspx"}
	out := make([]string, 0, n)
	for range n {
		scheme := []string{"http://", "https://"}[r.IntN(2)]
		u := scheme + hosts[r.IntN(len(hosts))]
		d := r.IntN(4)
		for range d {
			u += "/" + segs[r.IntN(len(segs))]
		}
		switch r.IntN(4) {
		case 0:
			u += "/"
		case 1:
			u += fmt.Sprintf("?q=%d&A=b", r.IntN(5))
		}
		if d == 0 && !strings.HasSuffix(u, "/") && r.IntN(2) == 0 {
			u += "/"
		}
		out = append(out, u)
	}
	return out
}

// respell writes a canonical key the way another tool might: host root
// without "/" (the reference implementation), an extra www label, upper
// case, a query string, a default port, a trailing "/", Heritrix's
// "http://(host,)/" form, or several of these.
func respell(r *rand.Rand, key string) string {
	if strings.HasSuffix(key, "*") {
		return key
	}
	h := strings.IndexByte(key, ')')
	host, path := key[:h], key[h+1:]
	ipv6 := strings.Count(host, ":") >= 2
	numeric := strings.Trim(host, "0123456789,:") == ""
	for range 1 + r.IntN(3) {
		switch r.IntN(7) {
		case 0:
			if !ipv6 && !numeric && !strings.Contains(host, ":") {
				host += ",www"
			}
		case 1:
			if !ipv6 && !strings.Contains(host, ":") {
				host += []string{":80", ":443"}[r.IntN(2)]
			}
		case 2:
			host, path = strings.ToUpper(host), strings.ToUpper(path)
		case 3:
			path += "?utm_source=x"
		case 4:
			if path != "/" && !strings.Contains(path, "?") {
				path += "/"
			}
		case 5:
			if path == "/" {
				path = ""
			}
		case 6:
			if !ipv6 {
				return "http://(" + host + ",)" + path
			}
		}
	}
	return host + ")" + path
}

// writeRespelled rewrites a canonical map with every key respelled, some
// keys split into two lines of different spellings (their counts split),
// in a random order.
func writeRespelled(r *rand.Rand, canonical []byte) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(canonical)), "\n") {
		if l == "" || l[0] == '!' {
			continue
		}
		rec, err := ukvs.ParseRecord([]byte(l))
		if err != nil {
			panic(err)
		}
		k := string(rec.Key)
		m := rec.Freq.M.N
		if m > 1 && r.IntN(3) == 0 {
			a := 1 + r.Int64N(m-1)
			lines = append(lines, fmt.Sprintf("%s %d", respell(r, k), a), fmt.Sprintf("%s %d", respell(r, k), m-a))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %d", respell(r, k), m))
	}
	r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return strings.Join(lines, "\n") + "\n"
}

// TestSpellingPropertyRecall: maps and lookups in any mix of spellings
// (host root with and without "/", with and without www, default ports,
// IPs, hosts without a comma, query strings, upper case, Heritrix form,
// unsorted, split lines) answer every archived URI present — as read,
// compacted with random weights, merged with the canonical map, and looked
// up by URI or by a respelled key. Bounded: 60 maps, deterministic seed.
func TestSpellingPropertyRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2019))
	dir := t.TempDir()
	ctx := context.Background()
	for i := range 60 {
		uris := randomURIs(r, 5+r.IntN(80))
		g := NewGenerator(GenerateOptions{})
		for _, u := range uris {
			if err := g.Add(u, 200, "text/html"); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
		}
		var canon bytes.Buffer
		if _, err := g.WriteTo(&canon); err != nil {
			t.Fatal(err)
		}
		g.Close()
		foreign := writeRespelled(r, canon.Bytes())
		fp := filepath.Join(dir, fmt.Sprintf("foreign-%d.ukvs", i))
		if err := os.WriteFile(fp, []byte(foreign), 0o644); err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(dir, fmt.Sprintf("canon-%d.ukvs", i))
		if err := os.WriteFile(cp, canon.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		wh, wp := []float64{0, 0.25, 0.5, 1, 2, 4}[r.IntN(6)]*r.Float64()*2, r.Float64()*4
		compacted := filepath.Join(dir, fmt.Sprintf("compact-%d.ukvs", i))
		st, err := CompactFile(ctx, fp, compacted, CompactOptions{Wh: wh, Wp: wp, Workers: 1 + r.IntN(3), NoSync: true})
		if err != nil {
			t.Fatalf("case %d: compact: %v\n%s", i, err, foreign)
		}
		if !st.Normalized.Normalized() {
			t.Fatalf("case %d: a respelled map was compacted without normalising it", i)
		}
		merged := mergeFiles(t, dir, fmt.Sprintf("merged-%d.ukvs", i), fp, cp)
		for _, p := range []string{fp, compacted, merged} {
			m, err := OpenMap(p)
			if err != nil {
				t.Fatalf("case %d: %v\n%s", i, err, foreign)
			}
			if err := m.Check(); err != nil {
				t.Fatalf("case %d: %s: %v", i, p, err)
			}
			var s Scratch
			for _, u := range uris {
				k := mustKey(t, u)
				for _, target := range []string{u, k, respell(r, k)} {
					key, err := ParseTarget(target)
					if err != nil {
						t.Fatalf("case %d: target %q: %v", i, target, err)
					}
					if got, err := m.Lookup(key, &s); err != nil || !got.Present {
						t.Fatalf("case %d: %s: %q (of %s) answered absent (%v), wh=%.2f wp=%.2f\nforeign map:\n%s\nopened as:\n%s",
							i, filepath.Base(p), target, u, err, wh, wp, foreign, m.Data())
					}
				}
			}
			m.Close()
		}
		// The foreign map normalises to the canonical map's keys and
		// memento counts (URI-R counts were not written).
		m, err := OpenMap(fp)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := keysAndM(t, m.Data()), keysAndM(t, canon.Bytes()); got != want {
			t.Fatalf("case %d: normalised foreign map differs from the canonical one:\n%s\nwant\n%s", i, got, want)
		}
		m.Close()
	}
}

// keysAndM returns "key M" per data line of a map text.
func keysAndM(t *testing.T, b []byte) string {
	var sb strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '!' {
			continue
		}
		rec, err := ukvs.ParseRecord([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "%s %d\n", rec.Key, rec.Freq.M.N)
	}
	return sb.String()
}
