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
	"regexp"
	"time"

	"github.com/wayside-archive/wayside/replay"
)

var (
	bodyRE = regexp.MustCompile(`(?i)</body>`)
	headRE = regexp.MustCompile(`(?i)<head[^>]*>`)
)

// rewrite rewrites text bodies for replay: links to URI-Ms (package
// replay, as Wayside's own archive rewrites them), banner and replay
// script injected into HTML.
func (s *Server) rewrite(r *http.Request, urir, ts, contentType string, body []byte, f Fault) []byte {
	mt, _, _ := mime.ParseMediaType(contentType)
	host := ""
	if f.AliasLinks {
		host = "http://" + s.AliasHost()
	}
	rw, err := replay.NewRewriter(host+"/"+s.coll+"/", ts, urir)
	if err != nil {
		return body
	}
	switch mt {
	case "text/html":
		if f.ExtraHTML != "" {
			body = bodyRE.ReplaceAllLiteral(body, []byte(f.ExtraHTML+"</body>"))
			if !bodyRE.Match(body) {
				body = append(body, f.ExtraHTML...)
			}
		}
		body = rw.HTML(body)
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
		body = rw.CSS(body)
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
