package sidecar_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/sidecar"
)

// TestE2ETokenListenerSandbox: a page replayed through the token listener
// (listen.tcp, the CDX token in its URL) runs in an opaque origin in
// headless Chromium: its script reads the token from its own URL and
// tries the daemon's API with it (fetch and XHR of the CDX and access
// routes, same origin by URL), the status route, a form post to the rules
// route, cookies and storage, and an outside host (a second loopback
// server): it gets nothing, and the daemon says so in /v1/access. With
// listen.content_front set, the token listener answers a memento with a
// redirect to that front's content origin instead.
func TestE2ETokenListenerSandbox(t *testing.T) {
	exe := chromium(t)
	out := newOutsideHost(t, "outside", true)
	dir, warcs := archiveDirs(t)
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	ts := when.Format("20060102150405")
	page := `<html><head><title>archived</title></head><body>
<form id="f" method="POST" action="/v1/access/rules"><input name="x" value="1"></form>
<script>
const results = {};
async function attempt(name, fn) {
  try { results[name] = "ok:" + await fn(); } catch (e) { results[name] = "err:" + e; }
}
function xhr(u) {
  return new Promise((res, rej) => { const x = new XMLHttpRequest(); x.open("GET", u); x.onload = () => res(x.status); x.onerror = () => rej("error"); x.send(); });
}
(async () => {
  const mount = location.pathname.split("/").slice(0, 3).join("/"); // "/t/<token>"
  const tok = mount.split("/")[2];
  results.origin = self.origin;
  await attempt("fetch_cdx", async () => (await fetch(mount + "/default/cdx?url=*.test")).status);
  await attempt("xhr_timemap", () => xhr(mount + "/default/timemap/link/http://evil.test/page"));
  await attempt("fetch_status", async () => (await fetch("/v1/status", {headers: {"X-Wayside-Token": tok}})).status);
  await attempt("fetch_access", async () => (await fetch("/v1/access", {headers: {"Authorization": "Bearer " + tok}})).status);
  await attempt("fetch_outside", async () => (await fetch("` + out.URL + `/collect?fetch")).status);
  await attempt("cookie", async () => { document.cookie = "x=1"; return document.cookie; });
  await attempt("storage", async () => { localStorage.setItem("x", "1"); return localStorage.getItem("x"); });
  await attempt("open", async () => String(window.open("` + out.URL + `/collect?open")));
  try { document.getElementById("f").submit(); results.form = "submitted"; } catch (e) { results.form = "err:" + e; }
  window.results = results;
  document.title = "done";
})();
</script></body></html>`
	warc := warcRec{Type: "response", URI: "http://evil.test/page", Date: when, ID: recID(1), Body: []byte(page),
		Headers: []string{"Set-Cookie: session=archived; Path=/"}}.bytes()
	if err := os.WriteFile(filepath.Join(warcs, "evil.warc.gz"), warc, 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, publicConfig)
	var st sidecar.AccessState
	if err := d.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.TCPReplay, "sandboxed") {
		t.Errorf("/v1/access tcp_replay: %q, want it to say sandboxed", st.TCPReplay)
	}
	var status struct {
		Captures struct {
			TCPReplay string `json:"tcp_replay"`
		} `json:"captures"`
	}
	if err := d.client.GetJSON(context.Background(), "/v1/status", &status); err != nil || !strings.HasPrefix(status.Captures.TCPReplay, "sandboxed") {
		t.Errorf("/v1/status captures.tcp_replay: %q (%v), want it to say sandboxed", status.Captures.TCPReplay, err)
	}
	if !strings.Contains(d.log(), "sandboxed") {
		t.Errorf("the start-up log does not say how listen.tcp serves mementos:\n%s", d.log())
	}
	urim := d.tcp + "/t/" + testCDXToken + "/default/" + ts + "/http://evil.test/page"
	waitFor(t, "ingest", func() bool {
		resp, _ := get(t, urim, nil)
		return resp.StatusCode == 200
	})
	resp, _ := get(t, urim, nil)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox allow-scripts;") {
		t.Errorf("CSP on the token listener: %q", csp)
	}

	tctx := browser(t, exe)
	if err := chromedp.Do(tctx, chromedp.Navigate(urim)); err != nil {
		t.Fatal(err)
	}
	// The page is framed, in an opaque origin, from its own URL.
	fr := replayFrame(t, tctx)
	results, err := chromedp.Run(tctx, chromedp.Poll[map[string]any](`document.title === "done" && window.results`, chromedp.WithPollingInFrame(fr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("results: %v", results)
	if results["origin"] != "null" {
		t.Errorf("the page's origin is %v, want an opaque origin (null)", results["origin"])
	}
	for _, k := range []string{"fetch_cdx", "xhr_timemap", "fetch_status", "fetch_access", "fetch_outside", "cookie", "storage"} {
		if v, _ := results[k].(string); !strings.HasPrefix(v, "err:") {
			t.Errorf("%s: %q, want it refused", k, v)
		}
	}
	if v, _ := results["open"].(string); v != "ok:null" {
		t.Errorf("window.open: %q, want no window", v)
	}
	cookies, err := chromedp.Call(tctx, network.GetCookies, network.GetCookiesParams{URLs: []string{urim, d.tcp}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 0 {
		t.Errorf("cookies reached the browser: %v", cookies.Cookies)
	}
	// The form was not submitted: the page is still there.
	framed := d.tcp + "/t/" + testCDXToken + "/default/" + ts + "mp_/http://evil.test/page"
	if top, kids := frameURLs(t, tctx); top != urim || len(kids) != 1 || kids[0] != framed {
		t.Errorf("the page left for %s %v: the form was submitted", top, kids)
	}
	if got := out.requests(); len(got) > 0 {
		t.Errorf("the archived page reached the outside host: %v", got)
	}

	// With listen.content_front, the token listener redirects mementos to
	// that front's content origin.
	d.term()
	d2 := startDaemon(t, dir, strings.Replace(publicConfig, "  cdx_token:", "  content_front: reading-room\n  cdx_token:", 1))
	if err := d2.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	var room sidecar.PublicFront
	for _, f := range st.Fronts {
		if f.AccessPoint == "reading-room" {
			room = f
		}
	}
	if !strings.HasPrefix(st.TCPReplay, "redirected to the content origin "+room.ContentURL) {
		t.Errorf("tcp_replay %q, want a redirect to %s", st.TCPReplay, room.ContentURL)
	}
	urim = d2.tcp + "/t/" + testCDXToken + "/default/" + ts + "/http://evil.test/page"
	var loc string
	waitFor(t, "the redirect", func() bool {
		resp := httpGetRaw(t, urim, nil)
		resp.Body.Close()
		loc = resp.Header.Get("Location")
		return resp.StatusCode == http.StatusFound
	})
	if want := room.ContentURL + "/default/" + ts + "/http://evil.test/page"; loc != want {
		t.Errorf("Location %q, want %q", loc, want)
	}
}

// TestE2EAccessTokenReadingRoom: an access point chosen by token
// (access.tokens), end to end with the real binary: the embargoed
// capture the reading room may see appears through listen.tcp with the
// reading room's token (in the path and as a header) in the CDX API, the
// TimeMap and replay, and not with the staff CDX token; the token reaches
// nothing but the access routes.
func TestE2EAccessTokenReadingRoom(t *testing.T) {
	const roomToken = "reading-room-token-0123456789"
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	os.MkdirAll(warcs, 0o755)
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "rules", "collection.aclj"), []byte(publicRules), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 5, 1, 10, 0, 0, 0, time.UTC)
	recent := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	var warc []byte
	for i, d := range []time.Time{old, recent} {
		warc = append(warc, warcRec{Type: "response", URI: "http://embargo.test/news", Date: d, ID: recID(200 + i), Body: []byte("<html>news</html>")}.bytes()...)
	}
	if err := os.WriteFile(filepath.Join(warcs, "emb.warc.gz"), warc, 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, strings.Replace(publicConfig, "  rules: DIR/rules\n",
		"  rules: DIR/rules\n  tokens:\n    - token: "+roomToken+"\n      access_point: reading-room\n", 1))
	cdx := func(mount string, hdr map[string]string) (int, int) {
		resp := httpGetRaw(t, d.tcp+mount+"/default/cdx?url=embargo.test/news&output=text&fl=timestamp", hdr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, strings.Count(string(b), "\n")
	}
	waitFor(t, "ingest", func() bool {
		code, n := cdx("/t/"+roomToken, nil)
		return code == 200 && n == 2
	})
	if code, n := cdx("/t/"+testCDXToken, nil); code != 200 || n != 1 {
		t.Errorf("staff (CDX token): HTTP %d, %d captures, want the embargoed one hidden (1)", code, n)
	}
	if code, n := cdx("", map[string]string{"X-Wayside-Token": roomToken}); code != 200 || n != 2 {
		t.Errorf("reading room by header: HTTP %d, %d captures, want 2", code, n)
	}
	if code, n := cdx("", map[string]string{"Authorization": "Bearer " + roomToken}); code != 200 || n != 2 {
		t.Errorf("reading room by bearer: HTTP %d, %d captures, want 2", code, n)
	}
	resp := httpGetRaw(t, d.tcp+"/t/"+roomToken+"/default/timemap/link/http://embargo.test/news", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(b), `rel="`) < 2 || !strings.Contains(string(b), recent.Format("20060102150405")) {
		t.Errorf("reading-room TimeMap: HTTP %d\n%s", resp.StatusCode, b)
	}
	urim := d.tcp + "/t/" + roomToken + "/default/" + recent.Format("20060102150405") + "id_/http://embargo.test/news"
	if resp := httpGetRaw(t, urim, nil); resp.StatusCode != 200 {
		t.Errorf("reading-room replay of the embargoed capture: HTTP %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	staff := d.tcp + "/t/" + testCDXToken + "/default/" + recent.Format("20060102150405") + "id_/http://embargo.test/news"
	if resp := httpGetRaw(t, staff, nil); resp.StatusCode == 200 && resp.Header.Get("Memento-Datetime") == recent.Format(http.TimeFormat) {
		t.Errorf("staff replay served the embargoed capture")
	} else {
		resp.Body.Close()
	}
	for _, p := range []string{"/v1/status", "/v1/access", "/metrics", "/web/timemap/cdx?url=embargo.test"} {
		for _, hdr := range []map[string]string{{"X-Wayside-Token": roomToken}, {"Authorization": "Bearer " + roomToken}} {
			resp := httpGetRaw(t, d.tcp+p, hdr)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s with the reading-room token: HTTP %d, want 403", p, resp.StatusCode)
			}
		}
		resp := httpGetRaw(t, d.tcp+"/t/"+roomToken+p, nil)
		resp.Body.Close()
		if resp.StatusCode/100 != 4 {
			t.Errorf("/t/<room token>%s: HTTP %d, want refused", p, resp.StatusCode)
		}
	}
}

// replayFrame returns the frame a public front shows a memento in (the
// browser's top-level navigation to a memento gets a page framing it).
func replayFrame(t *testing.T, tctx context.Context) *chromedp.Node {
	t.Helper()
	nodes, err := chromedp.Run(tctx, chromedp.Nodes("body > iframe"))
	if err != nil || len(nodes) == 0 {
		t.Fatalf("the replay frame: %d iframes, %v", len(nodes), err)
	}
	return nodes[0]
}

// frameURLs returns the URL of the top frame and of its child frames.
func frameURLs(t *testing.T, tctx context.Context) (string, []string) {
	t.Helper()
	ft, err := chromedp.Call(tctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, c := range ft.FrameTree.ChildFrames {
		kids = append(kids, c.Frame.URL+c.Frame.URLFragment)
	}
	return ft.FrameTree.Frame.URL, kids
}
