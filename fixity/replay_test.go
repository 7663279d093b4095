package fixity

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/fixity/testarchive"
	"github.com/wayside-archive/wayside/internal/testenv"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

func mustVerify(t testing.TB, m *Manifest) {
	t.Helper()
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
	b := m.Marshal()
	back, err := ParseManifest(b, "round-trip")
	if err != nil {
		t.Fatal(err)
	}
	if Recompute(back) != m.Root {
		t.Fatalf("manifest does not recompute to its root after a JSON round trip")
	}
}

// record writes m to testdata/manifests/<name>.json when -update is set:
// the corpus of real manifests the offline tests recompute and classify.
func record(t testing.TB, name string, m *Manifest) {
	t.Helper()
	if !ddtest.Update() {
		return
	}
	if err := os.WriteFile(filepath.Join("testdata", "manifests", name+".json"), m.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func includedKeys(m *Manifest) map[string]bool {
	out := map[string]bool{}
	for _, r := range m.Resources {
		if r.Included() {
			out[r.Key] = true
		}
	}
	return out
}

// TestReplayDeterministicRoot replays the deterministic page five times in
// fresh incognito profiles of one browser and once in a fresh browser
// process: every root is the same although the banner, the replay script
// and their timestamps differ on every replay.
func TestReplayDeterministicRoot(t *testing.T) {
	e := newEnv(t)
	var first *Manifest
	for i := range 5 {
		m := e.replay(t, testarchive.PageDeterministic)
		mustVerify(t, m)
		if m.Context.Transient {
			t.Fatalf("replay %d transient: %v", i, m.Context.Errors)
		}
		if first == nil {
			first = m
			keys := includedKeys(m)
			for _, k := range []string{testarchive.PageDeterministic, testarchive.Logo, testarchive.Photo, testarchive.Style, testarchive.App, testarchive.JSAdded, testarchive.BG} {
				if !keys[k] {
					t.Errorf("resource %s missing from the composite memento (have %v)", k, keys)
				}
			}
			banners := 0
			for _, r := range m.Resources {
				if strings.Contains(r.URL, "/static/") {
					banners++
					if r.Included() {
						t.Errorf("replay infrastructure %s is part of the root", r.URL)
					}
				}
			}
			if banners < 2 {
				t.Errorf("expected the banner image and replay script to be recorded as excluded, found %d", banners)
			}
			continue
		}
		if m.Root != first.Root {
			t.Fatalf("replay %d: root %s, first replay %s; change: %+v", i, m.Root, first.Root, Compare(first, m))
		}
	}
	// Profiles are fresh: a page that remembers visitors (cookie and
	// localStorage) sees a first visit on every replay.
	st1 := e.replay(t, testarchive.PageState)
	st2 := e.replay(t, testarchive.PageState)
	if !includedKeys(st2)[testarchive.SiteHost+"/r/a.png"] || st1.Root != st2.Root {
		t.Fatalf("the second replay saw state left by the first: %+v", Compare(st1, st2))
	}
	fresh := newEnv(t, func(o *ReplayOptions) { o.FreshBrowser = true })
	// Same archive content on a different port gives different URI-Ms, so
	// compare the fresh-browser replay against its own archive's baseline.
	a := fresh.replay(t, testarchive.PageDeterministic)
	b := fresh.replay(t, testarchive.PageDeterministic)
	if a.Root != b.Root || a.RawRoot != b.RawRoot {
		t.Fatalf("fresh browser processes gave roots %s and %s", a.Root, b.Root)
	}
	if a.RewrittenRoot == first.RewrittenRoot {
		t.Fatal("two archives on different ports gave the same rewritten root: the URI-M host is not hashed")
	}
}

// TestInjectedChanges injects each kind of change the study found and
// checks the class (Header and URI-M apart) and the resource Compare names;
// every replay is kept as evidence, whose WARCs must pass gowarc's strict
// validation and hold the changed bytes.
func TestInjectedChanges(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	replay := func(t *testing.T, name string) (*Manifest, string) {
		m := e.replay(t, testarchive.PageDeterministic, WithEvidence(filepath.Join(dir, name+".evidence")))
		mustVerify(t, m)
		path := saveManifest(t, m, dir, name)
		checkEvidence(t, m, path)
		record(t, name, stripEvidence(m))
		return m, path
	}
	base, basePath := replay(t, "baseline")
	if base.Context.Transient {
		t.Fatalf("baseline transient: %v", base.Context.Errors)
	}
	newImage := []byte("\x89PNG\r\n\x1a\nnot really")
	newScript := []byte("var i = new Image(); i.src = '/js-added.png'; document.body.appendChild(i); var changed = 1;\n")
	cases := []struct {
		name  string
		urir  string
		fault testarchive.Fault
		class Class
		key   string
		// body is the changed entity the raw evidence must hold; head a
		// line the raw evidence's response head must show as added.
		body []byte
		head string
		// a1Same: the Algorithm 1 root stays the same too.
		a1Same bool
	}{
		{"extra resource", testarchive.PageDeterministic, testarchive.Fault{ExtraHTML: `<img src="/extra.png">`}, ClassSet, "http://example.test/extra.png", nil, "", false},
		{"status flip", testarchive.Logo, testarchive.Fault{Status: 404}, ClassStatus, testarchive.Logo, []byte("testarchive: injected status 404\n"), "+status 404", false},
		{"header change", testarchive.Logo, testarchive.Fault{Header: map[string]string{"Server": "OtherServer/2.0"}}, ClassHeader, testarchive.Logo, nil, "+X-Archive-Orig-Server: OtherServer/2.0", false},
		{"redirect, same entity", testarchive.BG, testarchive.Fault{RedirectTo: "20190101000000"}, ClassURIM, testarchive.BG, nil, "+uri " + e.arch.URIM("20190101000000id_", testarchive.BG), false},
		{"changed image", testarchive.Logo, testarchive.Fault{Body: newImage}, ClassRepresentation, testarchive.Logo, newImage, "", false},
		{"changed script", testarchive.App, testarchive.Fault{Body: newScript}, ClassRepresentation, testarchive.App, newScript, "", false},
		{"redirect to another memento", testarchive.Logo, testarchive.Fault{RedirectTo: testarchive.LogoTS2}, ClassURIMRepresentation, testarchive.Logo, nil, "+uri " + e.arch.URIM(testarchive.LogoTS2+"id_", testarchive.Logo), false},
		{"timeout", testarchive.Logo, testarchive.Fault{Hang: true}, ClassTimeout, testarchive.Logo, nil, "", false},
		{"live-web leak", testarchive.PageDeterministic, testarchive.Fault{ExtraHTML: `<script>new Image().src = 'http://live-web' + '.invalid/x.gif';</script>`}, ClassNone, "", nil, "", true},
		// Links through the archive's other host name: the hardened root
		// canonicalises the alias away, the study's Algorithm 1 does not.
		{"archive host alias", testarchive.PageDeterministic, testarchive.Fault{AliasLinks: true}, ClassNone, "", nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.arch.ClearFaults()
			e.arch.Inject(c.urir, c.fault)
			defer e.arch.ClearFaults()
			name := strings.NewReplacer(", ", "-", " ", "-").Replace(c.name)
			m, path := replay(t, name)
			ch := Compare(base, m)
			if ch.Class != c.class {
				t.Fatalf("class %s, want %s; resources %+v notes %v", ch.Class, c.class, ch.Resources, ch.Notes)
			}
			if c.key == "" {
				if len(ch.Resources) != 0 {
					t.Fatalf("unexpected changed resources %+v", ch.Resources)
				}
			} else if len(ch.Resources) != 1 || ch.Resources[0].Key != c.key {
				t.Fatalf("changed resources %+v, want exactly %s", ch.Resources, c.key)
			}
			if a1 := m.Algorithm1.Root == base.Algorithm1.Root; a1 != c.a1Same {
				t.Errorf("Algorithm 1 root unchanged = %v, want %v", a1, c.a1Same)
			}
			if c.head != "" {
				d := diffFor(DiffEvidence(base, basePath, m, path, c.key), CaptureRaw)
				if d == nil || d.Error != "" || !slices.Contains(d.Headers, c.head) {
					t.Fatalf("raw evidence does not show %q: %+v", c.head, d)
				}
			}
			if c.body != nil {
				d := diffFor(DiffEvidence(base, basePath, m, path, c.key), CaptureRaw)
				if d == nil || d.Error != "" || d.FirstDiff < 0 || d.AfterSHA256 != sha256Hex(c.body) || d.BeforeSHA256 == d.AfterSHA256 {
					t.Fatalf("raw evidence does not show the changed bytes: %+v", d)
				}
				if c.key == testarchive.App && !slices.Contains(d.Lines, "+"+strings.TrimSuffix(string(c.body), "\n")) {
					t.Errorf("text diff of the script lacks the new line: %q", d.Lines)
				}
			}
			switch c.name {
			case "timeout":
				if !m.Context.Transient {
					t.Error("a replay with a timed-out resource is not marked transient")
				}
			case "live-web leak":
				if len(m.Context.LiveWeb) == 0 || !strings.Contains(m.Context.LiveWeb[0], "live-web.invalid") {
					t.Errorf("live-web leak not recorded: %v", m.Context.LiveWeb)
				}
			case "archive host alias":
				aliased := false
				for _, r := range m.Resources {
					aliased = aliased || strings.Contains(r.URL, e.arch.AliasHost())
				}
				if !aliased {
					t.Error("the alias fault did not make the page load anything through the alias host")
				}
			}
		})
	}
}

// TestReplayBlocksOtherHosts checks that the browser cannot reach a host
// outside the archive list during replay (here another loopback server,
// i.e. a private-network target) and that the attempt is recorded.
func TestReplayBlocksOtherHosts(t *testing.T) {
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("reached"))
	}))
	defer other.Close()
	e := newEnv(t)
	target := other.URL + "/pixel.gif"
	e.arch.Inject(testarchive.PageDeterministic, testarchive.Fault{ExtraHTML: `<script>var u = '` +
		strings.Replace(target, "http://", "http:/' + '/", 1) + `'; new Image().src = u; fetch(u).catch(function(){}); location.href = u;</script>`})
	m := e.replay(t, testarchive.PageDeterministic)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the browser reached a host outside the archive list %d time(s)", n)
	}
	found := false
	for _, u := range m.Context.LiveWeb {
		found = found || strings.HasPrefix(u, other.URL)
	}
	if !found {
		t.Fatalf("blocked requests to %s not recorded as live-web leakage: %v", other.URL, m.Context.LiveWeb)
	}
	for _, r := range m.Resources {
		if strings.HasPrefix(r.URL, other.URL) && (r.Included() || r.Rewritten.Outcome != OutcomeBlocked) {
			t.Errorf("leaked resource %s: excluded %q outcome %s", r.URL, r.Excluded, r.Rewritten.Outcome)
		}
	}
}

