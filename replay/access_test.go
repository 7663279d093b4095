package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
)

func mustTS(t *testing.T, ts string) time.Time {
	t.Helper()
	v, err := ParseTimestamp(ts, false)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type accessCase struct {
	url, ts, point string
	want           Access
}

func checkRules(t *testing.T, rs *Rules, cases []accessCase) {
	t.Helper()
	now := mustTS(t, "20260101000000")
	for _, c := range cases {
		ts := c.ts
		if ts == "" {
			ts = "20200101000000"
		}
		key := captureindex.URLKey(c.url)
		got := rs.Decide(key, mustTS(t, ts), c.point, now)
		if got.Access != c.want {
			t.Errorf("%s (%s) at %s, point %q: %s (rule %v), want %s", c.url, key, ts, c.point, got.Access, got.Rule, c.want)
		}
		// The per-request checker agrees with Decide.
		chk := rs.Checker(c.point)
		chk.now = now
		if d := chk.Decide(key, mustTS(t, ts)); d.Access != got.Access {
			t.Errorf("%s: checker %s, Decide %s", c.url, d.Access, got.Access)
		}
	}
}

// TestRulesPywbDocumentedExample reads the .aclj of pywb's access control
// manual and checks the outcomes the manual states, with pywb's meanings
// (exclude: 404 as if absent; block: 451).
func TestRulesPywbDocumentedExample(t *testing.T) {
	rs, err := LoadRules("testdata/access/pywb-doc.aclj", "")
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, rs, []accessCase{
		{url: "http://httpbin.org/anything/something", want: Allow},
		{url: "http://httpbin.org/", want: Block},
		{url: "http://httpbin.org/anything", want: Exclude},
		{url: "http://httpbin.org/anything/else", want: Exclude},
		{url: "http://httpbin.org/get?a=1", want: Block},
		{url: "http://example.com/", want: Allow},
		{url: "http://example.org/", want: Allow},
	})
}

// TestRulesPywbSampleArchive reads pywb's sample_archive/access/pywb.aclj
// and expects what pywb's tests expect of it.
func TestRulesPywbSampleArchive(t *testing.T) {
	rs, err := LoadRules("testdata/access/pywb-sample.aclj", "")
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, rs, []accessCase{
		{url: "http://www.iana.org/about/", want: Block},
		{url: "http://www.iana.org/_css/2013.1/fonts/opensans-semibold.ttf", want: Allow},
		{url: "http://www.iana.org/_css/2013.1/screen.css", want: Exclude},
		{url: "http://www.iana.org/", want: Exclude},
		{url: "http://example.org/?example=1", want: Block},
		{url: "http://example.org/", want: Allow},
	})
}

// TestRulesUsersAndDates: user (access point) rules and before dates, from
// pywb's sample files.
func TestRulesUsersAndDates(t *testing.T) {
	rs, err := LoadRules("testdata/access/user-default.aclj", "")
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, rs, []accessCase{
		{url: "http://example.com/", point: "staff", want: Block},
		{url: "http://example.com/", point: "staff2", want: Allow},
		{url: "http://example.com/", point: "public", want: Allow},
	})
	rs, err = LoadRules("testdata/access/before.aclj", Block)
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, rs, []accessCase{
		{url: "http://www.iana.org/domains/arpa", ts: "20140126000000", want: Allow},
		{url: "http://www.iana.org/domains/arpa", ts: "20140128000000", want: Block},
		{url: "http://www.iana.org/domains/root", ts: "20140101000000", want: Block},
		{url: "http://www.iana.org/", ts: "20140101000000", want: Allow},
		{url: "http://www.iana.org/", ts: "20150101000000", want: Block}, // the default
	})
}

