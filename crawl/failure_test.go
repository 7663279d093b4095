package crawl

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCrawlFailureClasses crawls seeds that fail in every way a real
// network fails — a closed port, an unresolvable host, a server that
// never answers, one that hangs up, a TLS certificate nobody signed — and
// checks that the crawler counts each under its class, with the URL in the
// example, and that the counts add up to Errors.
func TestCrawlFailureClasses(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()

	hangup, err := net.Listen("tcp", "127.0.0.1:0") // reads the request, closes
	if err != nil {
		t.Fatal(err)
	}
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			c.Read(buf)
			c.Close()
		}
	}()

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()

	seeds := map[string]string{
		refusedURL:                                                     FailRefused,
		"http://wayside-test.invalid/":                                 FailDNS,
		"http://" + silent.Addr().String() + "/":                       FailTimeout,
		"http://" + hangup.Addr().String() + "/":                       FailReset,
		strings.Replace(tlsSrv.URL, "127.0.0.1", "localhost", 1) + "/": FailTLS,
	}
	var us []*url.URL
	for s := range seeds {
		u, err := ParseSeed(s)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, u)
	}
	scope, err := NewScope(us, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{WARCDir: t.TempDir(), Recorder: Options{Allow: scope.Allow, Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := NewCrawler(CrawlConfig{Seeds: us, Recorder: s.Recorder, Scope: scope, MaxDepth: -1, Parallel: len(us)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Pages != 0 || st.Errors != int64(len(seeds)) {
		t.Fatalf("pages %d, errors %d; want 0 and %d", st.Pages, st.Errors, len(seeds))
	}
	got := map[string]Failure{}
	var sum int64
	for _, f := range st.Failures {
		got[f.Class] = f
		sum += f.Count
	}
	if sum != st.Errors {
		t.Errorf("failure counts add up to %d, errors %d", sum, st.Errors)
	}
	for seed, class := range seeds {
		f, ok := got[class]
		if !ok || f.Count != 1 || !strings.Contains(f.Example, strings.TrimSuffix(seed, "/")) {
			t.Errorf("%s: want one %q failure naming it, got %+v (all: %+v)", seed, class, f, st.Failures)
		}
	}
}
