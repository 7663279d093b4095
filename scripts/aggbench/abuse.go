package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// abuse serves, on a loopback port written to addrFile, a link-format
// TimeMap of size bytes for every URI-R under /tm/ (the upstream of the
// abuse benchmark), then asks the daemon's aggregate route (url) n times
// in parallel and prints each answer's status and time.
func abuse(addrFile, target string, size, n int) error {
	var tm bytes.Buffer
	tm.WriteString("<http://example.com/>; rel=\"original\",\n")
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	// Up to size bytes (the aggregator's max_timemap_bytes is 32 MiB).
	for i := 0; ; i++ {
		t := t0.Add(time.Duration(i) * time.Minute)
		line := fmt.Sprintf("<http://upstream.example/web/%s/http://example.com/>; rel=\"memento\"; datetime=\"%s\",\n",
			t.Format("20060102150405"), t.Format(http.TimeFormat))
		if tm.Len()+len(line) > size {
			break
		}
		tm.WriteString(line)
	}
	body := tm.Bytes()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/link-format")
		w.Write(body)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
		return err
	}
	// Wait for the daemon the script starts once the address is written.
	for i := 0; ; i++ {
		if resp, err := http.Get(strings.Replace(target, "/aggregate/timemap/link/", "/healthz?", 1)); err == nil {
			resp.Body.Close()
			break
		}
		if i > 600 {
			return fmt.Errorf("the daemon did not come up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("upstream TimeMap: %d bytes; %d parallel aggregate TimeMap requests\n", len(body), n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := http.Get(fmt.Sprintf("%s%d", target, i))
			if err != nil {
				fmt.Printf("request %d: %v\n", i, err)
				return
			}
			m, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Printf("request %d: HTTP %d, %d bytes, %.2f s\n", i, resp.StatusCode, m, time.Since(start).Seconds())
		}()
	}
	wg.Wait()
	return nil
}
