// Command s3bench is benchmark tooling for scripts/bench-s3.sh, not part
// of the product:
//
//	s3bench ENDPOINT SECONDS WORKERS WARC...
//
// It uploads the WARC files to the bucket "bench" of the S3-compatible
// server at ENDPOINT (credentials from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY), indexes their captures twice — once by base name
// (the files on local disk), once by their s3:// locations — and serves
// each index with Wayside's replay handler on loopback. It then measures,
// for both in the same run:
//
//   - id_ fetch latency: every response capture fetched in turn (3 rounds,
//     same order for both), p50 and p99;
//   - replay throughput: WORKERS concurrent keep-alive clients fetching
//     random captures by rewritten replay for SECONDS, MB/s and requests/s;
//
// and prints the S3 figures as ratios to the local ones. Every S3 answer
// is checked byte-equal to the local one first.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcfile/s3"
	"github.com/wayside-archive/wayside/warcio"
)

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: s3bench ENDPOINT SECONDS WORKERS WARC...")
		os.Exit(2)
	}
	secs, err1 := strconv.Atoi(os.Args[2])
	workers, err2 := strconv.Atoi(os.Args[3])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "s3bench:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], time.Duration(secs)*time.Second, workers, os.Args[4:]); err != nil {
		fmt.Fprintln(os.Stderr, "s3bench:", err)
		os.Exit(1)
	}
}

type side struct {
	name string
	base string // http://127.0.0.1:PORT
	srv  *http.Server
	ix   *captureindex.Index
}

func run(ctx context.Context, endpoint string, dur time.Duration, workers int, warcs []string) error {
	eu, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	mc, err := minio.New(eu.Host, &minio.Options{Creds: credentials.NewEnvAWS(), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return err
	}
	if ok, _ := mc.BucketExists(ctx, "bench"); !ok {
		if err := mc.MakeBucket(ctx, "bench", minio.MakeBucketOptions{}); err != nil {
			return err
		}
	}
	prefix := "s3://bench/warcs?endpoint=" + endpoint
	b, err := s3.Open(ctx, prefix)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "s3bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var dirs []string
	var total int64
	for _, w := range warcs {
		if _, err := b.Upload(ctx, w, filepath.Base(w)); err != nil {
			return err
		}
		fi, _ := os.Stat(w)
		total += fi.Size()
		dirs = append(dirs, filepath.Dir(w))
	}
	fmt.Printf("%d WARC files, %.1f MB, uploaded to %s\n", len(warcs), float64(total)/1e6, b)

	locs := warcfile.NewLocations(dirs)
	defer locs.Close()
	var targets []string // id_ paths of the response captures
	mk := func(name string, file func(string) string) (*side, error) {
		ix, err := captureindex.Open(filepath.Join(work, name))
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, w := range warcs {
			r, err := warcio.Open(w)
			if err != nil {
				return nil, err
			}
			var batch []wayside.Capture
			for {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					r.Close()
					return nil, err
				}
				c := rec.Capture(file(filepath.Base(w)))
				if !captureindex.Indexable(c) {
					continue
				}
				batch = append(batch, c)
				if name == "local" && c.Type == "response" && c.Status == 200 {
					p := "/default/" + c.Date.UTC().Format("20060102150405") + "id_/" + c.URI
					if !seen[p] {
						seen[p] = true
						targets = append(targets, p)
					}
				}
			}
			r.Close()
			if _, err := ix.Add(ctx, batch...); err != nil {
				return nil, err
			}
		}
		h, err := replay.New(replay.Options{Index: ix, Locations: locs})
		if err != nil {
			return nil, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		s := &side{name: name, base: "http://" + l.Addr().String(), srv: &http.Server{Handler: h}, ix: ix}
		go s.srv.Serve(l)
		return s, nil
	}
	local, err := mk("local", func(n string) string { return n })
	if err != nil {
		return err
	}
	defer local.srv.Close()
	defer local.ix.Close()
	remote, err := mk("s3", func(n string) string { return b.Location(n) })
	if err != nil {
		return err
	}
	defer remote.srv.Close()
	defer remote.ix.Close()
	if len(targets) < 10 {
		return fmt.Errorf("only %d response captures", len(targets))
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers + 4}}
	get := func(u string) ([]byte, error) {
		resp, err := hc.Get(u)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != 200 && resp.StatusCode != 302 {
			err = fmt.Errorf("%s: %s", u, resp.Status)
		}
		return body, err
	}
	// Correctness first: the same bytes from both.
	for _, p := range targets {
		a, err := get(local.base + p)
		if err != nil {
			return err
		}
		bb, err := get(remote.base + p)
		if err != nil {
			return err
		}
		if !bytes.Equal(a, bb) {
			return fmt.Errorf("%s: %d bytes from local disk, %d from S3, not equal", p, len(a), len(bb))
		}
	}
	fmt.Printf("%d response captures; id_ answers from S3 equal those from local disk\n", len(targets))

	lat := func(s *side) ([]time.Duration, error) {
		var out []time.Duration
		for range 3 {
			for _, p := range targets {
				t := time.Now()
				if _, err := get(s.base + p); err != nil {
					return nil, err
				}
				out = append(out, time.Since(t))
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out, nil
	}
	pct := func(d []time.Duration, p float64) time.Duration { return d[min(len(d)-1, int(float64(len(d))*p))] }
	ll, err := lat(local)
	if err != nil {
		return err
	}
	rl, err := lat(remote)
	if err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("id_ fetch latency (%d sequential GETs each):\n", len(ll))
	fmt.Printf("  p50  local %.2f ms  s3 %.2f ms  ratio s3/local %.2f\n", ms(pct(ll, .5)), ms(pct(rl, .5)), float64(pct(rl, .5))/float64(pct(ll, .5)))
	fmt.Printf("  p99  local %.2f ms  s3 %.2f ms  ratio s3/local %.2f\n", ms(pct(ll, .99)), ms(pct(rl, .99)), float64(pct(rl, .99))/float64(pct(ll, .99)))

	thr := func(s *side) (float64, float64, error) {
		var n, bytesN atomic.Int64
		var firstErr atomic.Value
		ctx, cancel := context.WithTimeout(ctx, dur)
		defer cancel()
		var wg sync.WaitGroup
		start := time.Now()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for ctx.Err() == nil {
					p := targets[rng.IntN(len(targets))]
					// Rewritten replay: the same path without id_.
					body, err := get(s.base + replayPath(p))
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					n.Add(1)
					bytesN.Add(int64(len(body)))
				}
			}()
		}
		wg.Wait()
		el := time.Since(start).Seconds()
		if e, _ := firstErr.Load().(error); e != nil {
			return 0, 0, e
		}
		return float64(bytesN.Load()) / 1e6 / el, float64(n.Load()) / el, nil
	}
	lm, lr, err := thr(local)
	if err != nil {
		return err
	}
	rm, rr, err := thr(remote)
	if err != nil {
		return err
	}
	fmt.Printf("replay throughput (%d workers, %v each, rewritten replay of random captures):\n", workers, dur)
	fmt.Printf("  local %.1f MB/s %.0f req/s  s3 %.1f MB/s %.0f req/s  ratio s3/local %.2f\n", lm, lr, rm, rr, rr/lr)
	return nil
}

// replayPath is the rewritten-replay path of an id_ path.
func replayPath(p string) string {
	i := len("/default/") + 14
	return p[:i] + p[i+len("id_"):]
}
