package sitetest

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

type answer struct {
	status int
	body   []byte
	err    error
}

func get(url string) answer {
	resp, err := http.Get(url)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: b, err: err}
}

// TestHold: a held answer goes out only once the path it waits for was
// requested, whole; later requests for the held path are answered at
// once; a hold whose trigger never comes ends at its bound with 503 and
// Err names it.
func TestHold(t *testing.T) {
	srv, reqs, err := StartWith(func(string) *Site { return New() })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Hold("/about.html", []string{"/missing-trigger", "/news.html"}, 3*time.Minute)
	held := make(chan answer, 1)
	go func() { held <- get(srv.URL + "/about.html") }()
	// Wait (bounded) until the held request has reached the server.
	deadline := time.Now().Add(2 * time.Minute)
	for !slices.Contains(reqs.Requests(), host+" /about.html") {
		if time.Now().After(deadline) {
			t.Fatal("the request for /about.html never reached the server")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case a := <-held:
		t.Fatalf("held /about.html answered (%d, %v) before /news.html was requested", a.status, a.err)
	default:
	}
	if a := get(srv.URL + "/news.html"); a.err != nil || a.status != http.StatusOK {
		t.Fatalf("/news.html: %d %v", a.status, a.err)
	}
	a := <-held
	if want := srv.Site.Resource("/about.html").Body; a.err != nil || a.status != http.StatusOK || !bytes.Equal(a.body, want) {
		t.Fatalf("released /about.html: %d, %d bytes, %v; want 200 and the page's %d bytes", a.status, len(a.body), a.err, len(want))
	}
	if a := get(srv.URL + "/about.html"); a.err != nil || a.status != http.StatusOK {
		t.Fatalf("/about.html after the release: %d %v", a.status, a.err)
	}
	if err := srv.Err(); err != nil {
		t.Fatalf("Err after a released hold: %v", err)
	}

	// The trigger never comes: the bound ends the hold.
	srv.Hold("/feed.html", []string{"/never"}, time.Millisecond)
	if a := get(srv.URL + "/feed.html"); a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Fatalf("/feed.html held past its bound: %d %v, want 503", a.status, a.err)
	}
	if err := srv.Err(); err == nil || !strings.Contains(err.Error(), "/feed.html") || !strings.Contains(err.Error(), "/never") {
		t.Fatalf("Err after a hold reached its bound: %v, want one naming /feed.html and /never", err)
	}
}
