package redis_test

// Benchmarks for the Redis backend on a real 3-master + 3-replica cluster
// (the shared one TestMain starts, with the settings doc.go recommends).
// scripts/bench-redis.sh runs them; environment:
//
//	WAYSIDE_BENCH_ENTRIES  originals loaded by BenchmarkMemory (default 200000; the script: 100000, LONG=1 1000000)
//	WAYSIDE_BENCH_SECONDS  length of each BenchmarkClaims run (default 5)
//	WAYSIDE_BENCH_CLIENTS  client processes of BenchmarkClaims (default 4)
//	WAYSIDE_BENCH_CONNS    goroutines (connections) per client process (default 16)
//	WAYSIDE_BENCH_FSYNC    appendfsync settings BenchmarkClaims measures, comma-separated (default always,everysec)
//	WAYSIDE_BENCH_LOADED   originals loaded before BenchmarkClaims (default 100000)
//	WAYSIDE_BENCH_PEER_REQUESTS  requests of each redis-benchmark test (default 400000)

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/redistest"
)

// benchChildEnv marks a process started by BenchmarkClaims as one of its
// clients; its value is the child's JSON configuration.
const benchChildEnv = "WAYSIDE_REDIS_BENCH_CHILD"

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// flushAll empties every master (replicas follow), waiting as long as
// freeing a large index takes.
func flushAll(b *testing.B, cc *goredis.ClusterClient) {
	b.Helper()
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, n *goredis.Client) error {
		c := goredis.NewClient(&goredis.Options{Addr: n.Options().Addr, ReadTimeout: 10 * time.Minute})
		defer c.Close()
		return c.FlushAll(ctx).Err()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMemory loads the same realistic originals (indextest's
// synthetic workload, as in the pebble benchmark) in the layouts of the
// earlier versions (1: one hash per digest plus a sorted set per URL; 2:
// the buckets of this one with varint values, 28-bit name ids and 16-byte
// by-URL entries, both written as those versions wrote them) and in this
// one, with and without the by-URL index, and reports the growth of
// used_memory over the masters per original, and the bytes each field of
// a value takes in layouts 2 and 3. Loads run with appendfsync everysec
// (memory does not depend on it; loading does, ten times over).
func BenchmarkMemory(b *testing.B) {
	cl := sharedCluster(b)
	cc := clusterClient(b, cl)
	ctx := context.Background()
	n := envInt("WAYSIDE_BENCH_ENTRIES", 200_000)
	setFsync(b, cl, "everysec")
	defer setFsync(b, cl, "always")
	for _, variant := range []string{"v1-layout", "v2-layout", "bucketed", "bucketed-no-byurl"} {
		b.Run(variant, func(b *testing.B) {
			flushAll(b, cc)
			var ix *wredis.Index
			if strings.HasPrefix(variant, "bucketed") {
				opts := []wredis.Option{wredis.WithPrefix("m:"), wredis.WithCapacity(int64(n))}
				if variant == "bucketed-no-byurl" {
					opts = append(opts, wredis.WithoutURLIndex())
				}
				var err error
				if ix, err = wredis.New(ctx, cc, opts...); err != nil {
					b.Fatal(err)
				}
				defer ix.Close()
			}
			before, beforeData := memory(b, cl)
			start := time.Now()
			switch variant {
			case "v1-layout":
				loadV1(b, cc, n)
			case "v2-layout":
				loadV2(b, cc, n)
			default:
				loadBucketed(b, ix, n)
			}
			load := time.Since(start)
			after, afterData := memory(b, cl)
			per := float64(after-before) / float64(n)
			b.ReportMetric(per, "B/digest")
			b.ReportMetric(0, "ns/op")
			msg := fmt.Sprintf("%s: %d originals, used_memory +%d bytes = %.1f B per original (used_memory_dataset %.1f B; loaded in %s)",
				variant, n, after-before, per, float64(afterData-beforeData)/float64(n), load.Round(time.Second))
			if variant != "v1-layout" {
				msg += "; " + encodings(b, cc, n)
			}
			if ix != nil {
				st, err := ix.Stats(ctx)
				if err != nil || st.Originals != int64(n) {
					b.Fatalf("%s; stats %+v %v, want %d originals", msg, st, err, n)
				}
			}
			b.Log(msg)
			fmt.Println("bench-redis memory:", msg)
			if variant == "bucketed" {
				fieldSizes(b, ix, n)
			}
		})
	}
	flushAll(b, cc)
}

func setFsync(b *testing.B, cl *redistest.Cluster, mode string) {
	for _, n := range cl.Nodes {
		if err := n.Client().ConfigSet(context.Background(), "appendfsync", mode).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// loadV2 writes originals as layout 2 did, pipelined.
func loadV2(b *testing.B, cc *goredis.ClusterClient, n int) {
	ctx := context.Background()
	v2 := wredis.NewV2Layout("m:", int64(n))
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		_, err := cc.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i := lo; i < min(lo+batch, n); i++ {
				o := indextest.SyntheticOriginal(i)
				if _, err := v2.Write(ctx, p, dedupindex.Key{Scope: "bench", Digest: o.Digest}, o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// fieldSizes prints the bytes per original each part of a stored original
// takes in layout 2 (record's varint encoding, 28-bit name ids) and in
// this one (the packed encoding, with the ids ix gave the names).
func fieldSizes(b *testing.B, ix *wredis.Index, n int) {
	ctx := context.Background()
	v2 := wredis.NewV2Layout("m:", int64(n))
	var order []string
	sums := map[string][2]int64{}
	add := func(field string, enc, bytes int) {
		if _, ok := sums[field]; !ok {
			order = append(order, field)
		}
		s := sums[field]
		s[enc] += int64(bytes)
		sums[field] = s
	}
	intern := func(k record.Kind, s string) (uint64, error) { return ix.InternedIDForTest(ctx, k, s) }
	v2intern := func(k record.Kind, s string) (uint64, error) { return wredis.V2NameID(k, s), nil }
	for i := range n {
		o := indextest.SyntheticOriginal(i)
		k := dedupindex.Key{Scope: "bench", Digest: o.Digest}
		l := v2.FieldLen(k)
		add("digest (hash field)", 0, l)
		add("digest (hash field)", 1, l)
		for enc, in := range []record.Interner{v2intern, intern} {
			r, err := record.FromOriginal(o, in)
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range record.FieldSizes(r, enc == 1) {
				add(f.Field, enc, f.Bytes)
			}
		}
	}
	u2, u3 := v2.URLEntryLens()
	var lines []string
	var tot [2]int64
	for _, f := range order {
		s := sums[f]
		tot[0] += s[0]
		tot[1] += s[1]
		lines = append(lines, fmt.Sprintf("%s %.1f -> %.1f", f, float64(s[0])/float64(n), float64(s[1])/float64(n)))
	}
	fmt.Printf("bench-redis fields: bytes per original, layout 2 -> 3 (hash field and value content, before Redis's own overhead): %s; total %.1f -> %.1f; by-url entry field %d -> %d\n",
		strings.Join(lines, ", "), float64(tot[0])/float64(n), float64(tot[1])/float64(n), u2, u3)
}

// memory returns used_memory and used_memory_dataset summed over the
// masters.
func memory(b *testing.B, cl *redistest.Cluster) (used, dataset int64) {
	var err error
	if used, err = cl.Memory(context.Background(), "used_memory"); err == nil {
		dataset, err = cl.Memory(context.Background(), "used_memory_dataset")
	}
	if err != nil {
		b.Fatal(err)
	}
	return used, dataset
}

// encodings counts the bucket hashes by encoding and sums MEMORY USAGE
// per kind of key (d originals, b by-URL, n names, x overflow, q queued
// by-URL entries, c claims).
func encodings(b *testing.B, cc *goredis.ClusterClient, originals int) string {
	var mu sync.Mutex
	enc := map[string]int{}
	bytes := map[byte]int64{}
	var content int64 // field and value bytes of the originals
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
		var cursor uint64
		for {
			keys, next, err := m.Scan(ctx, cursor, "m:*", 1000).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				kind := k[len("m:")]
				if kind == 'm' {
					continue // the meta key
				}
				use, err := m.MemoryUsage(ctx, k, 0).Result()
				if err != nil {
					return err
				}
				e := ""
				if kind == 'd' || kind == 'b' {
					if e, err = m.ObjectEncoding(ctx, k).Result(); err != nil {
						return err
					}
				}
				var c int64
				if kind == 'd' {
					h, err := m.HGetAll(ctx, k).Result()
					if err != nil {
						return err
					}
					for f, v := range h {
						c += int64(len(f) + len(v))
					}
				}
				mu.Lock()
				content += c
				bytes[kind] += use
				if e != "" {
					enc[string(kind)+":"+e]++
				}
				mu.Unlock()
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	per := func(k byte) float64 { return float64(bytes[k]) / float64(originals) }
	return fmt.Sprintf("MEMORY USAGE per original: originals %.1f B (of which field and value bytes %.1f B), by-url %.1f B, names %.1f B, overflow %.1f B, queued %.1f B, claims %.1f B; digest buckets %d listpack / %d hashtable, by-url buckets %d listpack / %d hashtable",
		per('d'), float64(content)/float64(originals), per('b'), per('n'), per('x'), per('q'), per('c'), enc["d:listpack"], enc["d:hashtable"], enc["b:listpack"], enc["b:hashtable"])
}

func loadBucketed(b *testing.B, ix *wredis.Index, n int) {
	const batch, workers = 2000, 4
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(batch)) - batch
				if lo >= n {
					return
				}
				var es []dedupindex.Entry
				for i := lo; i < min(lo+batch, n); i++ {
					o := indextest.SyntheticOriginal(i)
					es = append(es, dedupindex.Entry{Key: dedupindex.Key{Scope: "bench", Digest: o.Digest}, Original: o})
				}
				if _, err := ix.PutBatch(context.Background(), es); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// loadV1 writes originals exactly as the earlier version of this package
// did: per key a hash PREFIXo{tag} with the date in µs, the original as
// JSON, scope, digest and URL, and per URL a sorted set PREFIXu{utag}.
func loadV1(b *testing.B, cc *goredis.ClusterClient, n int) {
	tag := func(parts ...string) string {
		sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
		return hex.EncodeToString(sum[:12])
	}
	ctx := context.Background()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		_, err := cc.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i := lo; i < min(lo+batch, n); i++ {
				o := indextest.SyntheticOriginal(i)
				v, err := json.Marshal(o)
				if err != nil {
					return err
				}
				t := tag("bench", o.Digest, "")
				p.HSet(ctx, "m:o{"+t+"}", "d", strconv.FormatInt(o.Date.UnixMicro(), 10), "v", string(v), "s", "bench", "k", o.Digest, "u", "")
				p.ZAdd(ctx, "m:u{"+tag("bench", dedupindex.URLKey(o.TargetURI))+"}", goredis.Z{Score: float64(o.Date.Unix()), Member: t})
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// claimChild is a BenchmarkClaims client's configuration.
type claimChild struct {
	Addrs   []string  `json:"addrs"`
	Prefix  string    `json:"prefix"`
	Mode    string    `json:"mode"` // "new" digests or "duplicate" of the first Loaded synthetic originals
	Path    string    `json:"path"` // how claims start: "adaptive" (the default), "script" (as before), "read"
	Loaded  int       `json:"loaded"`
	Conns   int       `json:"conns"`
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// TestClaimsBenchChild is the client process BenchmarkClaims starts; it
// does nothing unless started by it. It claims until the end time and
// prints how many claims returned.
func TestClaimsBenchChild(t *testing.T) {
	spec := os.Getenv(benchChildEnv)
	if spec == "" {
		return
	}
	var cfg claimChild
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cfg.Addrs, PoolSize: cfg.Conns + 4})
	defer cc.Close()
	opts := []wredis.Option{wredis.WithPrefix(cfg.Prefix)}
	opts = append(opts, wredis.WithClaimPath(cfg.Path))
	ix, err := wredis.New(ctx, cc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	want := dedupindex.Claimed
	if cfg.Mode == "duplicate" {
		want = dedupindex.Duplicate
	}
	time.Sleep(time.Until(cfg.Start))
	end := cfg.Start.Add(time.Duration(cfg.Seconds * float64(time.Second)))
	var claims, wrong atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))
			var sum [20]byte
			for time.Now().Before(end) {
				var dig string
				if cfg.Mode == "duplicate" {
					dig = indextest.SyntheticDigest(rng.IntN(cfg.Loaded))
				} else {
					rand.Read(sum[:])
					dig = digest.Digest{Alg: digest.SHA1, Sum: sum[:]}.String()
				}
				r, err := ix.Claim(ctx, dedupindex.Key{Scope: "bench", Digest: dig})
				if err != nil || r.State != want {
					wrong.Add(1)
					continue
				}
				claims.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("claims %d wrong %d\n", claims.Load(), wrong.Load())
}

var childOut = regexp.MustCompile(`claims (\d+) wrong (\d+)`)

// BenchmarkClaims measures Claim calls per second, unpipelined, from
// several client processes at once on the cluster: for new digests
// (Claimed: a pending claim is written) and for digests already committed
// (Duplicate: the original is read and decoded), with appendfsync always
// and everysec, each with claims starting as the index chooses
// ("adaptive": an HGET while most claims find originals, else the claim
// script), always with the claim script (as before the read path) and
// always with an HGET (a new digest then takes a second round trip, the
// claim script). As the floor,
// redis-benchmark runs SET and GET with as many connections on the same
// cluster in the same run; the ratios are reported.
func BenchmarkClaims(b *testing.B) {
	cl := sharedCluster(b)
	cc := clusterClient(b, cl)
	ctx := context.Background()
	flushAll(b, cc)
	clients, conns := envInt("WAYSIDE_BENCH_CLIENTS", 4), envInt("WAYSIDE_BENCH_CONNS", 16)
	seconds := float64(envInt("WAYSIDE_BENCH_SECONDS", 5))
	loaded := envInt("WAYSIDE_BENCH_LOADED", 100_000)
	fsyncs := strings.Split(os.Getenv("WAYSIDE_BENCH_FSYNC"), ",")
	if fsyncs[0] == "" {
		fsyncs = []string{"always", "everysec"}
	}
	ix, err := wredis.New(ctx, cc, wredis.WithPrefix("c:"), wredis.WithCapacity(int64(loaded)))
	if err != nil {
		b.Fatal(err)
	}
	loadBucketed(b, ix, loaded)
	ix.Close()
	// With appendfsync always (the recommended durability) every write
	// waits for a disk flush; with everysec the figures show what the
	// code path costs without it.
	for _, fsync := range fsyncs {
		setFsync(b, cl, fsync)
		// The floor first, so that each claim figure printed can name its
		// ratio: a run stopped half-way has shown ratios, not bare rates.
		peer := redisBenchmark(b, cl.Addrs()[0], clients*conns)
		fmt.Printf("bench-redis peer (appendfsync %s): redis-benchmark on the same cluster, %d connections, unpipelined: SET %.0f requests/s, GET %.0f requests/s\n",
			fsync, clients*conns, peer["SET"], peer["GET"])
		rates := map[string]float64{}
		for _, mode := range []string{"new", "duplicate"} {
			floor := map[string]string{"new": "SET", "duplicate": "GET"}[mode]
			for _, path := range []string{"adaptive", "script", "read"} {
				rate, wrong := runClaimClients(b, claimChild{Addrs: cl.Addrs(), Prefix: "c:", Mode: mode, Path: path, Loaded: loaded, Conns: conns,
					Start: time.Now().Add(2 * time.Second), Seconds: seconds}, clients)
				rates[mode+"/"+path] = rate
				b.ReportMetric(rate, fsync+"-"+mode+"-"+path+"-claims/s")
				fmt.Printf("bench-redis claims (appendfsync %s): %s digests, %s path: %.0f claims/s = %.2f x %s (%d processes x %d connections, %.0f s, %d failed or unexpected)\n",
					fsync, mode, path, rate, rate/peer[floor], floor, clients, conns, seconds, wrong)
			}
		}
		fmt.Printf("bench-redis ratio (appendfsync %s): duplicate claims / GET = %.2f (adaptive), %.2f (script, as before); new-digest claims / SET = %.2f (adaptive), %.2f (script), %.2f (read first); adaptive / script = %.2f (duplicate), %.2f (new)\n",
			fsync, rates["duplicate/adaptive"]/peer["GET"], rates["duplicate/script"]/peer["GET"],
			rates["new/adaptive"]/peer["SET"], rates["new/script"]/peer["SET"], rates["new/read"]/peer["SET"],
			rates["duplicate/adaptive"]/rates["duplicate/script"], rates["new/adaptive"]/rates["new/script"])
	}
	setFsync(b, cl, "always")
	b.ReportMetric(0, "ns/op")
	flushAll(b, cc)
}

// runClaimClients runs clients TestClaimsBenchChild processes with cfg and
// returns their claims per second and how many claims failed or returned
// an unexpected state.
func runClaimClients(b *testing.B, cfg claimChild, clients int) (float64, int64) {
	spec, _ := json.Marshal(cfg)
	var wg sync.WaitGroup
	var total, wrong atomic.Int64
	errc := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestClaimsBenchChild$", "-test.count", "1")
			cmd.Env = append(os.Environ(), benchChildEnv+"="+string(spec))
			out, err := cmd.CombinedOutput()
			m := childOut.FindSubmatch(out)
			if err != nil || m == nil {
				errc <- fmt.Errorf("client: %v\n%s", err, out)
				return
			}
			c, _ := strconv.ParseInt(string(m[1]), 10, 64)
			w, _ := strconv.ParseInt(string(m[2]), 10, 64)
			total.Add(c)
			wrong.Add(w)
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return float64(total.Load()) / cfg.Seconds, wrong.Load()
}

var rpsLine = regexp.MustCompile(`(SET|GET): ([0-9.]+) requests per second`)

// redisBenchmark runs redis-benchmark SET and GET in cluster mode.
func redisBenchmark(b *testing.B, addr string, conns int) map[string]float64 {
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("redis-benchmark", "-h", host, "-p", port, "--cluster", "-t", "set,get", "-n", strconv.Itoa(envInt("WAYSIDE_BENCH_PEER_REQUESTS", 400_000)),
		"-c", strconv.Itoa(conns), "-r", "1000000", "-d", "64", "-q")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	res := map[string]float64{}
	for _, m := range rpsLine.FindAllStringSubmatch(string(out), -1) {
		res[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	if len(res) != 2 {
		b.Fatalf("redis-benchmark output not understood:\n%s", out)
	}
	return res
}
