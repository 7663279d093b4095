// Command aggbench is benchmark tooling for scripts/bench-aggregate.sh, not
// part of the product:
//
//	aggbench fill DIR KEYS LOOKUPS [WEIGHT]
//
// It makes the holdings of three archives from a Zipf-skewed synthetic key
// set (internal/zipfgen, KEYS keys): each host goes to one archive, one
// host in four to a second one as well; every key gets 1 to 3 captures.
// For archive i it writes DIR/arch-i/capture-index (what `wayside serve`
// answers TimeMaps from) and DIR/arch-i/mementomap.ukvs (the full map the
// daemon serves at /mementomap; compacted with WEIGHT when it is given, as
// `wayside mementomap compact --w WEIGHT` does), and DIR/set.txt: LOOKUPS URI-Rs drawn
// Zipf-distributed over the present keys (80%) and uniformly over absent
// ones (20%), each labelled with the archives that hold it — the labelled
// lookup set `wayside aggregate eval` replays.
package main

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/zipfgen"
	"github.com/wayside-archive/wayside/mementomap"
)

const archives = 3

func main() {
	if len(os.Args) == 6 && os.Args[1] == "abuse" {
		size, err1 := strconv.Atoi(os.Args[4])
		n, err2 := strconv.Atoi(os.Args[5])
		if err1 != nil || err2 != nil {
			fmt.Fprintln(os.Stderr, "usage: aggbench abuse ADDR-FILE URL BYTES N")
			os.Exit(2)
		}
		if err := abuse(os.Args[2], os.Args[3], size, n); err != nil {
			fmt.Fprintln(os.Stderr, "aggbench:", err)
			os.Exit(1)
		}
		return
	}
	if (len(os.Args) != 5 && len(os.Args) != 6) || os.Args[1] != "fill" {
		fmt.Fprintln(os.Stderr, "usage: aggbench fill DIR KEYS LOOKUPS [WEIGHT]")
		os.Exit(2)
	}
	weight := 0.0
	if len(os.Args) == 6 {
		var err error
		if weight, err = strconv.ParseFloat(os.Args[5], 64); err != nil || weight < 0 {
			fmt.Fprintln(os.Stderr, "aggbench: WEIGHT must be a number >= 0")
			os.Exit(2)
		}
	}
	keys, err1 := strconv.Atoi(os.Args[3])
	lookups, err2 := strconv.Atoi(os.Args[4])
	if err1 != nil || err2 != nil || keys < 100 || lookups < 1 {
		fmt.Fprintln(os.Stderr, "aggbench: KEYS (>= 100) and LOOKUPS must be numbers")
		os.Exit(2)
	}
	if err := fill(os.Args[2], keys, lookups, weight); err != nil {
		fmt.Fprintln(os.Stderr, "aggbench:", err)
		os.Exit(1)
	}
}

// holders returns the archives holding a key's host.
func holders(key string) []int {
	host, _, _ := strings.Cut(key, ")")
	h := fnv.New32a()
	h.Write([]byte(host))
	v := h.Sum32()
	out := []int{int(v % archives)}
	if v/archives%4 == 0 {
		out = append(out, (out[0]+1)%archives)
	}
	return out
}

func fill(dir string, keys, lookups int, weight float64) error {
	ctx := context.Background()
	present, absent := zipfgen.Generate(zipfgen.Config{Keys: keys, Seed: 7, Absent: keys / 5})
	t0 := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	captures := make([]int, archives)
	for i := range archives {
		ddir := filepath.Join(dir, fmt.Sprintf("arch-%d", i))
		if err := os.MkdirAll(ddir, 0o755); err != nil {
			return err
		}
		ix, err := captureindex.Open(filepath.Join(ddir, "capture-index"), captureindex.WithSyncInterval(-1))
		if err != nil {
			return err
		}
		g := mementomap.NewGenerator(mementomap.GenerateOptions{Name: fmt.Sprintf("arch-%d", i)})
		var batch []wayside.Capture
		n := 0
		for _, e := range present {
			if !contains(holders(e.Key), i) {
				continue
			}
			uri := zipfgen.URI(e.Key)
			for k := range min(e.M, 3) {
				n++
				at := t0.Add(time.Duration(i*1000+int(k)*97+n%89) * time.Hour)
				batch = append(batch, wayside.Capture{URI: uri, Date: at, Type: "response", Status: 200, MIME: "text/html",
					Digest: digest.Of(digest.SHA1, []byte(uri+strconv.Itoa(n))).String(), File: fmt.Sprintf("bench-%d-%05d.warc.gz", i, n/1000),
					Offset: int64(n%1000) * 20000, Length: 19000, PayloadLength: 60000})
				if err := g.Add(uri, 200, "text/html"); err != nil {
					return err
				}
			}
			if len(batch) >= 4096 {
				if _, err := ix.Add(ctx, batch...); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if _, err := ix.Add(ctx, batch...); err != nil {
			return err
		}
		captures[i] = n
		if err := ix.Compact(ctx); err != nil {
			return err
		}
		if err := ix.Close(); err != nil {
			return err
		}
		mapPath := filepath.Join(ddir, "mementomap.ukvs")
		full := mapPath
		if weight > 0 {
			full = filepath.Join(ddir, "full.ukvs")
		}
		f, err := os.Create(full)
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		if _, err := g.WriteTo(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		g.Close()
		if weight > 0 {
			st, err := mementomap.CompactFile(ctx, full, mapPath, mementomap.CompactOptions{Wh: weight, Wp: weight})
			if err != nil {
				return err
			}
			fmt.Printf("arch-%d: map compacted with w=%g: %d → %d lines\n", i, weight, st.InLines, st.OutLines)
		}
	}
	// The lookup set.
	r := rand.New(rand.NewPCG(11, 13))
	order := r.Perm(len(present)) // popularity rank → key
	z := rand.NewZipf(r, 1.1, 1, uint64(len(present)-1))
	f, err := os.Create(filepath.Join(dir, "set.txt"))
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	held := 0
	for range lookups {
		var key string
		var hs []string
		if r.IntN(5) == 0 {
			key = absent[r.IntN(len(absent))]
			hs = []string{"-"}
		} else {
			key = present[order[z.Uint64()]].Key
			for _, h := range holders(key) {
				hs = append(hs, fmt.Sprintf("arch-%d", h))
			}
			held++
		}
		fmt.Fprintf(bw, "%s %s\n", strings.Join(hs, ","), zipfgen.URI(key))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("holdings: %d keys over %d archives (captures %v); lookup set: %d URI-Rs (%d of held keys, Zipf s=1.1; %d absent)\n",
		len(present), archives, captures, lookups, held, lookups-held)
	return nil
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}
