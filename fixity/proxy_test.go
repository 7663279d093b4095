package fixity

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestScopeProxy checks the network-level guard the browser runs behind:
// requests to archive hosts pass, everything else (plain HTTP and CONNECT
// tunnels) is refused before any connection is made.
func TestScopeProxy(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	defer other.Close()
	arch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "archived") }))
	defer arch.Close()
	tlsOther := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	defer tlsOther.Close()
	cfg, err := NewConfig(Archive{Hosts: []string{strings.TrimPrefix(arch.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := startScopeProxy(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	pu, _ := url.Parse("http://" + p.addr())
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: tlsOther.Client().Transport.(*http.Transport).TLSClientConfig}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}

	resp, err := c.Get(arch.URL + "/web/20200101000000/http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "archived" {
		t.Fatalf("archive through proxy: %d %q", resp.StatusCode, b)
	}
	resp, err = c.Get(other.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("other host through proxy: %d", resp.StatusCode)
	}
	if _, err := c.Get(tlsOther.URL + "/x"); err == nil {
		t.Fatal("CONNECT to a host outside the list succeeded")
	}
	if otherHits.Load() != 0 || p.blocked.Load() != 2 {
		t.Fatalf("other hosts reached %d times, proxy refused %d", otherHits.Load(), p.blocked.Load())
	}
}
