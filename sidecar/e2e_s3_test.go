package sidecar_test

import (
	"context"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/s3test"
)

// TestE2EServeBucketChromium: a crawl uploaded to SeaweedFS (crawl
// --upload, nothing kept locally) is served by a daemon following the
// bucket prefix, and headless Chromium replays its home page from it with
// every resource loaded from the archive — the records read by range
// from the bucket — and none from the live site.
func TestE2EServeBucketChromium(t *testing.T) {
	exe := chromium(t)
	srv := s3test.Start(t)
	site, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	dir := t.TempDir()
	prefix := srv.URL("site")
	out, err := exec.Command(waysideBin, "crawl", "--warc-dir", filepath.Join(dir, "crawl"), "--delay", "0", "--quiet",
		"--upload", prefix, site.URL+"/").CombinedOutput()
	if err != nil {
		t.Fatalf("crawl --upload: %v\n%s", err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "crawl", "*.warc.gz")); len(left) != 0 {
		t.Fatalf("WARC files left locally: %v", left)
	}
	d := startDaemon(t, dir, `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
  cdx_token: `+testCDXToken+`
ingest:
  dirs: ["`+prefix+`"]
  poll_interval: 50ms
`)
	base := d.tcp + "/t/" + testCDXToken + "/default"
	home := site.URL + "/"
	var ts string
	waitFor(t, "the home page to be indexed from the bucket", func() bool {
		resp := httpGetRaw(t, base+"/cdx?url="+url.QueryEscape(home)+"&output=text&fl=timestamp,filename", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f := strings.Fields(string(b))
		if resp.StatusCode != 200 || len(f) < 2 {
			return false
		}
		if !strings.HasPrefix(f[1], "s3://wayside/site/") {
			t.Fatalf("the capture index names %q, want the object's s3:// location", f[1])
		}
		ts = f[0]
		return true
	})

	before := site.Site.Requests()
	bctx := newBrowser(t, exe)
	var mu sync.Mutex
	urls := map[string]string{}
	var failed []string
	ok := map[string]bool{}
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			urls[string(e.RequestID)] = e.Request.URL
		case *network.EventResponseReceived:
			if e.Response.Status == 200 {
				ok[e.Response.URL] = true
			}
		case *network.EventLoadingFailed:
			failed = append(failed, urls[string(e.RequestID)]+": "+e.ErrorText)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(bctx, 90*time.Second)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(base+"/"+ts+"/"+home)); err != nil {
		t.Fatal(err)
	}
	// The token listener shows the memento framed (its own origin is the
	// API's): the page is read inside the frame.
	fr := replayFrame(t, tctx)
	title, err := chromedp.Run(tctx, chromedp.Poll[string](`document.readyState === "complete" && document.title`, chromedp.WithPollingInFrame(fr)))
	if err != nil {
		t.Fatal(err)
	}
	// The stylesheet's background image comes after the load event (the
	// framed page's own resource timing omits it: read the network).
	waitFor(t, "the stylesheet's background image", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for u := range ok {
			if strings.HasSuffix(u, "/img/bg.png") {
				return true
			}
		}
		return false
	})
	mu.Lock()
	defer mu.Unlock()
	if title != "Wayside example library" {
		t.Errorf("title %q", title)
	}
	if len(failed) > 0 {
		t.Errorf("requests failed: %v", failed)
	}
	if n := site.Site.Requests() - before; n != 0 {
		t.Errorf("the replayed page made %d requests to the live site", n)
	}
	var loaded []string
	for u := range ok {
		if i := strings.Index(u, "/"+strings.TrimPrefix(site.URL, "http://")+"/"); i >= 0 && strings.HasPrefix(u, base+"/") {
			loaded = append(loaded, u[i+len(strings.TrimPrefix(site.URL, "http://"))+1:])
		}
	}
	joined := " " + strings.Join(loaded, " ") + " "
	for _, p := range []string{"/", "/css/site.css", "/js/app.js", "/img/logo.png", "/img/bg.png"} {
		if !strings.Contains(joined, " "+p+" ") {
			t.Errorf("%s was not loaded from the archive (loaded: %v)", p, loaded)
		}
	}
}
