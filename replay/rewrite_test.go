package replay

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzRewriteHTML checks that the HTML rewriter never panics, keeps
// documents without links byte for byte, and is idempotent: rewriting a
// rewritten page changes nothing (every link already points into the
// archive).
func FuzzRewriteHTML(f *testing.F) {
	for _, s := range []string{
		`<a href="x.html">x</a>`, `<img src=a.png srcset="a.png 1x, b.png 2x">`, `<style>a{background:url(b.png)}</style>`,
		`<base href="http://other/"><a href=y>`, `<!-- <a href="c"> -->`, `<script>"<a href=d>"</script>`, `<a href='e`, `<p style="x:url('f')">`,
		`<meta http-equiv=refresh content="0;url=g">`, `<<a href=h>>`, `<a href="javascript:i()">`, "<a\nhref\n=\nj>",
	} {
		f.Add(s)
	}
	rw, _ := NewRewriter("/web/", "20240501120000", "http://example.com/dir/page.html")
	f.Fuzz(func(t *testing.T, s string) {
		once := rw.HTML([]byte(s))
		if twice := rw.HTML(once); !bytes.Equal(once, twice) {
			t.Fatalf("not idempotent:\n%q\n%q\n%q", s, once, twice)
		}
		if !strings.ContainsAny(s, "<") && string(once) != s {
			t.Fatalf("text without tags changed: %q → %q", s, once)
		}
	})
}

func TestParseTimestamp(t *testing.T) {
	for _, tc := range []struct {
		in       string
		up       bool
		want     string
		wantFail bool
	}{
		{"2014", false, "20140101000000", false},
		{"2014", true, "20141231235959", false},
		{"201402", true, "20140228235959", false},
		{"20160229", true, "20160229235959", false},
		{"20150229", false, "", true},
		{"201413", false, "", true},
		{"2014010124", false, "", true},
		{"20140101000000", false, "20140101000000", false},
		{"", false, "", true},
		{"123456789012345", false, "", true},
		{"2014x", false, "", true},
	} {
		got, err := ParseTimestamp(tc.in, tc.up)
		if (err != nil) != tc.wantFail || (err == nil && got.Format("20060102150405") != tc.want) {
			t.Errorf("ParseTimestamp(%q, %v) = %v, %v; want %s (fail %v)", tc.in, tc.up, got, err, tc.want, tc.wantFail)
		}
	}
	if _, err := ParseAcceptDatetime("Mon, 27 Jan 2014 12:00:00 GMT"); err != nil {
		t.Error(err)
	}
	if ts, err := ParseAcceptDatetime("Monday, 27-Jan-14 12:00:00 GMT"); err != nil || !ts.Equal(time.Date(2014, 1, 27, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("RFC 850 date: %v %v", ts, err)
	}
}
