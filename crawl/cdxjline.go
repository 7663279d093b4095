package crawl

import (
	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
)

// cdxjLine formats the pywb-style CDXJ line of a capture (without newline).
func cdxjLine(c wayside.Capture) (string, error) {
	l := cdxj.FromCapture(c)
	b := l.Format(nil)
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return string(b), nil
}
