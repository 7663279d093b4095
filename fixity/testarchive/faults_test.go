package testarchive

import (
	"net/http"
	"strings"
	"testing"
)

func TestGuidelineFaults(t *testing.T) {
	s := newServer(t)
	u := s.URIM(SiteTS+"im_", Logo)
	s.Inject(Logo, Fault{Cached: true})
	resp, _ := get(t, u, "Cache-Control", "no-cache", "Pragma", "no-cache")
	if resp.Header.Get("Age") != "86400" || !strings.Contains(resp.Header.Get("X-Cache"), "HIT") || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("cached answer: %v", resp.Header)
	}
	s.Inject(Logo, Fault{SoftNotFound: true})
	for _, mod := range []string{"im_", "id_"} {
		resp, body := get(t, s.URIM(SiteTS+mod, Logo))
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "has not saved "+Logo) || resp.Header.Get("X-Archive-Orig-Server") != "" {
			t.Fatalf("soft 404 (%s): %d %v\n%s", mod, resp.StatusCode, resp.Header, body)
		}
	}
	s.ClearFaults()
	if resp, _ := get(t, u); resp.Header.Get("Age") != "" || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("after ClearFaults: %v", resp.Header)
	}
}
