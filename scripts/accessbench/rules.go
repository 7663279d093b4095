package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wayside-archive/wayside/replay"
)

// writeRules writes n access rules as an .aclj file: every one on a
// prefix of the benchmark's URLs or a neighbour of them (so lookups walk
// keys that share prefixes with the rules), none hiding a URL the load
// asks for, and a sentinel rule excluding the last small URL (how the load
// knows the daemon has the rules in force).
func writeRules(path string, n int) error {
	var rules []*replay.Rule
	add := func(key string, exact bool, access replay.Access, user string) {
		rules = append(rules, &replay.Rule{Key: key, Exact: exact, Access: access, User: user})
	}
	sentinel := smallKey(smallN - 1)
	if n > 0 {
		add(sentinel, true, replay.Exclude, "")
	}
	for i := 0; len(rules) < n; i++ {
		switch i % 4 {
		case 0: // a private part of a section that is asked for
			add(fmt.Sprintf("org,example,bench)/section/%d/private", i%smallN), false, replay.Exclude, "")
		case 1: // an allowed article: an exact rule on the key asked for
			add(smallKey(i%(smallN-1)), true, replay.Allow, "")
		case 2: // a reading-room rule the public view skips
			add(fmt.Sprintf("org,example,bench)/section/%d/", i%smallN), false, replay.Block, "reading-room")
		default: // other hosts
			add(fmt.Sprintf("org,example,host%d)/", i), false, replay.Exclude, "")
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".rules-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := replay.WriteACLJ(f, rules); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func smallKey(u int) string {
	return fmt.Sprintf("org,example,bench)/section/%d/article.html", u)
}

// rulesLoad measures TimeGate and CDX requests per second with n rules
// in force and with none, alternating four times in the same run (the
// daemon reloads the rules file it watches: base is its collection's URL
// on the public front).
func rulesLoad(base, path string, n int, d time.Duration, workers int) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string, hdr ...string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if len(hdr) == 2 {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// use puts k rules in force and waits until the sentinel says so.
	use := func(k int) error {
		if err := writeRules(path, k); err != nil {
			return err
		}
		want := http.StatusFound
		if k > 0 {
			want = http.StatusNotFound
		}
		for range 600 {
			if code, err := get(base + "/" + smallURI(smallN-1)); err == nil && code == want {
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		return fmt.Errorf("the daemon did not put %d rules in force within 30 s", k)
	}
	rate := func(next func(r *rand.Rand) (string, []string), ok int) (float64, error) {
		var cnt, bad atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 11))
				for ctx.Err() == nil {
					u, hdr := next(r)
					if code, err := get(u, hdr...); err != nil || code != ok {
						bad.Add(1)
						continue
					}
					cnt.Add(1)
				}
			}()
		}
		start := time.Now()
		wg.Wait()
		if bad.Load() > 0 {
			return 0, fmt.Errorf("%d requests failed", bad.Load())
		}
		return float64(cnt.Load()) / time.Since(start).Seconds(), nil
	}
	timegate := func(r *rand.Rand) (string, []string) {
		at := t0.Add(time.Duration(r.IntN(perSmall*30*24)) * time.Hour).Format(http.TimeFormat)
		return base + "/" + smallURI(r.IntN(smallN-1)), []string{"Accept-Datetime", at}
	}
	cdx := func(r *rand.Rand) (string, []string) {
		return base + "/cdx?url=" + smallURI(r.IntN(smallN-1)), nil
	}
	sums := map[string]float64{}
	for round := range 4 {
		for _, k := range []int{0, n} {
			if err := use(k); err != nil {
				return err
			}
			tg, err := rate(timegate, http.StatusFound)
			if err != nil {
				return fmt.Errorf("timegate with %d rules: %w", k, err)
			}
			cx, err := rate(cdx, http.StatusOK)
			if err != nil {
				return fmt.Errorf("cdx with %d rules: %w", k, err)
			}
			sums[fmt.Sprintf("tg%d", k)] += tg
			sums[fmt.Sprintf("cdx%d", k)] += cx
			fmt.Fprintf(os.Stderr, "round %d, %5d rules: TimeGate %.0f/s, CDX %.0f/s\n", round+1, k, tg, cx)
		}
	}
	for _, kind := range []string{"tg", "cdx"} {
		none, with := sums[fmt.Sprint(kind, 0)]/4, sums[fmt.Sprint(kind, n)]/4
		name := map[string]string{"tg": "TimeGate", "cdx": "CDX"}[kind]
		fmt.Printf("%-8s %d workers: %.0f requests/s with %d rules, %.0f with none (ratio %.2f)\n", name, workers, with, n, none, with/none)
	}
	return nil
}
