// Command accessbench is benchmark tooling for scripts/bench-access.sh, not
// part of the product:
//
//	accessbench size WARC...              # capture index bytes per capture vs CDXJ text and gzip
//	accessbench fill DIR                  # a capture index: 1 URL × 10,000 captures, 2,000 URLs × 10
//	accessbench load URL SECONDS WORKERS  # TimeMap latency and TimeGate requests/s against a daemon
//	accessbench rules URL FILE N SECONDS WORKERS  # TimeGate and CDX requests/s with N access rules vs none
//
// size indexes the captures of the WARC files (the converter producers
// use) into a new capture index, compacts it and prints its size per
// capture next to the CDXJ lines of the same captures, plain and gzipped.
// fill also times a raw scan of the 10,000 captures (the floor a TimeMap
// cannot beat). load measures, over loopback HTTP, the TimeMap of the URL
// with 10,000 captures (sequential GETs: p50, p99) and TimeGate requests
// with random URLs and Accept-Datetime from concurrent workers (per
// second), and the same against a static file server in this process
// serving the same TimeMap bytes and a file of a TimeGate answer's size.
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
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

const (
	bigURI   = "http://bench.example.org/popular/page.html"
	bigN     = 10000
	smallN   = 2000
	perSmall = 10
)

var t0 = time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	var err error
	switch {
	case len(os.Args) >= 3 && os.Args[1] == "size":
		err = size(os.Args[2:])
	case len(os.Args) == 3 && os.Args[1] == "fill":
		err = fill(os.Args[2])
	case len(os.Args) == 5 && os.Args[1] == "load":
		secs, e1 := strconv.Atoi(os.Args[3])
		workers, e2 := strconv.Atoi(os.Args[4])
		if err = errors.Join(e1, e2); err == nil {
			err = load(os.Args[2], time.Duration(secs)*time.Second, workers)
		}
	case len(os.Args) == 7 && os.Args[1] == "rules":
		n, e1 := strconv.Atoi(os.Args[4])
		secs, e2 := strconv.Atoi(os.Args[5])
		workers, e3 := strconv.Atoi(os.Args[6])
		if err = errors.Join(e1, e2, e3); err == nil {
			err = rulesLoad(os.Args[2], os.Args[3], n, time.Duration(secs)*time.Second, workers)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: accessbench size WARC... | fill DIR | load URL SECONDS WORKERS | rules URL FILE N SECONDS WORKERS")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "accessbench:", err)
		os.Exit(1)
	}
}

func size(warcs []string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "accessbench-size-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ix, err := captureindex.Open(filepath.Join(dir, "ci"))
	if err != nil {
		return err
	}
	defer ix.Close()
	var text bytes.Buffer
	n := 0
	start := time.Now()
	for _, p := range warcs {
		r, err := warcio.Open(p)
		if err != nil {
			return err
		}
		var batch []wayside.Capture
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return err
			}
			c := rec.Capture(filepath.Base(p))
			if !captureindex.Indexable(c) {
				continue
			}
			batch = append(batch, c)
			l := cdxj.FromCapture(c)
			text.Write(l.Format(nil))
			n++
			if len(batch) == 1024 {
				if _, err := ix.Add(ctx, batch...); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		r.Close()
		if _, err := ix.Add(ctx, batch...); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)
	if err := ix.Compact(ctx); err != nil {
		return err
	}
	st, err := ix.Stats(ctx)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(text.Bytes())
	zw.Close()
	fmt.Printf("captures indexed        %d (from %d WARC files, %.0f captures/s including WARC reading)\n", n, len(warcs), float64(n)/elapsed.Seconds())
	per := float64(st.TableBytes) / float64(n)
	fmt.Printf("capture index           %.1f bytes per capture in its tables (%d bytes; %d on disk with log and manifest)\n", per, st.TableBytes, st.DiskBytes)
	fmt.Printf("peer: CDXJ lines        %.1f bytes per capture (index/CDXJ %.2f); gzip -9 %.1f bytes per capture (index/gzip %.2f)\n",
		float64(text.Len())/float64(n), per/(float64(text.Len())/float64(n)), float64(gz.Len())/float64(n), per/(float64(gz.Len())/float64(n)))
	return nil
}

