package fixity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRawFetchStaysInScope checks that the raw client follows redirects
// within the archive list only, and hashes the body it finally gets.
func TestRawFetchStaysInScope(t *testing.T) {
	var outside atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { outside.Add(1) }))
	defer other.Close()
	arch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "/leak"):
			w.Header().Set("Location", other.URL+"/x")
			w.WriteHeader(http.StatusFound)
		case strings.Contains(r.URL.Path, "/hop"):
			w.Header().Set("Location", "/web/20200101000000id_/http://example.com/final")
			w.WriteHeader(http.StatusMovedPermanently)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("X-Archive-Orig-Server", "S")
			w.Write([]byte("<p>raw</p>"))
		}
	}))
	defer arch.Close()
	cfg, err := NewConfig(Archive{Hosts: []string{strings.TrimPrefix(arch.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplayer(ReplayOptions{Config: cfg, RawTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	p := r.rawFetch(ctx, r.client, arch.URL+"/web/20200101000000id_/http://example.com/leak")
	if p.Outcome != OutcomeBlocked || outside.Load() != 0 {
		t.Fatalf("redirect out of scope: outcome %s, outside hits %d", p.Outcome, outside.Load())
	}
	p = r.rawFetch(ctx, r.client, arch.URL+"/web/20200101000000id_/http://example.com/hop")
	if p.Outcome != OutcomeOK || p.Status != 200 || len(p.Redirects) != 1 || p.Redirects[0].Status != 301 ||
		!strings.HasSuffix(p.FinalURIM, "/web/20200101000000/http://example.com/final") || p.Body != BodyHashed || p.BodyLength != 10 {
		t.Fatalf("in-scope redirect: %+v", p)
	}
	if p.Suspect != "" {
		t.Fatalf("raw body flagged: %s", p.Suspect)
	}
}