// TestReplayRefusesTargets checks the scope rules for the URI-M itself.
func TestReplayRefusesTargets(t *testing.T) {
	cfg, err := NewConfig(Archive{Name: "a", Hosts: []string{"archive.example", "127.0.0.1:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplayer(ReplayOptions{Config: cfg, ExecPath: "/nonexistent/chromium"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, u := range []string{
		"file:///etc/passwd",
		"data:text/html,<h1>hi</h1>",
		"javascript:alert(1)",
		"http://10.0.0.1/web/20200101000000/http://example.com/",
		"http://127.0.0.1:9999/web/20200101000000/http://example.com/",
		"http://169.254.169.254/latest/meta-data/",
		"http://archive.example.evil.test/web/20200101000000/http://example.com/",
		"http://archive.example/not-a-memento",
	} {
		_, err := r.Replay(context.Background(), u)
		if !errors.Is(err, ErrOutOfScope) {
			t.Errorf("Replay(%q) = %v, want ErrOutOfScope (the browser path must not even be tried)", u, err)
		}
	}
}

// TestReplayRealWARC replays the IANA home page from a real pywb-recorded
// WARC twice and checks the root is stable and the page composite.
func TestReplayRealWARC(t *testing.T) {
	dir := testenv.SharedDir(t)
	e := newEnv(t)
	if _, err := e.arch.LoadWARCFile(filepath.Join(dir, "corpus", "warc", "pywb-iana.warc.gz")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := e.arch.URIM("20140126200624", "http://www.iana.org/")
	a, err := e.rep.Replay(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.rep.Replay(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, a)
	if n := len(includedKeys(a)); n < 5 {
		t.Fatalf("IANA page replayed with %d included resources, want a composite memento", n)
	}
	if a.Root != b.Root {
		t.Fatalf("real WARC replays differ: %+v", Compare(a, b))
	}
}

// TestRawNotRawWarning checks that a raw memento that is really rewritten
// is flagged (the study's "verify raw really is raw").
func TestRawNotRawWarning(t *testing.T) {
	e := newEnv(t)
	m := e.replay(t, testarchive.PageDeterministic)
	if len(m.Context.Warnings) != 0 {
		t.Fatalf("warnings on a clean replay: %v", m.Context.Warnings)
	}
	e.arch.Inject(testarchive.PageDeterministic, testarchive.Fault{RawRewritten: true})
	m2 := e.replay(t, testarchive.PageDeterministic)
	if len(m2.Context.Warnings) != 1 || !strings.Contains(m2.Context.Warnings[0], "does not serve raw") && !strings.Contains(m2.Context.Warnings[0], "may not serve raw") {
		t.Fatalf("warnings %v", m2.Context.Warnings)
	}
	if ch := Compare(m, m2); ch.Class != ClassRepresentation || ch.Resources[0].Key != testarchive.PageDeterministic {
		t.Fatalf("rewritten raw body: %+v", ch)
	}
}

// TestGuidelineChecks injects what the study's guidelines 5-7 warn about
// and checks each is flagged in the manifest and surfaced by Compare: a raw
// (id_) endpoint that serves rewritten content, an answer from an
// archive-side cache, and a soft 404 (which is also dropped from the roots).
func TestGuidelineChecks(t *testing.T) {
	e := newEnv(t)
	base := e.replay(t, testarchive.PageDeterministic)
	if len(base.Checks) != 0 || base.Context.Transient {
		t.Fatalf("clean replay: checks %v, transient %v %v", base.Checks, base.Context.Transient, base.Context.Errors)
	}
	cases := []struct {
		name      string
		urir      string
		fault     testarchive.Fault
		guideline int
		check     string
		sides     []string
		excluded  bool
		class     Class
	}{
		{"raw not raw", testarchive.PageDeterministic, testarchive.Fault{RawRewritten: true}, 5, CheckRawNotRaw, []string{CaptureRaw}, false, ClassRepresentation},
		{"archive-side cache", testarchive.Logo, testarchive.Fault{Cached: true}, 6, CheckArchiveCache, []string{CaptureRewritten, CaptureRaw}, false, ClassNone},
		{"soft 404", testarchive.Logo, testarchive.Fault{SoftNotFound: true}, 7, CheckSoft404, []string{""}, true, ClassSet},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.arch.ClearFaults()
			e.arch.Inject(c.urir, c.fault)
			defer e.arch.ClearFaults()
			m := e.replay(t, testarchive.PageDeterministic, WithEvidence(t.TempDir()))
			mustVerify(t, m)
			var sides []string
			for _, k := range m.Checks {
				if k.Guideline != c.guideline || k.Name != c.check || k.Key != c.urir {
					t.Fatalf("unexpected check %s", k)
				}
				sides = append(sides, k.Side)
			}
			if !slices.Equal(sides, c.sides) {
				t.Fatalf("checks %v, want %s on sides %q", m.Checks, c.check, c.sides)
			}
			for _, r := range m.Resources {
				if r.Key == c.urir && r.Excluded != "" != c.excluded {
					t.Fatalf("%s excluded %q, want excluded=%v", r.Key, r.Excluded, c.excluded)
				}
			}
			ch := Compare(base, m)
			if ch.Class != c.class {
				t.Fatalf("class %s, want %s: %+v", ch.Class, c.class, ch.Resources)
			}
			if len(ch.Checks) != len(c.sides) || ch.Checks[0].When != "after" || ch.Checks[0].Name != c.check {
				t.Fatalf("Compare does not surface the check: %+v", ch.Checks)
			}
			if c.excluded && !strings.Contains(ch.Resources[0].Detail, "guideline 7") {
				t.Fatalf("the dropped resource's change does not say why: %+v", ch.Resources)
			}
		})
	}
}