func fill(dir string) error {
	ctx := context.Background()
	ix, err := captureindex.Open(dir, captureindex.WithSyncInterval(-1))
	if err != nil {
		return err
	}
	defer ix.Close()
	var batch []wayside.Capture
	add := func(c wayside.Capture) error {
		batch = append(batch, c)
		if len(batch) < 4096 {
			return nil
		}
		_, err := ix.Add(ctx, batch...)
		batch = batch[:0]
		return err
	}
	capture := func(uri string, i int, at time.Time) wayside.Capture {
		return wayside.Capture{URI: uri, Date: at, Type: "response", Status: 200, MIME: "text/html",
			Digest: digest.Of(digest.SHA1, []byte(uri+strconv.Itoa(i))).String(), File: fmt.Sprintf("bench-%05d.warc.gz", i/1000),
			Offset: int64(i%1000) * 20000, Length: 19000, PayloadLength: 60000}
	}
	for i := range bigN {
		if err := add(capture(bigURI, i, t0.Add(time.Duration(i)*time.Hour))); err != nil {
			return err
		}
	}
	for u := range smallN {
		for i := range perSmall {
			if err := add(capture(smallURI(u), bigN+u*perSmall+i, t0.Add(time.Duration(i*30*24)*time.Hour))); err != nil {
				return err
			}
		}
	}
	if _, err := ix.Add(ctx, batch...); err != nil {
		return err
	}
	if err := ix.Compact(ctx); err != nil {
		return err
	}
	if st, err := ix.Stats(ctx); err == nil {
		n := bigN + smallN*perSmall
		fmt.Printf("capture index, %d synthetic captures   %.1f bytes per capture in its tables\n", n, float64(st.TableBytes)/float64(n))
	}
	var times []time.Duration
	for range 50 {
		start := time.Now()
		n := 0
		err := ix.Scan(ctx, captureindex.Query{Key: captureindex.URLKey(bigURI)}, func(*captureindex.Entry) error { n++; return nil })
		if err != nil || n != bigN {
			return fmt.Errorf("scan: %d entries, %v", n, err)
		}
		times = append(times, time.Since(start))
	}
	p50, p99 := percentiles(times)
	fmt.Printf("floor: raw index scan of %d captures   p50 %.2f ms, p99 %.2f ms\n", bigN, ms(p50), ms(p99))
	return nil
}

func smallURI(u int) string {
	return fmt.Sprintf("http://bench.example.org/section/%d/article.html", u)
}

func load(base string, d time.Duration, workers int) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string, hdr ...string) (int, []byte, error) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if len(hdr) == 2 {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, b, err
	}
	// The peer: a static file server with the same bytes.
	code, tm, err := get(base + "/timemap/link/" + bigURI)
	if err != nil || code != 200 {
		return fmt.Errorf("timemap: %d %v", code, err)
	}
	code, tg, err := get(base+"/"+bigURI, "Accept-Datetime", t0.Add(5000*time.Hour).Format(http.TimeFormat))
	if err != nil || code != http.StatusFound {
		return fmt.Errorf("timegate: %d %v", code, err)
	}
	files := map[string][]byte{"/timemap": tm, "/timegate": tg}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	peer := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := files[r.URL.Path]
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	})}
	go peer.Serve(ln)
	defer peer.Close()
	static := "http://" + ln.Addr().String()

	timeGets := func(u string, n int) ([]time.Duration, error) {
		var out []time.Duration
		for range n {
			start := time.Now()
			code, _, err := get(u)
			if err != nil || code != 200 {
				return nil, fmt.Errorf("GET %s: %d %v", u, code, err)
			}
			out = append(out, time.Since(start))
		}
		return out, nil
	}
	tmTimes, err := timeGets(base+"/timemap/link/"+bigURI, 100)
	if err != nil {
		return err
	}
	stTimes, err := timeGets(static+"/timemap", 100)
	if err != nil {
		return err
	}
	a50, a99 := percentiles(tmTimes)
	s50, s99 := percentiles(stTimes)
	fmt.Printf("TimeMap, %d captures (%d bytes)   p50 %.2f ms, p99 %.2f ms\n", bigN, len(tm), ms(a50), ms(a99))
	fmt.Printf("peer: static file of it         p50 %.2f ms, p99 %.2f ms (ratio p50 %.1f)\n", ms(s50), ms(s99), ms(a50)/ms(s50))

	rate := func(next func(r *rand.Rand) (string, []string)) (float64, int64, error) {
		var n, bad atomic.Int64
		var firstErr atomic.Value
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for ctx.Err() == nil {
					u, hdr := next(r)
					code, _, err := get(u, hdr...)
					if err != nil || (code != http.StatusFound && code != 200) {
						bad.Add(1)
						if err != nil {
							firstErr.CompareAndSwap(nil, err.Error())
						}
						continue
					}
					n.Add(1)
				}
			}()
		}
		start := time.Now()
		wg.Wait()
		if v := firstErr.Load(); v != nil && n.Load() == 0 {
			return 0, bad.Load(), errors.New(v.(string))
		}
		return float64(n.Load()) / time.Since(start).Seconds(), bad.Load(), nil
	}
	tgRate, tgBad, err := rate(func(r *rand.Rand) (string, []string) {
		at := t0.Add(time.Duration(r.IntN(perSmall*30*24)) * time.Hour).Format(http.TimeFormat)
		return base + "/" + smallURI(r.IntN(smallN)), []string{"Accept-Datetime", at}
	})
	if err != nil {
		return err
	}
	stRate, _, err := rate(func(*rand.Rand) (string, []string) { return static + "/timegate", nil })
	if err != nil {
		return err
	}
	fmt.Printf("TimeGate, %d workers, %v         %.0f requests/s (%d errors)\n", workers, d, tgRate, tgBad)
	fmt.Printf("peer: static file, same answer size %.0f requests/s (ratio %.2f)\n", stRate, tgRate/stRate)
	return nil
}

func percentiles(ds []time.Duration) (time.Duration, time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