// TestRulesSpecificity: the longest key wins, an exact rule beats a prefix
// rule of the same key, an access point's rule beats the general one, and
// an embargo hides only captures newer than its period.
func TestRulesSpecificity(t *testing.T) {
	src := `com,example)/ - {"access": "exclude"}
com,example)/open - {"access": "allow"}
com,example)/open/secret### - {"access": "block", "message": "withdrawn"}
com,example)/room - {"access": "allow", "user": "reading-room"}
com,example)/room - {"access": "block"}
org,embargoed) - {"access": "exclude", "newer": {"years": 1}}
org,embargoed) - {"access": "allow", "user": "reading-room"}
`
	rules, err := ParseACLJ(strings.NewReader(src), "t.aclj")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRules(rules, "")
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, rs, []accessCase{
		{url: "http://example.com/", want: Exclude},
		{url: "http://example.com/open/page", want: Allow},
		{url: "http://example.com/open/secret", want: Block},
		{url: "http://example.com/open/secret/below", want: Allow},
		{url: "http://example.com/room/1", point: "public", want: Block},
		{url: "http://example.com/room/1", point: "reading-room", want: Allow},
		{url: "http://embargoed.org/a", ts: "20251201000000", point: "public", want: Exclude},
		{url: "http://embargoed.org/a", ts: "20240101000000", point: "public", want: Allow},
		{url: "http://embargoed.org/a", ts: "20251201000000", point: "reading-room", want: Allow},
	})
	d := rs.Decide(captureindex.URLKey("http://example.com/open/secret"), time.Now(), "", time.Now())
	if d.Reason() != "withdrawn" {
		t.Errorf("reason %q, want the rule's message", d.Reason())
	}
	// Written back as .aclj and read again: the same rules.
	var buf bytes.Buffer
	if err := WriteACLJ(&buf, rs.List()); err != nil {
		t.Fatal(err)
	}
	again, err := ParseACLJ(&buf, "again")
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(rules) {
		t.Fatalf("%d rules read back, want %d:\n%s", len(again), len(rules), buf.String())
	}
}

// TestRulesOutbackCDX reads the rule of OutbackCDX's access control
// documentation (policy 2: staff only, an embargo of one month).
func TestRulesOutbackCDX(t *testing.T) {
	rs, err := LoadRules("testdata/access/outbackcdx.json", "")
	if err != nil {
		t.Fatal(err)
	}
	recent, old := "20251215000000", "20250101000000"
	checkRules(t, rs, []accessCase{
		{url: "http://example.org/", ts: recent, point: "public", want: Block},
		{url: "http://www.sub.example.org/x", ts: recent, point: "public", want: Block},
		{url: "http://example.orgs.com/", ts: recent, point: "public", want: Allow},
		{url: "http://example.org/", ts: recent, point: "staff", want: Allow},
		{url: "http://example.org/", ts: old, point: "public", want: Allow},
		{url: "http://example.com/foo/bar", ts: recent, point: "public", want: Block},
		{url: "http://example.com/other", ts: recent, point: "public", want: Allow},
		{url: "http://example.net/bad.html", ts: recent, point: "public", want: Block},
		{url: "http://example.net/bad.html2", ts: recent, point: "public", want: Allow},
	})
}

func TestRulesErrorsNameTheLine(t *testing.T) {
	for _, src := range []string{
		"com,example)/ - {\"access\": \"maybe\"}\n",
		"com,example)/ - {\"access\": \"allow\"\n",
		"com,example)/\n",
		"com,example)/ - {\"access\": \"allow\", \"before\": \"2020x\"}\n",
	} {
		_, err := ParseACLJ(strings.NewReader("# c\n"+src), "f.aclj")
		if err == nil || !strings.Contains(err.Error(), "f.aclj line 2") {
			t.Errorf("%q: %v, want an error naming f.aclj line 2", src, err)
		}
	}
	if _, err := ParsePeriod("1q"); err == nil {
		t.Error("period 1q accepted")
	}
	if p, err := ParsePeriod("1y6m"); err != nil || p != (Period{Years: 1, Months: 6}) {
		t.Errorf("1y6m: %v %v", p, err)
	}
}

func TestLoadRulesDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"pywb-doc.aclj", "outbackcdx.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/access", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not rules"), 0o644)
	rs, err := LoadRules(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, rs, []accessCase{
		{url: "http://httpbin.org/", want: Block},
		{url: "http://example.net/bad.html", ts: "20251215000000", point: "public", want: Block},
	})
}
