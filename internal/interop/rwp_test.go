package interop_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/fixity"
	"github.com/wayside-archive/wayside/internal/testenv"
)

// rwpPage is the test page: ReplayWeb.page's embed (<replay-web-page>,
// from ui.js) loading the archive (%s: /coll.wacz or /coll.warc.gz) into
// the collection "wayside", its service worker under /replay/, showing
// the URL %s.
const rwpPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Wayside WACZ in ReplayWeb.page</title>
<script src="/ui.js"></script></head>
<body><replay-web-page source="%s" coll="wayside" replaybase="/replay/" url="%s"></replay-web-page></body></html>
`

// rwpCommonJS is the start of every script run in the test page
// (rwpSession.eval): rwpReady waits (bounded) until the embed's frame is
// controlled by the service worker and the collection's pages API answers
// — with at least one page if needPages: a WACZ lists its pages.jsonl,
// while wabac.js 2.x detects no pages in a plain WARC (WARCLoader's
// detectPages is false) and lists none — and returns that frame's window
// and the pages (null if the API never answered so; errors in
// out.errors); rwpFind searches the same-origin
// frames and shadow roots for the replay frame ReplayWeb.page opened for
// its url attribute.
const rwpCommonJS = `
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // fetchBounded is win.fetch aborted (body included) after 60 s: a
  // fetch the service worker never answers (it can be stopped and
  // restarted by the browser under load) rejects instead of hanging the
  // script until the harness's deadline.
  const fetchBounded = (win, url, opts) => {
    const ac = new win.AbortController();
    setTimeout(() => ac.abort(), 60000);
    return win.fetch(url, Object.assign({}, opts, { signal: ac.signal }));
  };
  const rwpReady = async (out, needPages) => {
    const host = document.querySelector("replay-web-page");
    let win = null, state = "no embed", pages = null;
    for (let i = 0; i < 400 && pages === null; i++) {
      await sleep(200);
      const f = host && host.shadowRoot && host.shadowRoot.querySelector("iframe");
      win = f && f.contentWindow;
      state = "no frame";
      if (!win) continue;
      state = "frame " + win.location.href + " not controlled";
      if (!win.navigator.serviceWorker || !win.navigator.serviceWorker.controller) continue;
      try {
        const r = await fetchBounded(win, "/replay/w/api/c/wayside/pages");
        state = "pages API: " + r.status;
        if (r.ok) {
          const j = await r.json();
          if (j.pages && (j.pages.length || !needPages)) pages = j.pages.map((p) => ({ url: p.url, ts: p.ts, title: p.title }));
        }
      } catch (e) { state = "pages API: " + e; } // asked again (the worker may be restarting)
    }
    if (pages === null) out.errors.push("the collection never listed its pages: " + state);
    return { win, pages };
  };
  const rwpFind = (doc) => {
    if (!doc) return null;
    if (doc.location && doc.location.pathname.includes("/replay/w/wayside/") && doc.location.pathname.includes("mp_/")) return doc;
    const roots = [doc];
    for (let k = 0; k < roots.length; k++) {
      for (const el of roots[k].querySelectorAll("*")) {
        if (el.shadowRoot) roots.push(el.shadowRoot);
        if (el.tagName === "IFRAME") {
          let d = null;
          try { d = el.contentDocument; } catch (e) {}
          const hit = rwpFind(d);
          if (hit) return hit;
        }
      }
    }
    return null;
  };
