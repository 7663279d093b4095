package crawlcolly_test

import (
	"sync"
	"testing"

	"github.com/gocolly/colly/v2"

	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/crawlcolly"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/warctest"
)

// TestAttach crawls the test site with a colly collector set up by Attach:
// every fetch, the 404 too, is recorded as a request and response pair, and
// colly sees the 404 in OnResponse (ParseHTTPErrorResponse).
func TestAttach(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	s, err := crawl.Open(crawl.Config{WARCDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := colly.NewCollector()
	crawlcolly.Attach(c, s.Recorder)
	var mu sync.Mutex
	statuses := map[int]int{}
	c.OnResponse(func(r *colly.Response) {
		mu.Lock()
		statuses[r.StatusCode]++
		mu.Unlock()
	})
	paths := []string{"/", "/missing.html", "/blog/", "/img/photo.jpg"}
	for _, p := range paths {
		if err := c.Visit(srv.URL + p); err != nil {
			t.Fatal(err)
		}
	}
	c.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if statuses[404] != 1 || statuses[200] != 3 {
		t.Errorf("colly saw statuses %v, want 404×1, 200×3", statuses)
	}
	types := map[string]int{}
	uris := map[string]bool{}
	for _, r := range warctest.ReadDirs(t, dir) {
		types[r.Record.Type]++
		if r.Record.Type == "response" {
			uris[r.Record.TargetURI] = true
		}
	}
	if types["request"] != len(paths) || types["response"] != len(paths) {
		t.Errorf("records %v, want %d requests and responses", types, len(paths))
	}
	for _, p := range paths {
		if !uris[srv.URL+p] {
			t.Errorf("no response record for %s (have %v)", srv.URL+p, uris)
		}
	}
}
