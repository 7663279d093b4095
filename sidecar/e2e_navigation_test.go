package sidecar_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/sidecar"
)

// TestE2ENavigationStaysInArchive opens, in headless Chromium through the
// public front, archived pages that each try to leave the archive for an
// outside host (a second loopback server): navigating their own frame
// (location), the top level (top.location), a new window (window.open),
// a meta refresh inserted by script, link clicks (plain, target=_top,
// target=_blank), and an archived meta refresh and link (rewritten into
// the archive). Chromium has no CSP navigate-to, so a page shown at the
// top level could leave by script; the public front shows it in a frame
// instead (replay.View.Framed): the frame page's CSP frame-src admits the
// content origin only, and the iframe sandbox has neither
// allow-top-navigation nor allow-popups. The outside host sees none of
// these requests, the top level stays the frame page, no window opens,
// and a frame that moved is on the content origin. The token listener
// (listen.tcp without listen.content_front) frames its sandboxed mementos
// the same way, from their own URL: the same holds there.
func TestE2ENavigationStaysInArchive(t *testing.T) {
	exe := chromium(t)
	out := newOutsideHost(t, "<html><title>outside</title></html>", false)
	O := out.URL
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	ts := when.Format("20060102150405")
	marker := func(kind string) string {
		return `new Image().src = "/default/` + ts + `im_/http://nav.test/marker-` + kind + `.png";`
	}
	// Each page tries one way out once loaded, then (for the ways the
	// sandbox refuses at once) asks for a marker image.
	cases := []struct {
		kind, head, script string
		async              bool // resolved by a blocked or moved frame, not the marker
	}{
		{kind: "self", script: `location.href = "` + O + `/self";`, async: true},
		{kind: "meta-script", script: `const m = document.createElement("meta"); m.httpEquiv = "refresh"; m.content = "0;url=` + O + `/meta"; document.head.appendChild(m);`, async: true},
		{kind: "link", script: `const a = document.createElement("a"); a.href = "` + O + `/link"; document.body.appendChild(a); a.click();`, async: true},
		{kind: "link-top", script: `const a = document.createElement("a"); a.href = "` + O + `/link-top"; a.target = "_top"; document.body.appendChild(a); a.click(); ` + marker("link-top")},
		{kind: "link-blank", script: `const a = document.createElement("a"); a.href = "` + O + `/link-blank"; a.target = "_blank"; document.body.appendChild(a); a.click(); ` + marker("link-blank")},
		{kind: "top", script: `try { top.location.href = "` + O + `/top"; } catch (e) {} ` + marker("top")},
		{kind: "open", script: `window.open("` + O + `/open"); ` + marker("open")},
		{kind: "meta-archived", head: `<meta http-equiv="refresh" content="0;url=` + O + `/meta-archived">`, async: true},
		{kind: "link-archived", script: `document.getElementById("a").click();`, async: true},
	}
	dir, warcs := archiveDirs(t)
	var warc []byte
	for i, c := range cases {
		page := `<html><head><title>` + c.kind + `</title>` + c.head + `</head><body><a id="a" href="` + O + `/link-archived">out</a>
<script>window.addEventListener("load", () => { ` + c.script + ` });</script></body></html>`
		warc = append(warc, warcRec{Type: "response", URI: "http://nav.test/" + c.kind, Date: when, ID: recID(300 + i), Body: []byte(page)}.bytes()...)
	}
	if err := os.WriteFile(filepath.Join(warcs, "nav.warc.gz"), warc, 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, publicConfig)
	var st sidecar.AccessState
	if err := d.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	pub := st.Fronts[0]
	waitFor(t, "ingest", func() bool {
		_, body := get(t, pub.URL+"/default/cdx?url=nav.test/*&output=text&fl=timestamp", nil)
		return strings.Count(body, "\n") == len(cases)
	})

	for _, c := range cases {
		for _, via := range []string{"public", "token"} {
			t.Run(via+"/"+c.kind, func(t *testing.T) {
				// A browser of its own for each way out.
				tctx := browser(t, exe)
				var emu sync.Mutex
				requested := map[string]string{}
				var blocked, seen []string
				chromedp.Listen(tctx, func(ev any) {
					emu.Lock()
					defer emu.Unlock()
					switch e := ev.(type) {
					case *network.EventRequestWillBeSent:
						requested[string(e.RequestID)] = e.Request.URL
						seen = append(seen, e.Request.URL)
					case *network.EventLoadingFailed:
						blocked = append(blocked, requested[string(e.RequestID)]+" "+string(e.BlockedReason)+" "+e.ErrorText)
					}
				})
				if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
					t.Fatal(err)
				}
				urim := pub.ContentURL + "/default/" + ts + "/http://nav.test/" + c.kind
				frame := pub.URL + "/default/" + ts + "/http://nav.test/" + c.kind
				origin := pub.ContentURL + "/"
				if via == "token" {
					// The token listener frames the page from its own URL.
					urim = d.tcp + "/t/" + testCDXToken + "/default/" + ts + "/http://nav.test/" + c.kind
					frame, origin = urim, d.tcp+"/t/"+testCDXToken+"/"
				}
				// Not chromedp.Navigate: it waits for a load event a page
				// leaving at once may never give.
				if _, err := chromedp.Call(tctx, page.Navigate, page.NavigateParams{URL: urim}); err != nil {
					t.Fatal(err)
				}
				var kids []string
				waitFor(t, "the attempt to resolve", func() bool {
					emu.Lock()
					if !c.async {
						defer emu.Unlock()
						for _, u := range seen {
							if strings.Contains(u, "/marker-"+c.kind+".png") {
								return true
							}
						}
						return false
					}
					for _, b := range blocked {
						if strings.HasPrefix(b, O+"/") {
							emu.Unlock()
							return true
						}
					}
					emu.Unlock()
					_, kids = frameURLs(t, tctx)
					// The frame moved: refused (an error page) or elsewhere.
					return len(kids) == 1 && (strings.HasPrefix(kids[0], "chrome-error:") || strings.HasPrefix(kids[0], "http") && kids[0] != urim)
				})
				top, kids := frameURLs(t, tctx)
				if top != frame {
					t.Errorf("the top level is %s, want the frame page %s", top, frame)
				}
				if len(kids) != 1 || !(kids[0] == urim || strings.HasPrefix(kids[0], origin) || strings.HasPrefix(kids[0], "chrome-error:")) {
					t.Errorf("the frame is at %v, want the content origin (or a refused navigation)", kids)
				}
				emu.Lock()
				t.Logf("frame %v; failed loads %v", kids, blocked)
				emu.Unlock()
				targets, err := chromedp.Targets(tctx)
				if err != nil {
					t.Fatal(err)
				}
				pages := 0
				for _, ti := range targets {
					if ti.Type == "page" {
						pages++
					}
				}
				if pages != 1 {
					t.Errorf("%d pages open, want 1 (no window opened)", pages)
				}
			})
		}
	}
	if got := out.requests("GET /favicon.ico"); len(got) > 0 {
		t.Errorf("archived pages reached the outside host: %v", got)
	}
}
