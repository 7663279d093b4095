package testarchive

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func newServer(t *testing.T) *Server {
	t.Helper()
	return Start(t)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}

func get(t *testing.T, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestMementoHeadersAndRewriting(t *testing.T) {
	s := newServer(t)
	resp, body := get(t, s.URIM(SiteTS, PageDeterministic))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get("Memento-Datetime"); got != "Wed, 01 Jan 2020 00:00:00 GMT" {
		t.Errorf("Memento-Datetime %q", got)
	}
	if l := resp.Header.Get("Link"); !strings.Contains(l, `<http://example.test/>; rel="original"`) || !strings.Contains(l, `rel="timegate"`) || !strings.Contains(l, `rel="timemap"`) {
		t.Errorf("Link %q", l)
	}
	if resp.Header.Get("X-Archive-Orig-Server") != "ExampleServer/1.0" {
		t.Errorf("X-Archive-Orig-Server %q", resp.Header.Get("X-Archive-Orig-Server"))
	}
	for _, want := range []string{
		`href="/web/` + SiteTS + `cs_/http://example.test/style.css"`,
		`src="/web/` + SiteTS + `im_/http://example.test/logo.png"`,
		`src="/web/` + SiteTS + `im_/http://example.test/images/photo.png"`,
		`src="/web/` + SiteTS + `js_/http://example.test/app.js"`,
		`<script src="/static/replay.js">`, `id="testarchive-banner"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("rewritten page lacks %s:\n%s", want, body)
		}
	}
	_, css := get(t, s.URIM(SiteTS+"cs_", Style))
	if !strings.Contains(css, "url(/web/"+SiteTS+"im_/http://example.test/bg.png)") {
		t.Errorf("CSS not rewritten: %s", css)
	}
	// id_ serves the original bytes.
	_, raw := get(t, s.URIM(SiteTS+"id_", PageDeterministic))
	if strings.Contains(raw, "/web/") || strings.Contains(raw, "testarchive-banner") || !strings.Contains(raw, `href="/style.css"`) {
		t.Errorf("raw memento was rewritten:\n%s", raw)
	}
}

func TestClosestMementoRedirect(t *testing.T) {
	s := newServer(t)
	resp, _ := get(t, s.URIM(SiteTS+"im_", Photo))
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/web/"+PhotoTS+"im_/"+Photo {
		t.Fatalf("photo at %s: %d Location %q", SiteTS, resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = get(t, s.URIM("20200601000000", Logo))
	if resp.Header.Get("Location") != "/web/"+LogoTS2+"/"+Logo {
		t.Fatalf("closest logo to June 2020: %q", resp.Header.Get("Location"))
	}
	resp, _ = get(t, s.URIM(SiteTS, "http://example.test/missing"))
	if resp.StatusCode != 404 {
		t.Fatalf("missing memento: %d", resp.StatusCode)
	}
	// A host-relative request that escaped rewriting is redirected by Referer.
	resp, _ = get(t, s.URL()+"/js-added.png", "Referer", s.URIM(SiteTS, PageDeterministic))
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/web/"+SiteTS+"/"+JSAdded {
		t.Fatalf("referer fallback: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = get(t, s.URL()+"/js-added.png")
	if resp.StatusCode != 404 {
		t.Fatalf("no Referer: %d", resp.StatusCode)
	}
	// The alias host serves the same archive.
	resp, _ = get(t, "http://"+s.AliasHost()+"/web/"+SiteTS+"/"+Logo)
	if resp.StatusCode != 200 {
		t.Fatalf("alias host: %d", resp.StatusCode)
	}
}

func TestFaults(t *testing.T) {
	s := newServer(t)
	u := s.URIM(SiteTS+"im_", Logo)
	_, orig := get(t, u)

	s.Inject(Logo, Fault{Status: 404})
	if resp, _ := get(t, u); resp.StatusCode != 404 {
		t.Errorf("status fault: %d", resp.StatusCode)
	}
	s.Inject(Logo, Fault{Header: map[string]string{"Server": "X/2"}})
	if resp, _ := get(t, u); resp.Header.Get("X-Archive-Orig-Server") != "X/2" {
		t.Errorf("header fault: %q", resp.Header.Get("X-Archive-Orig-Server"))
	}
	s.Inject(Logo, Fault{Body: []byte("new")})
	if _, b := get(t, u); b != "new" {
		t.Errorf("body fault: %q", b)
	}
	s.Inject(Logo, Fault{RedirectTo: LogoTS2})
	if resp, _ := get(t, u); resp.Header.Get("Location") != "/web/"+LogoTS2+"im_/"+Logo {
		t.Errorf("redirect fault: %q", resp.Header.Get("Location"))
	}
	s.Inject(PageDeterministic, Fault{ExtraHTML: `<img src="/extra.png">`, AliasLinks: true})
	if _, b := get(t, s.URIM(SiteTS, PageDeterministic)); !strings.Contains(b, `src="http://`+s.AliasHost()+`/web/`+SiteTS+`im_/http://example.test/extra.png"`) {
		t.Errorf("extra HTML / alias links fault:\n%s", b)
	}
	s.Inject(Logo, Fault{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Error("hang fault answered")
	}
	s.ClearFaults()
	if _, b := get(t, u); b != orig {
		t.Error("ClearFaults did not restore the memento")
	}
}

func TestLoadRealWARC(t *testing.T) {
	dir := testenv.SharedDir(t)
	s, err := New("web")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.LoadWARCFile(filepath.Join(dir, "corpus", "warc", "pywb-iana.warc.gz"))
	if err != nil || n < 50 {
		t.Fatalf("loaded %d mementos: %v", n, err)
	}
	resp, body := get(t, s.URIM("20140126200624", "http://www.iana.org/"))
	if resp.StatusCode != 200 || !strings.Contains(body, "/web/20140126200624cs_/http://www.iana.org/_css/2013.1/screen.css") {
		t.Fatalf("IANA page: %d\n%.2000s", resp.StatusCode, body)
	}
	for _, p := range []string{"wac-IAH-urls-wget.warc.gz", "ukwa-flashfrozen-jwat-recompressed.warc.gz", "npmwarc-CC-MAIN-20140820021334-00006.warc"} {
		if _, err := s.LoadWARCFile(filepath.Join(dir, "corpus", "warc", p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
