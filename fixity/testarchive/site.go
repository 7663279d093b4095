package testarchive

// The built-in site, recorded into testdata/site.warc.gz by
// `go test -run TestBuiltinWARC -update`. It is small and covers the paths
// the fixity tests need.

// SiteHost is the original host of the built-in site.
const SiteHost = "http://example.test"

// Built-in site URI-Rs and timestamps.
const (
	// SiteTS is the timestamp of the built-in pages.
	SiteTS = "20200101000000"
	// PageDeterministic embeds a stylesheet (with a background image), two
	// images (one redirected to its closest memento), a script, and an
	// image added by that script.
	PageDeterministic = SiteHost + "/"
	// PageRandom picks one of two images with Math.random.
	PageRandom = SiteHost + "/random.html"
	// PageLeak loads an image and tries to reach the live web.
	PageLeak = SiteHost + "/leak.html"
	// PageState loads /r/a.png on a browser profile's first visit and
	// /r/b.png when a cookie or localStorage from an earlier visit is
	// still there: it shows whether replays really get fresh profiles.
	PageState = SiteHost + "/state.html"
	// Logo is embedded by PageDeterministic; it has a second, different
	// memento at LogoTS2.
	Logo    = SiteHost + "/logo.png"
	LogoTS2 = "20200615000000"
	// Photo's only memento is 12 hours before SiteTS, so replays always
	// reach it through a redirect.
	Photo   = SiteHost + "/images/photo.png"
	PhotoTS = "20191231120000"
	// Style is the stylesheet of PageDeterministic, App its script and
	// JSAdded the image App adds.
	Style   = SiteHost + "/style.css"
	App     = SiteHost + "/app.js"
	JSAdded = SiteHost + "/js-added.png"
	BG      = SiteHost + "/bg.png"
)

type siteRecord struct {
	urir, ts, ctype string
	status          int
	body            []byte
}

func siteRecords() []siteRecord {
	html := "text/html; charset=utf-8"
	return []siteRecord{
		{PageDeterministic, SiteTS, html, 200, []byte(`<!doctype html>
<html><head><title>Example</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>An archived page</h1>
<img src="/logo.png" alt="logo"> <img src="images/photo.png" alt="photo">
<script src="/app.js"></script>
</body></html>
`)},
		{Style, SiteTS, "text/css", 200, []byte("body { background: url(bg.png) repeat; }\nh1 { color: #333; }\n")},
		{App, SiteTS, "application/javascript", 200, []byte("var i = new Image(); i.src = '/js-added.png'; document.body.appendChild(i);\n")},
		{Logo, SiteTS, "image/png", 200, pngBytes(200, 30, 30)},
		{Logo, LogoTS2, "image/png", 200, pngBytes(30, 200, 30)},
		{Photo, PhotoTS, "image/png", 200, pngBytes(10, 10, 200)},
		{BG, SiteTS, "image/png", 200, pngBytes(240, 240, 240)},
		{JSAdded, SiteTS, "image/png", 200, pngBytes(1, 2, 3)},
		{PageRandom, SiteTS, html, 200, []byte(`<!doctype html>
<html><head><title>Random</title></head>
<body><h1>A page that picks an image at random</h1>
<script>
var pick = Math.random() < 0.5 ? '/r/a.png' : '/r/b.png';
var img = new Image(); img.src = pick; document.body.appendChild(img);
</script>
</body></html>
`)},
		{PageState, SiteTS, html, 200, []byte(`<!doctype html>
<html><head><title>Stateful</title></head>
<body><h1>A page that remembers its visitors</h1>
<script>
var seen = localStorage.getItem('visited') || document.cookie.indexOf('visited=1') >= 0;
localStorage.setItem('visited', '1'); document.cookie = 'visited=1; max-age=86400; path=/';
var img = new Image(); img.src = seen ? '/r/b.png' : '/r/a.png'; document.body.appendChild(img);
</script>
</body></html>
`)},
		{SiteHost + "/r/a.png", SiteTS, "image/png", 200, pngBytes(255, 0, 0)},
		{SiteHost + "/r/b.png", SiteTS, "image/png", 200, pngBytes(0, 0, 255)},
		{PageLeak, SiteTS, html, 200, []byte(`<!doctype html>
<html><head><title>Leaky</title></head>
<body><h1>A page whose script reaches the live web</h1>
<img src="/logo.png">
<script>
var live = new Image(); live.src = 'http://live-web' + '.invalid/pixel.gif'; document.body.appendChild(live);
fetch('https://api.live' + '.invalid/data.json').catch(function () {});
</script>
</body></html>
`)},
	}
}