`

// rwpScript runs in the test page once ReplayWeb.page is up: it waits
// for the collection (rwpReady), then fetches every query's replay URL
// (id_: the payload as recorded, not rewritten) from the embed's frame,
// so the service worker answers them from the WACZ, and finally waits for
// the replay frame of the page the embed shows and reads its title. It
// returns a JSON document (rwpResult).
const rwpScript = `(async (queries) => {` + rwpCommonJS + `
  const out = { pages: null, answers: [], title: "", errors: [] };
  const ready = await rwpReady(out, true);
  const win = ready.win;
  out.pages = ready.pages;
  if (out.pages === null) return JSON.stringify(out);
  const b64 = (u8) => { let s = ""; for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000)); return btoa(s); };
  // wabac.js answers a URL of the collection with a redirect to the
  // same URL within the WACZ file that holds it (":HASH/"); fetching
  // those URLs gives the capture closest to the timestamp, unredirected.
  let file = "";
  try {
    const r = await fetchBounded(win, "/replay/w/wayside/" + queries[0].ts14 + "id_/" + queries[0].url, { cache: "no-store" });
    const m = r.url.match(/\/replay\/w\/wayside\/(:[0-9a-f]+)\//);
    if (m) file = m[1] + "/";
    else out.errors.push("no WACZ file named in " + r.url);
  } catch (e) { out.errors.push("first fetch: " + e); }
  for (const q of queries) {
    try {
      const r = await fetchBounded(win, "/replay/w/wayside/" + file + q.ts14 + "id_/" + q.url, { cache: "no-store", redirect: "manual" });
      const body = r.type === "opaqueredirect" ? new Uint8Array() : new Uint8Array(await r.arrayBuffer());
      out.answers.push({ status: r.status, url: r.url, type: r.type, body: b64(body), date: r.headers.get("date") || "" });
    } catch (e) { out.answers.push(null); out.errors.push(q.url + ": " + e); }
  }
  for (let i = 0; i < 300 && !out.title; i++) {
    const d = rwpFind(document);
    if (d && d.readyState === "complete") out.title = d.title;
    else await sleep(200);
  }
  return JSON.stringify(out);
})`

type rwpResult struct {
	Pages []struct {
		URL   string `json:"url"`
		TS    any    `json:"ts"`
		Title string `json:"title"`
	} `json:"pages"`
	Answers []*struct {
		Status int    `json:"status"`
		URL    string `json:"url"`
		Type   string `json:"type"`
		Body   string `json:"body"`
		Date   string `json:"date"`
	} `json:"answers"`
	Title  string   `json:"title"`
	Errors []string `json:"errors"`
}

// TestWACZReplayWebPage loads a WACZ Wayside made from two crawls of the
// example site (revisits of both profiles, across rotated WARC files) in
// ReplayWeb.page itself — the pinned replaywebpage npm package's ui.js
// and sw.js, served with the WACZ from a loopback HTTP server — in
// headless Chromium, as a user opens it: the embed registers the service
// worker, which reads the WACZ by range requests. Every page of
// pages.jsonl and every revisit is then fetched through the service
// worker and must replay byte for byte as the example site served it (its
// entity, or the gzip encoding of it the crawler received; the dynamic
// page its text and the one line the site appends per request), with
// status 200; ReplayWeb.page must list the WACZ's pages and show the page
// it was asked for, with its title.
func TestWACZReplayWebPage(t *testing.T) {
	t.Parallel()
	rwp := newRWP(t)
	dir := crawlExample(t, true, "--max-file-size", "40000")
	warcs := glob(t, filepath.Join(dir, "*.warc.gz"))
	w := filepath.Join(t.TempDir(), "coll.wacz")
	wayside(t, "wacz", "create", "-q", "--key", filepath.Join(t.TempDir(), "key.pem"), "-o", w, dir)
	members := testenv.ZipMembers(t, w)
	qs, _ := waczQueries(t, members, warcs)
	nPages := 0
	for _, q := range qs {
		if q.Kind == "page" {
			nPages++
		}
	}
	if nPages < 5 || len(qs)-nPages != 16 {
		t.Fatalf("%d pages and %d revisits; want at least 5 pages and the crawl's 16 revisits", nPages, len(qs)-nPages)
	}

	first := ""
	for _, q := range qs {
		if q.Kind == "page" && strings.HasSuffix(q.URL, "/") {
			first = q.URL
			break
		}
	}
	type jsQuery struct {
		URL  string `json:"url"`
		TS14 string `json:"ts14"`
	}
	var jq []jsQuery
	for _, q := range qs {
		jq = append(jq, jsQuery{URL: q.URL, TS14: time.UnixMilli(q.TS).UTC().Format("20060102150405")})
	}
	qj, _ := json.Marshal(jq)

	rwp.start(t, w, first)
	var res rwpResult
	raw := rwp.eval(t, rwpScript+"("+string(qj)+")")
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("the page's result is not JSON: %v\n%s", err, tail(raw, 2000))
	}
	if len(res.Errors) > 0 {
		t.Fatalf("in the browser: %v", res.Errors)
	}
	if len(res.Pages) != nPages {
		t.Errorf("ReplayWeb.page lists %d pages, pages.jsonl holds %d", len(res.Pages), nPages)
	}
	if len(res.Answers) != len(qs) {
		t.Fatalf("%d answers for %d queries", len(res.Answers), len(qs))
	}

	site := sitetest.New()
	dynamicTail := regexp.MustCompile(`^<!-- request \d+ at [^>]+ -->\n$`)
	for i, q := range qs {
		a := res.Answers[i]
		u, err := url.Parse(q.URL)
		if err != nil {
			t.Fatal(err)
		}
		r := site.Resource(u.Path)
		if r == nil {
			t.Errorf("%s %s: not a URL of the example site", q.Kind, q.URL)
			continue
		}
		body, err := base64.StdEncoding.DecodeString(a.Body)
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("%s %s at %s", q.Kind, q.URL, jq[i].TS14)
		switch {
		case a.Status != r.Status:
			t.Errorf("%s: replays with status %d (%s %s), the site answered %d", where, a.Status, a.Type, a.URL, r.Status)
		case r.Dynamic:
			if !bytes.HasPrefix(body, r.Body) || !dynamicTail.Match(body[len(r.Body):]) {
				t.Errorf("%s: %d bytes replayed are not the dynamic page's %d bytes and its request line", where, len(body), len(r.Body))
			}
		case !bytes.Equal(body, r.Served(false)) && !bytes.Equal(body, r.Served(true)):
			t.Errorf("%s: %d bytes replayed differ from the %d bytes the site served", where, len(body), len(r.Served(true)))
		case a.Date == "":
			t.Errorf("%s: replayed without the recorded Date header", where)
		}
	}
	if q0 := strings.TrimPrefix(first, "http://"); first == "" || res.Title == "" {
		t.Errorf("ReplayWeb.page did not show %s (title %q)", q0, res.Title)
	} else if u, _ := url.Parse(first); !bytes.Contains(site.Resource(u.Path).Body, []byte("<title>"+res.Title+"</title>")) {
		t.Errorf("ReplayWeb.page shows %s with title %q", first, res.Title)
	}
	fi, _ := os.Stat(w)
	if rwp.rangeReqs.Load() == 0 {
		t.Errorf("ReplayWeb.page made no range request for the WACZ")
	}
	t.Logf("%d pages and %d revisits replayed byte-exact in ReplayWeb.page 2.5.3 (Chromium); WACZ %d bytes, %d range requests, %d bytes sent", nPages, len(qs)-nPages, fi.Size(), rwp.rangeReqs.Load(), rwp.archiveBytes.Load())
}

// rwpSession is ReplayWeb.page in headless Chromium: the pinned
// replaywebpage npm package's ui.js and sw.js and one archive (a WACZ, or
// a WARC file as ReplayWeb.page loads it by URL) served from a loopback
// HTTP server with range support, and a test page embedding
// <replay-web-page> on it. newRWP checks the tools, start serves the
// archive and starts the browser, eval runs a script in the test page.
type rwpSession struct {
	uiDir, browser string
	base           string
	ctx            context.Context

	rangeReqs, archiveBytes atomic.Int64 // range requests for the archive, its bytes sent

	mu      sync.Mutex
	reqLog  []string
	console bytes.Buffer
}

// newRWP finds Chromium and the installed replaywebpage package; it is
// called before the test builds its archive, so a missing tool is
// reported first.
func newRWP(t *testing.T) *rwpSession {
	t.Helper()
	js := tools(t)
	browser, err := fixity.FindBrowser("")
	if err != nil {
		testenv.MissingTool(t, "interop: %v", err)
	}
	dir := filepath.Join(js.dir, "node_modules", "replaywebpage")
	for _, f := range []string{"ui.js", "sw.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("replaywebpage is not installed (scripts/interop-js.sh): %v", err)
		}
	}
	return &rwpSession{uiDir: dir, browser: browser}
}

// start serves archive (at /coll.wacz, /coll.warc or /coll.warc.gz, after
// its name, since ReplayWeb.page picks the loader by the extension) and a
// test page showing startURL from it in the collection "wayside", with
// the service worker under /replay/, and starts Chromium with a fresh
// profile. Everything stops when the test ends; if it failed, the
// server's request log and the page's console are logged.
func (s *rwpSession) start(t *testing.T, archive, startURL string) {
	t.Helper()
	name := "/coll.wacz"
	for _, ext := range []string{".warc.gz", ".warc"} {
		if strings.HasSuffix(archive, ext) {
			name = "/coll" + ext
		}
	}
	serveFile := func(p string) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			f, err := os.Open(p)
			if err != nil {
				http.Error(rw, err.Error(), 500)
				return
			}
			defer f.Close()
			fi, _ := f.Stat()
			http.ServeContent(rw, r, filepath.Base(p), fi.ModTime(), f)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, rwpPage, name, startURL)
	})
	mux.HandleFunc("GET /ui.js", serveFile(filepath.Join(s.uiDir, "ui.js")))
	mux.HandleFunc("GET /replay/ui.js", serveFile(filepath.Join(s.uiDir, "ui.js")))
	mux.HandleFunc("GET /replay/sw.js", serveFile(filepath.Join(s.uiDir, "sw.js")))
	archiveFile := serveFile(archive)
	mux.HandleFunc(name, func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			s.rangeReqs.Add(1)
		}
		archiveFile(&countingWriter{ResponseWriter: rw, n: &s.archiveBytes}, r)
	})
	logged := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqLog = append(s.reqLog, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Range"))
		s.mu.Unlock()
		mux.ServeHTTP(rw, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: logged, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	s.base = "http://" + ln.Addr().String()

	// A bound against a hang only: well above what the pages' scripts
	// wait at most (rwpReady's and each test's own loops, ~4.5 minutes
	// of waits on a loaded machine), so a script that gives up reports
	// its own state instead of being cut off by this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	tmp := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(s.browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(filepath.Join(tmp, "profile")),
		chromedp.Env("TMPDIR="+tmp))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	s.ctx = bctx
	chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*cdpruntime.EventConsoleAPICalled); ok {
			s.mu.Lock()
			for _, a := range e.Args {
				s.console.Write(a.Value)
				s.console.WriteByte(' ')
			}
			s.console.WriteByte('\n')
			s.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			s.mu.Lock()
			t.Logf("requests to the server (%d bytes of the archive sent):\n%s", s.archiveBytes.Load(), tail(strings.Join(s.reqLog, "\n"), 4000))
			t.Logf("the page's console:\n%s", tail(s.console.String(), 4000))
			s.mu.Unlock()
		}
		bcancel()
		acancel()
		cancel()
		srv.Close()
	})
}

// eval loads the test page and runs script in it, awaiting the promise
// it returns: a JSON document whose "pages" member is null if the
// collection never listed its pages (rwpReady). ReplayWeb.page's first
// load in a fresh profile now and then leaves its collection unloaded
// (the service worker's pages API answers 404 for minutes; seen once in
// nine runs, cause not found): the page is then loaded again, once, as a
// user would reload it, and logged. It returns the last document.
func (s *rwpSession) eval(t *testing.T, script string) string {
	t.Helper()
	var raw string
	for attempt := 1; attempt <= 2; attempt++ {
		if err := chromedp.Do(s.ctx, chromedp.Navigate(s.base+"/")); err != nil {
			t.Fatalf("Chromium: %v", err)
		}
		var err error
		raw, err = chromedp.Run(s.ctx, chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("Chromium: %v", err)
		}
		var res struct {
			Pages  json.RawMessage `json:"pages"`
			Errors []string        `json:"errors"`
		}
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatalf("the page's result is not JSON: %v\n%s", err, tail(raw, 2000))
		}
		if (len(res.Pages) > 0 && string(res.Pages) != "null") || attempt == 2 {
			break
		}
		t.Logf("ReplayWeb.page did not load the collection (%v): loading the page again", res.Errors)
	}
	return raw
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}
