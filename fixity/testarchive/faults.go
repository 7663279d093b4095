package testarchive

import (
	"fmt"
	"html"
	"net/http"
	"strings"
)

// guidelineFaults applies the faults the fixity study's guidelines 6 and 7
// are about to an answer whose headers are already in out: an answer from
// an archive-side cache (Cached) and a soft 404 (SoftNotFound). It returns
// the status and body to send.
func guidelineFaults(f Fault, out http.Header, urir string, status int, body []byte) (int, []byte) {
	if f.Cached {
		// A cache in front of the archive that serves a stored copy and
		// ignores the client's Cache-Control: no-cache.
		out.Set("Age", "86400")
		out.Set("X-Cache", "HIT from testarchive-cache")
		out.Set("Via", "1.1 testarchive-cache")
	}
	if f.SoftNotFound {
		for k := range out {
			if strings.HasPrefix(k, "X-Archive-Orig-") {
				out.Del(k)
			}
		}
		out.Set("Content-Type", "text/html; charset=utf-8")
		body = []byte(fmt.Sprintf("<!doctype html>\n<html><head><title>Not found</title></head><body><h1>Hrm.</h1><p>This archive has not saved %s.</p></body></html>\n", html.EscapeString(urir)))
		status = http.StatusOK
	}
	return status, body
}
