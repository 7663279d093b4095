package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/fixity"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/wacz"
	"github.com/wayside-archive/wayside/warcio"
)

// archived is one record of the crawls, read back independently of the
// capture index: what the access routes must serve for it.
type archived struct {
	rec     *warcio.Record
	payload []byte // the payload a client must get: the record's, or its original's for a revisit
	status  int    // the status a client must get
	header  warcio.Header
}

// accessSite is the crawled site and what the three crawls archived.
type accessSite struct {
	srv      *sitetest.Server
	warcs    string
	captures []archived // responses and revisits, in WARC order
	homes    []time.Time
}

// crawlThreeTimes crawls the example site three times with the real binary
// (the second and third with conditional requests), at least three seconds
// apart, and reads the WARCs back.
func crawlThreeTimes(t *testing.T, dir string) *accessSite {
	t.Helper()
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a := &accessSite{srv: srv, warcs: filepath.Join(dir, "warcs")}
	for i := range 3 {
		args := []string{"crawl", "--warc-dir", a.warcs, "--robots", "--delay", "0", "--parallel", "2", "--quiet"}
		if i > 0 {
			args = append(args, "--conditional")
		}
		out, err := exec.Command(waysideBin, append(args, srv.URL+"/")...).CombinedOutput()
		if err != nil {
			t.Fatalf("crawl %d: %v\n%s", i+1, err, out)
		}
		// The next crawl starts three seconds later, so every capture of
		// a URL has its own timestamp, with seconds between them that are
		// nearer one capture than the other.
		next := time.Now().Truncate(time.Second).Add(3 * time.Second)
		time.Sleep(time.Until(next))
	}
	// Every record, by id; then what each capture must replay as.
	byID := map[string]*warcio.Record{}
	var recs []*warcio.Record
	files, _ := filepath.Glob(filepath.Join(a.warcs, "*.warc.gz"))
	sort.Strings(files)
	for _, f := range files {
		r, err := warcio.Open(f, warcio.Options{KeepPayload: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			byID[rec.RecordID] = rec
			recs = append(recs, rec)
		}
		r.Close()
	}
	for _, rec := range recs {
		switch rec.Type {
		case "response":
			a.captures = append(a.captures, archived{rec: rec, payload: rec.Payload, status: rec.Status(), header: rec.HTTP.Header})
			if rec.TargetURI == srv.URL+"/" {
				a.homes = append(a.homes, rec.Date)
			}
		case "revisit":
			orig := byID[rec.Header("WARC-Refers-To")]
			if orig == nil {
				t.Fatalf("revisit %s: WARC-Refers-To %s is in no WARC file", rec.TargetURI, rec.Header("WARC-Refers-To"))
			}
			c := archived{rec: rec, payload: orig.Payload, status: rec.Status(), header: rec.HTTP.Header}
			if c.status == http.StatusNotModified {
				c.status, c.header = orig.Status(), orig.HTTP.Header
			}
			a.captures = append(a.captures, c)
			if rec.TargetURI == srv.URL+"/" {
				a.homes = append(a.homes, rec.Date)
			}
		}
	}
	if len(a.homes) != 3 {
		t.Fatalf("the home page was archived %d times, want 3", len(a.homes))
	}
	return a
}

// TestE2EAccess crawls a site three times with `wayside crawl`, serves the
// WARCs with `wayside serve` and checks the access routes as clients use
// them: TimeMaps, TimeGate negotiation, id_ fetches returning the exact
// archived payload of every capture (revisits from their originals), a
// replayed page in headless Chromium that loads everything from the
// archive and nothing from the live site, a fixity sweep of that page
// (stable across sweeps), MemGator aggregating Wayside's TimeMaps and
// TimeGate, and bad input.
func TestE2EAccess(t *testing.T) {
	dir := t.TempDir()
	site := crawlThreeTimes(t, dir)

	// The crawler kept a capture index of its own, covering its CDXJ files.
	lines := cdxjLines(t, site.warcs)
	ctx := context.Background()
	ci, err := captureindex.Open(filepath.Join(site.warcs, "capture-index"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ci.Stats(ctx)
	if err != nil || len(st.Scopes) != 1 || st.Scopes[0].Captures != int64(len(lines)) || st.Scopes[0].Unresolved != 0 {
		t.Fatalf("crawl's capture index: %+v (%v), want %d captures, all revisits resolved", st, err, len(lines))
	}
	if err := ci.Check(ctx); err != nil {
		t.Fatal(err)
	}
	ci.Close()

	d := startDaemon(t, dir, cdxTestConfig)
	base := d.tcp + "/t/" + testCDXToken + "/default"
	waitFor(t, "the capture index to hold every capture", func() bool {
		resp := httpGetRaw(t, base+"/cdx?url="+url.QueryEscape(site.srv.URL+"/")+"&matchType=host&output=text&fl=timestamp", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && bytes.Count(b, []byte("\n")) == len(lines)
	})
	home := site.srv.URL + "/"

	t.Run("timemap", func(t *testing.T) {
		resp := httpGetRaw(t, base+"/timemap/link/"+home, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/link-format" {
			t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		mementos := regexp.MustCompile(`<([^>]+)>; rel="memento"; datetime="([^"]+)"`).FindAllStringSubmatch(string(b), -1)
		if len(mementos) != 3 {
			t.Fatalf("%d mementos in:\n%s", len(mementos), b)
		}
		for i, m := range mementos {
			want := fmt.Sprintf("%s/%s/%s", base, site.homes[i].UTC().Format("20060102150405"), home)
			if m[1] != want || m[2] != site.homes[i].UTC().Format(http.TimeFormat) {
				t.Errorf("memento %d: %s %s, want %s", i, m[1], m[2], want)
			}
		}
		for _, want := range []string{`<` + home + `>; rel="original"`, `<` + base + `/` + home + `>; rel="timegate"`, `rel="self"; type="application/link-format"; from="` + site.homes[0].UTC().Format(http.TimeFormat)} {
			if !strings.Contains(string(b), want) {
				t.Errorf("TimeMap lacks %s:\n%s", want, b)
			}
		}
		resp = httpGetRaw(t, base+"/timemap/json/"+home, nil)
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := bytes.Count(b, []byte("\n")); resp.StatusCode != 200 || n != 3 || !json.Valid(bytes.SplitN(b, []byte("\n"), 2)[0]) {
			t.Errorf("JSON TimeMap: status %d, %d lines:\n%s", resp.StatusCode, n, b)
		}
	})

	t.Run("wacz", func(t *testing.T) {
		// Every capture of the site as a WACZ, streamed by the daemon and
		// sound by wacz.Verify.
		resp := httpGetRaw(t, base+"/wacz?url="+url.QueryEscape(home)+"&matchType=host", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/wacz" {
			t.Fatalf("status %d: %.300s", resp.StatusCode, b)
		}
		p := filepath.Join(t.TempDir(), "site.wacz")
		os.WriteFile(p, b, 0o644)
		rep, err := wacz.Verify(ctx, p, wacz.VerifyOptions{AllowUnsigned: true})
		if err != nil || !rep.OK() || rep.IndexLines != len(lines) || rep.Pages == 0 {
			t.Fatalf("verify: %v %+v, want %d index lines", err, rep, len(lines))
		}
	})

	t.Run("timegate", func(t *testing.T) {
		h := site.homes
		for _, tc := range []struct {
			name string
			at   time.Time
			want time.Time
		}{
			{"before the first", h[0].Add(-48 * time.Hour), h[0]},
			{"between the first and second, nearer the second", h[1].Add(-time.Second), h[1]},
			{"between the first and second, nearer the first", h[0].Add(time.Second), h[0]},
			{"between the second and third, nearer the second", h[1].Add(time.Second), h[1]},
			{"after the last", h[2].Add(48 * time.Hour), h[2]},
		} {
			resp := httpGetRaw(t, base+"/"+home, map[string]string{"Accept-Datetime": tc.at.UTC().Format(http.TimeFormat)})
			resp.Body.Close()
			want := base + "/" + tc.want.UTC().Format("20060102150405") + "/" + home
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
				t.Errorf("%s: %d Location %q, want %s", tc.name, resp.StatusCode, resp.Header.Get("Location"), want)
			}
			if resp.Header.Get("Vary") != "accept-datetime" || !strings.Contains(resp.Header.Get("Link"), `<`+home+`>; rel="original"`) ||
				!strings.Contains(resp.Header.Get("Link"), `rel="timemap"`) {
				t.Errorf("%s: Vary %q Link %q", tc.name, resp.Header.Get("Vary"), resp.Header.Get("Link"))
			}
		}
		resp := httpGetRaw(t, base+"/"+home, nil)
		resp.Body.Close()
		if want := base + "/" + site.homes[2].UTC().Format("20060102150405") + "/" + home; resp.Header.Get("Location") != want {
			t.Errorf("no Accept-Datetime: Location %q, want the latest %s", resp.Header.Get("Location"), want)
		}
	})

	t.Run("raw mementos are the archived payloads", func(t *testing.T) {
		kinds := map[string]int{}
		for _, c := range site.captures {
			ts := c.rec.Date.UTC().Format("20060102150405")
			resp := httpGetRaw(t, base+"/"+ts+"id_/"+c.rec.TargetURI, nil)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s %s (%s)", c.rec.Type, c.rec.TargetURI, ts)
			if resp.StatusCode != c.status {
				t.Errorf("%s: status %d, archived %d", what, resp.StatusCode, c.status)
			}
			if !bytes.Equal(body, c.payload) {
				t.Errorf("%s: %d bytes differ from the %d archived", what, len(body), len(c.payload))
			}
			if got, want := resp.Header.Get("Memento-Datetime"), c.rec.Date.UTC().Format(http.TimeFormat); got != want {
				t.Errorf("%s: Memento-Datetime %q", what, got)
			}
			if got, want := resp.Header.Get("Content-Type"), c.header.Get("Content-Type"); got != want {
				t.Errorf("%s: Content-Type %q, archived %q", what, got, want)
			}
			if got, want := resp.Header.Get("Content-Encoding"), c.header.Get("Content-Encoding"); got != want {
				t.Errorf("%s: Content-Encoding %q, archived %q", what, got, want)
			}
			kind := c.rec.Type
			if c.rec.Type == "revisit" && c.rec.Status() == http.StatusNotModified {
				kind = "revisit 304"
			}
			if c.header.Get("Content-Encoding") != "" {
				kind += " gzip"
			}
			kinds[kind]++
		}
		t.Logf("compared %d captures: %v", len(site.captures), kinds)
		for _, k := range []string{"response", "revisit", "revisit 304", "response gzip"} {
			if kinds[k] == 0 {
				t.Errorf("no %s among the captures: the crawl did not exercise it", k)
			}
		}
	})

	t.Run("chromium replay stays in the archive", func(t *testing.T) {
		exe := chromium(t)
		before := site.srv.Site.Requests()
		urim := base + "/" + site.homes[2].UTC().Format("20060102150405") + "/" + home
		bctx := newBrowser(t, exe)
		var mu sync.Mutex
		requested := map[string]string{}
		status := map[string]int64{}
		var failed []string
		err := chromedp.Listen(bctx, func(ev any) {
			mu.Lock()
			defer mu.Unlock()
			switch e := ev.(type) {
			case *network.EventRequestWillBeSent:
				requested[string(e.RequestID)] = e.Request.URL
			case *network.EventResponseReceived:
				status[e.Response.URL] = e.Response.Status
			case *network.EventLoadingFailed:
				failed = append(failed, requested[string(e.RequestID)]+": "+e.ErrorText)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		tctx, tcancel := context.WithTimeout(bctx, 60*time.Second)
		defer tcancel()
		if err := chromedp.Do(tctx, chromedp.Navigate(urim)); err != nil {
			t.Fatal(err)
		}
		// On the token listener the page is framed (an opaque origin).
		title, err := chromedp.Run(tctx, chromedp.Poll[string](`document.readyState === "complete" && document.title`, chromedp.WithPollingInFrame(replayFrame(t, tctx))))
		if err != nil {
			t.Fatal(err)
		}
		// The stylesheet's background image loads after the load event.
		// (The page runs in an opaque origin on the token listener: its
		// resource timing is not read, the browser's network events are.)
		waitFor(t, "the stylesheet's background image", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for u, s := range status {
				if strings.HasSuffix(u, "/img/bg.png") && s == 200 {
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
		if n := site.srv.Site.Requests() - before; n != 0 {
			t.Errorf("the replayed page made %d requests to the live site", n)
		}
		for _, f := range failed {
			if !strings.HasPrefix(f, d.tcp+"/favicon.ico:") { // the browser's own favicon probe
				t.Errorf("request failed: %v", f)
			}
		}
		loaded := map[string]bool{}
		for _, u := range requested {
			if !strings.HasPrefix(u, base+"/") && u != d.tcp+"/favicon.ico" { // the browser's own favicon probe
				t.Errorf("request outside the archive: %s", u)
			}
		}
		siteHost := strings.TrimPrefix(site.srv.URL, "http://")
		for u, s := range status {
			if i := strings.LastIndex(u, "://"+siteHost+"/"); s == 200 && i >= 0 {
				loaded[u[i+3+len(siteHost):]] = true
			}
		}
		for _, p := range []string{"/", "/css/site.css", "/js/app.js", "/img/logo.png", "/img/banner.jpg", "/img/bg.png"} {
			if !loaded[p] {
				t.Errorf("%s was not loaded from the archive (loaded: %v)", p, loaded)
			}
		}
	})

	t.Run("fixity sweeps Wayside's own archive", func(t *testing.T) {
		chromium(t)
		host := strings.TrimPrefix(d.tcp, "http://")
		var urims []string
		for _, h := range site.homes {
			urims = append(urims, base+"/"+h.UTC().Format("20060102150405")+"/"+home)
		}
		list := filepath.Join(dir, "urims.txt")
		os.WriteFile(list, []byte(strings.Join(urims, "\n")+"\n"), 0o644)
		out, err := exec.Command(waysideBin, "fixity", "replay", "--archive", "wayside="+host, urims[2]).Output()
		if err != nil {
			t.Fatalf("fixity replay: %v\n%s", err, exitStderr(err))
		}
		var m fixity.Manifest
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		if m.Context.Transient || len(m.Context.LiveWeb) > 0 || len(m.Context.Errors) > 0 {
			t.Errorf("replay context: %+v", m.Context)
		}
		included := 0
		for _, r := range m.Resources {
			if r.Excluded != "" {
				if r.Excluded != "browser-favicon" {
					t.Errorf("resource %s excluded: %s", r.URL, r.Excluded)
				}
				continue
			}
			included++
			if r.Rewritten == nil || r.Rewritten.Outcome != fixity.OutcomeOK || r.Rewritten.Status != 200 ||
				r.Raw == nil || r.Raw.Outcome != fixity.OutcomeOK || r.Raw.Status != 200 || r.Raw.Suspect != "" {
				t.Errorf("resource %s: rewritten %+v raw %+v", r.Key, r.Rewritten, r.Raw)
			}
		}
		if included < 6 {
			t.Errorf("%d resources hashed, want the page and its 5 embedded resources", included)
		}
		// The raw home page hashes to the archived payload.
		var want [32]byte
		for _, c := range site.captures {
			if c.rec.TargetURI == home && c.rec.Date.Equal(site.homes[2]) {
				want = sha256.Sum256(c.payload)
			}
		}
		found := false
		for _, r := range m.Resources {
			if r.Key == home && r.Raw != nil {
				found = true
				if r.Raw.BodyHash != want {
					t.Errorf("raw home page hash %x, archived payload %x", r.Raw.BodyHash, want)
				}
			}
		}
		if !found {
			t.Errorf("no raw home page in the manifest")
		}
		store := filepath.Join(dir, "fixity")
		for i := range 2 {
			out, err := exec.Command(waysideBin, "fixity", "sweep", "--archive", "wayside="+host, "--store", store, "--list", list).Output()
			if err != nil {
				t.Fatalf("sweep %d: %v\n%s", i+1, err, exitStderr(err))
			}
			if !strings.Contains(string(out), "3 mementos, 0 changed, 0 failed") {
				t.Errorf("sweep %d: %s", i+1, out)
			}
		}
	})

	t.Run("memgator finds the mementos", func(t *testing.T) {
		mg := buildMemGator(t)
		arcs := filepath.Join(dir, "archives.json")
		list := []map[string]any{{"id": "wayside", "name": "Wayside", "timemap": base + "/timemap/link/", "timegate": base + "/", "probability": 1}}
		b, _ := json.Marshal(list)
		os.WriteFile(arcs, b, 0o644)
		out, err := exec.Command(mg, "--arcs="+arcs, "--format=Link", "--contimeout=5s", home).Output()
		if err != nil {
			t.Fatalf("memgator: %v\n%s", err, exitStderr(err))
		}
		for _, h := range site.homes {
			want := fmt.Sprintf("<%s/%s/%s>", base, h.UTC().Format("20060102150405"), home)
			if !strings.Contains(string(out), want) {
				t.Errorf("MemGator's TimeMap lacks %s:\n%s", want, out)
			}
		}
		// TimeGate: the closest memento to a datetime nearer the second
		// crawl.
		at := site.homes[1].Add(-time.Second).UTC().Format("20060102150405")
		out, err = exec.Command(mg, "--arcs="+arcs, "--format=JSON", "--contimeout=5s", home, at).Output()
		if err != nil {
			t.Fatalf("memgator timegate: %v\n%s", err, exitStderr(err))
		}
		var res struct {
			Mementos map[string]json.RawMessage `json:"mementos"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		var closest struct{ URI string }
		json.Unmarshal(res.Mementos["closest"], &closest)
		if want := fmt.Sprintf("%s/%s/%s", base, site.homes[1].UTC().Format("20060102150405"), home); closest.URI != want {
			t.Errorf("MemGator's closest memento %q, want %s\n%s", closest.URI, want, out)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			path   string
			hdr    map[string]string
			status int
			msg    string
		}{
			{"/" + home, map[string]string{"Accept-Datetime": "yesterday"}, 400, `Accept-Datetime \"yesterday\"`},
			{"/timemap/link/http://exa%20mple.com/", nil, 400, `URI-R \"http://exa%20mple.com/\"`},
			{"/20241301000000/" + home, nil, 400, "is not a date"},
			{"/20200101000000id_/" + site.srv.URL + "/never-crawled.html", nil, 404, "no memento of"},
			{"/timemap/json/" + site.srv.URL + "/never-crawled.html", nil, 404, "no mementos of"},
			{"/cdx?url=" + url.QueryEscape(home) + "&filter=~url:(", nil, 400, "filter"},
			{"/cdx?url=" + url.QueryEscape(home) + "&limit=1000000000&output=text&fl=timestamp", nil, 200, ""},
		} {
			resp := httpGetRaw(t, base+tc.path, tc.hdr)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.msg) {
				t.Errorf("%s: %d %s", tc.path, resp.StatusCode, b)
			}
		}
		// The access routes need the CDX token on TCP, and are read-only.
		resp := httpGetRaw(t, d.tcp+"/default/timemap/link/"+home, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("without a token: %d", resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/cdx?url=x", nil)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		// The dedup CDX route for Heritrix is unchanged.
		resp = httpGetRaw(t, d.tcp+"/t/"+testCDXToken+"/web/timemap/cdx?url="+url.QueryEscape(home)+"&limit=-1", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(bytes.Fields(b)) != 7 {
			t.Errorf("Heritrix CDX query: %d %q", resp.StatusCode, b)
		}
	})

	out, err := exec.Command(waysideBin, "status", "-addr", d.sock).Output()
	if want := fmt.Sprintf("captures:   default %d (", len(lines)); err != nil || !strings.Contains(string(out), want) {
		t.Errorf("wayside status: %v\n%s\nwant %q", err, out, want)
	}
	// SIGTERM is an interruption: the CLI's exit status 130.
	var ee *exec.ExitError
	if err := d.term(); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 130) {
		t.Fatalf("daemon exit: %v\n%s", err, d.log())
	}
}

// cdxjLines returns the CDXJ lines written beside the WARCs.
func cdxjLines(t *testing.T, dir string) []cdxj.Line {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.cdxj"))
	var out []cdxj.Line
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			l, err := cdxj.Parse(sc.Text())
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, l)
		}
		fh.Close()
	}
	return out
}

// chromium returns the browser binary or reports it missing.
func chromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	testenv.MissingTool(t, "chromium is not installed (apt-get install chromium)")
	return ""
}

// buildMemGator builds ../shared/tools/memgator (offline, vendored) into a
// temporary directory, unless scripts/test.sh built it already
// ($WAYSIDE_MEMGATOR).
func buildMemGator(t *testing.T) string {
	t.Helper()
	src := filepath.Join(testenv.SharedDir(t), "tools", "memgator")
	if p := os.Getenv("WAYSIDE_MEMGATOR"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	bin := filepath.Join(t.TempDir(), "memgator")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=vendor", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build MemGator: %v\n%s", err, out)
	}
	return bin
}

func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// checkCaptureIndex asks the access routes, over the Unix socket, for every
// capture of host and checks that each record of at is there exactly once.
func checkCaptureIndex(t *testing.T, d *daemon, host string, at map[int64]warcRec) {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	}}
	defer tr.CloseIdleConnections()
	var got map[int64]int
	waitFor(t, "the capture index to hold every record", func() bool {
		resp, err := (&http.Client{Transport: tr}).Get("http://wayside/default/cdx?url=" + host + "&matchType=host&output=text&fl=offset,url")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = map[int64]int{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var off int64
			var uri string
			if _, err := fmt.Sscan(l, &off, &uri); err == nil {
				if r, ok := at[off]; ok && r.URI == uri {
					got[off]++
				}
			}
		}
		return len(got) == len(at)
	})
	for off, n := range got {
		if n != 1 {
			t.Errorf("record at offset %d is in the capture index %d times", off, n)
		}
	}
}
