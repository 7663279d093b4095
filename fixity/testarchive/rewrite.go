package testarchive

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

var (
	attrRE = regexp.MustCompile(`(?is)<([a-z0-9]+)\b([^>]*?)\s(src|href)\s*=\s*("([^"]*)"|'([^']*)')`)
	cssURL = regexp.MustCompile(`(?i)url\(\s*(['"]?)([^'")]+)(['"]?)\s*\)`)
	bodyRE = regexp.MustCompile(`(?i)</body>`)
	headRE = regexp.MustCompile(`(?i)<head[^>]*>`)
)

// rewrite rewrites text bodies for replay: links to URI-Ms, banner and
// replay script injected into HTML.
func (s *Server) rewrite(r *http.Request, urir, ts, contentType string, body []byte, f Fault) []byte {
	mt, _, _ := mime.ParseMediaType(contentType)
	host := ""
	if f.AliasLinks {
		host = "http://" + s.AliasHost()
	}
	base, err := url.Parse(urir)
	if err != nil {
		return body
	}
	toURIM := func(ref, mod string) string {
		ref = strings.TrimSpace(ref)
		low := strings.ToLower(ref)
		if ref == "" || strings.HasPrefix(ref, "#") || strings.HasPrefix(low, "javascript:") ||
			strings.HasPrefix(low, "data:") || strings.HasPrefix(low, "mailto:") || strings.HasPrefix(low, "blob:") {
			return ref
		}
		abs, err := base.Parse(ref)
		if err != nil {
			return ref
		}
		return fmt.Sprintf("%s/%s/%s%s/%s", host, s.coll, ts, mod, abs)
	}
	switch mt {
	case "text/html":
		if f.ExtraHTML != "" {
			body = bodyRE.ReplaceAllLiteral(body, []byte(f.ExtraHTML+"</body>"))
			if !bodyRE.Match(body) {
				body = append(body, f.ExtraHTML...)
			}
		}
		body = attrRE.ReplaceAllFunc(body, func(m []byte) []byte {
			sub := attrRE.FindSubmatch(m)
			tag := strings.ToLower(string(sub[1]))
			val := string(sub[5])
			q := `"`
			if len(sub[6]) > 0 || (len(sub[4]) > 0 && sub[4][0] == '\'') {
				val, q = string(sub[6]), `'`
			}
			mod := ""
			switch tag {
			case "img", "source", "video", "audio":
				mod = "im_"
			case "script":
				mod = "js_"
			case "link":
				mod = "cs_"
			case "iframe", "frame":
				mod = "if_"
			}
			prefix := m[:len(m)-len(sub[4])]
			return append(append([]byte{}, prefix...), []byte(q+toURIM(val, mod)+q)...)
		})
		body = cssURL.ReplaceAllFunc(body, func(m []byte) []byte {
			sub := cssURL.FindSubmatch(m)
			return []byte("url(" + string(sub[1]) + toURIM(string(sub[2]), "im_") + string(sub[3]) + ")")
		})
		banner := fmt.Sprintf(`<div id="testarchive-banner" style="font:12px sans-serif">Archived page, replayed %s <img src="/static/banner.png?r=%d" width="8" height="8"></div>`,
			time.Now().Format(time.RFC3339Nano), rand.Int64())
		script := []byte(`<script src="/static/replay.js"></script>`)
		if loc := headRE.FindIndex(body); loc != nil {
			body = append(body[:loc[1]:loc[1]], append(script, body[loc[1]:]...)...)
		} else {
			body = append(script, body...)
		}
		if loc := bodyRE.FindIndex(body); loc != nil {
			body = append(body[:loc[0]:loc[0]], append([]byte(banner), body[loc[0]:]...)...)
		} else {
			body = append(body, banner...)
		}
	case "text/css":
		body = cssURL.ReplaceAllFunc(body, func(m []byte) []byte {
			sub := cssURL.FindSubmatch(m)
			return []byte("url(" + string(sub[1]) + toURIM(string(sub[2]), "im_") + string(sub[3]) + ")")
		})
		body = append([]byte(fmt.Sprintf("/* testarchive: replayed at %s */\n", time.Now().Format(time.RFC3339Nano))), body...)
	case "application/javascript", "text/javascript", "application/x-javascript":
		body = append([]byte(fmt.Sprintf("/* testarchive: replayed at %s */\n", time.Now().Format(time.RFC3339Nano))), body...)
	}
	return body
}

// pngBytes returns a 4x4 PNG of one colour.
func pngBytes(r, g, b uint8) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := 0; x < 4; x++ {
		for y := 0; y < 4; y++ {
			img.Set(x, y, color.RGBA{r, g, b, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
