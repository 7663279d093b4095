package migrate

import (
	"strings"
	"testing"
)

func TestNewURI(t *testing.T) {
	taken := map[string]bool{"http://h/img/b.png": true, "http://h/img/b.bmp.png": true}
	is := func(s string) bool { return taken[s] }
	for _, c := range [][3]string{
		{"http://h/img/a.bmp", "png", "http://h/img/a.png"},
		{"http://h/img/a.bmp?v=2", "png", "http://h/img/a.png?v=2"},
		{"http://h/img/noext", "png", "http://h/img/noext.png"},
		{"http://h/img/", "png", "http://h/img/index.png"},
		{"http://h", "png", "http://h/index.png"},
		{"http://h/img/x.png", "png", "http://h/img/x.png"},   // a BMP served as x.png
		{"http://h/d/x.PDF", "pdf", "http://h/d/x.PDF"},       // PDF to PDF/A
		{"http://h/img/b.bmp", "png", "http://h/img/b-2.png"}, // b.png and b.bmp.png are other captures
		{"http://h/v/clip.flv", "webm", "http://h/v/clip.webm"},
	} {
		if got := NewURI(c[0], c[1], is); got != c[2] {
			t.Errorf("NewURI(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
}

func TestRewriteLinks(t *testing.T) {
	r := Renames{}
	r.Add("http://h/img/a.bmp", "http://h/img/a.png")
	r.Add("http://h/img/b c.tif", "http://h/img/b%20c.png")
	r.Add("http://h/css/bg.bmp?x=1&y=2", "http://h/css/bg.png?x=1&y=2")
	r.Add("http://h/old.css", "http://h/old.x.css") // renames need not be images
	page := `<!DOCTYPE html><html><head><link rel=stylesheet href="/old.css"><style>
body { background: url('img/a.bmp') } @import "old.css"; .k{background:url(/img/nothere.bmp)}
</style></head><body>
<IMG SRC=img/a.bmp alt="img/a.bmp"> <img src="http://h/img/a.bmp#frag"> <img src='//h/img/a.bmp'>
<img srcset="img/a.bmp 1x, img/b%20c.tif 2x,other.bmp 3x"> <img src="../img/a.bmp"> <img src="HTTP://H:80/img/a.bmp">
<div style="background:url(&quot;/css/bg.bmp?x=1&amp;y=2&quot;)">x</div>
<a href="img/a.bmpx">not it</a> <p>img/a.bmp in text</p><script>var s="img/a.bmp";</script>
</body></html>`
	want := `<!DOCTYPE html><html><head><link rel=stylesheet href="/old.x.css"><style>
body { background: url('img/a.png') } @import "old.x.css"; .k{background:url(/img/nothere.bmp)}
</style></head><body>
<IMG SRC=img/a.png alt="img/a.bmp"> <img src="http://h/img/a.png#frag"> <img src='//h/img/a.png'>
<img srcset="img/a.png 1x, img/b%20c.png 2x,other.bmp 3x"> <img src="../img/a.png"> <img src="HTTP://H:80/img/a.png">
<div style="background:url(&quot;/css/bg.png?x=1&amp;y=2&quot;)">x</div>
<a href="img/a.bmpx">not it</a> <p>img/a.bmp in text</p><script>var s="img/a.bmp";</script>
</body></html>`
	got, changed := RewriteLinks([]byte(page), "html", "http://h/page.html", r)
	if string(got) != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	if len(changed) != 11 {
		t.Errorf("%d references changed, want 11: %q", len(changed), changed)
	}
	// A <base href> moves the base; nothing to change leaves the bytes.
	got, _ = RewriteLinks([]byte(`<base href="http://h/img/"><img src="a.bmp">`), "html", "http://h/x/y.html", r)
	if string(got) != `<base href="http://h/img/"><img src="a.png">` {
		t.Errorf("with <base>: %s", got)
	}
	in := []byte(`<img src="zzz.bmp">`)
	if got, ch := RewriteLinks(in, "html", "http://h/", r); &got[0] != &in[0] || ch != nil {
		t.Errorf("unchanged document copied or changed: %s %v", got, ch)
	}
	css := `@import url("old.css"); a{background:url(img/a.bmp)} b{background:url( "img/a.bmp" )}`
	got, _ = RewriteLinks([]byte(css), "css", "http://h/style.css", r)
	if w := `@import url("old.x.css"); a{background:url(img/a.png)} b{background:url( "img/a.png" )}`; string(got) != w {
		t.Errorf("css:\n%s\nwant\n%s", got, w)
	}
	if !strings.Contains(strings.Join(changed, "\n"), "http://h/img/a.bmp → http://h/img/a.png") {
		t.Errorf("changes: %q", changed)
	}
}
