package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
)

const apiTestConfig = `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
  cdx_token: ` + testCDXToken + `
  allowed_origins: ["http://127.0.0.1:9999"]
limits:
  max_body_bytes: 4096
  max_batch: 10
`

// TestE2EDedupAPI runs claim → commit → lookup → duplicate, pending and
// cancel, single and batch, through the Go client over the Unix socket.
func TestE2EDedupAPI(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, apiTestConfig)
	ctx := context.Background()
	c := d.client
	dg := "sha1:" + sha1B32([]byte("some payload"))
	hexKey := "sha1:" + strings.ToLower("d8a0cb0aa3fa1dd8a8bb1d1e0d2d3b7c2a20f0e6") // any hex form is normalised

	r, err := c.Claim(ctx, api.Key{Digest: dg})
	if err != nil || r.State != "claimed" || r.Ticket == nil {
		t.Fatalf("claim: %+v %v", r, err)
	}
	// A second claimer sees the pending claim and must write a full response.
	r2, err := c.Claim(ctx, api.Key{Digest: dg})
	if err != nil || r2.State != "pending" || r2.Ticket != nil {
		t.Fatalf("second claim: %+v %v", r2, err)
	}
	if _, found, _ := c.Lookup(ctx, api.Key{Digest: dg}); found {
		t.Fatal("a pending claim is visible to Lookup")
	}
	orig := dedupindex.Original{TargetURI: "http://example.com/x", Date: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		RecordID: "<urn:uuid:11111111-2222-4333-8444-555555555555>", File: "x.warc.gz", Offset: 100, Length: 900, PayloadLength: 12, Status: 200}
	if err := c.Commit(ctx, *r.Ticket, orig); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, *r.Ticket, orig); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Errorf("second commit of a ticket: %v, want ErrNoClaim (409)", err)
	}
	o, found, err := c.Lookup(ctx, api.Key{Digest: dg})
	if err != nil || !found || o.RecordID != orig.RecordID {
		t.Fatalf("lookup: %+v %v %v", o, found, err)
	}
	r3, err := c.Claim(ctx, api.Key{Digest: dg})
	if err != nil || r3.State != "duplicate" || r3.Original == nil || r3.Original.RecordID != orig.RecordID {
		t.Fatalf("claim after commit: %+v %v", r3, err)
	}
	// Cancel.
	r4, err := c.Claim(ctx, api.Key{Digest: hexKey})
	if err != nil || r4.State != "claimed" {
		t.Fatalf("claim hex: %+v %v", r4, err)
	}
	if err := c.Cancel(ctx, *r4.Ticket); err != nil {
		t.Fatal(err)
	}
	if r5, _ := c.Claim(ctx, api.Key{Digest: hexKey}); r5.State != "claimed" {
		t.Errorf("claim after cancel: %+v", r5)
	} else {
		c.Cancel(ctx, *r5.Ticket)
	}
	// Batches.
	keys := []api.Key{{Digest: dg}, {Digest: "sha1:" + sha1B32([]byte("b1"))}, {Digest: "sha1:" + sha1B32([]byte("b2"))}}
	lr, err := c.LookupBatch(ctx, keys)
	if err != nil || !lr[0].Found || lr[1].Found || lr[2].Found {
		t.Fatalf("lookup batch: %+v %v", lr, err)
	}
	cr, err := c.ClaimBatch(ctx, keys)
	if err != nil || cr[0].State != "duplicate" || cr[1].State != "claimed" || cr[2].State != "claimed" {
		t.Fatalf("claim batch: %+v %v", cr, err)
	}
	o1 := orig
	o1.RecordID, o1.TargetURI = "<urn:uuid:11111111-2222-4333-8444-000000000001>", "http://example.com/b1"
	ops, err := c.CommitBatch(ctx, []api.Commit{{Ticket: *cr[1].Ticket, Original: o1}})
	if err != nil || !ops[0].OK {
		t.Fatalf("commit batch: %+v %v", ops, err)
	}
	ops, err = c.CancelBatch(ctx, []dedupindex.Ticket{*cr[2].Ticket, *cr[2].Ticket})
	if err != nil || !ops[0].OK || ops[1].OK || ops[1].Code != 409 {
		t.Fatalf("cancel batch: %+v %v", ops, err)
	}
	m, _ := c.Metrics(ctx)
	for _, want := range []string{`wayside_claims_total{state="claimed"} 5`, `wayside_claims_total{state="duplicate"} 2`, `wayside_claims_total{state="pending"} 1`, "wayside_bytes_saved_total 24", "wayside_commits_total 2"} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
	// Persisted across a graceful restart.
	if err := d.term(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.log())
	}
	if _, err := os.Stat(d.sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind after SIGTERM: %v", err)
	}
	d.start()
	if o, found, err := d.client.Lookup(ctx, api.Key{Digest: "sha1:" + sha1B32([]byte("b1"))}); err != nil || !found || o.RecordID != o1.RecordID {
		t.Errorf("after restart: %+v %v %v", o, found, err)
	}
}

// TestE2EBadRequests: every bad request gets a 4xx with a JSON error and
// the daemon keeps serving.
func TestE2EBadRequests(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, apiTestConfig)
	fi, err := os.Stat(d.sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	// ExpectContinueTimeout: a request sent with "Expect: 100-continue"
	// (the oversized body below, as well-behaved clients send large bodies)
	// waits for the server's answer before sending its body. The daemon
	// refuses an oversized body from its Content-Length alone and closes the
	// connection at once (a refused client holds no slot), so a client that
	// is still writing its body can see the close before the 413; waiting
	// for 100 Continue avoids that race. The timeout is only an upper bound.
	unixHC := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	}, ExpectContinueTimeout: time.Minute}}
	tcpHC := &http.Client{}
	auth := "Bearer " + testToken
	big := `{"digest":"` + strings.Repeat("A", 5000) + `"}`
	cases := []struct {
		name   string
		hc     *http.Client
		method string
		url    string
		body   string
		hdr    map[string]string
		code   int
		errSub string
	}{
		{"bad digest", unixHC, "POST", "http://x/v1/lookup", `{"digest":"sha1:nope"}`, nil, 400, "digest"},
		{"bad digest GET", unixHC, "GET", "http://x/v1/lookup?digest=zzz", "", nil, 400, "digest"},
		{"missing digest", unixHC, "POST", "http://x/v1/claim", `{}`, nil, 400, "digest: missing"},
		{"batch item named", unixHC, "POST", "http://x/v1/lookup/batch", `{"keys":[{"digest":"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},{"digest":"x"}]}`, nil, 400, "keys[1].digest"},
		{"batch too big", unixHC, "POST", "http://x/v1/lookup/batch", `{"keys":[` + strings.Repeat(`{"digest":"x"},`, 10) + `{"digest":"x"}]}`, nil, 413, "max_batch"},
		{"bad json", unixHC, "POST", "http://x/v1/claim", `{"digest":`, nil, 400, "bad JSON"},
		{"unknown field", unixHC, "POST", "http://x/v1/claim", `{"digest":"x","bogus":1}`, nil, 400, "bogus"},
		{"oversized body", unixHC, "POST", "http://x/v1/lookup", big, map[string]string{"Expect": "100-continue"}, 413, "exceeds"},
		{"form content type", unixHC, "POST", "http://x/v1/claim", `{}`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"unknown route", unixHC, "GET", "http://x/v2/nothing", "", nil, 404, "no such route"},
		{"wrong method", unixHC, "DELETE", "http://x/v1/claim", "", nil, 405, "not allowed"},
		{"commit without record", unixHC, "POST", "http://x/v1/commit", `{"ticket":{"key":{"digest":"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},"token":"t"},"original":{}}`, nil, 400, "record_id"},
		{"commit unknown ticket", unixHC, "POST", "http://x/v1/commit", `{"ticket":{"key":{"scope":"default","digest":"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYA"},"token":"nope.1"},"original":{"target_uri":"http://a/","date":"2024-01-01T00:00:00Z","record_id":"<urn:uuid:x>","file":"f"}}`, nil, 409, "no such pending claim"},
		{"cdx without url", unixHC, "GET", "http://x/web/timemap/cdx?limit=-1", "", nil, 400, "url"},
		{"cdx bad filter", unixHC, "GET", "http://x/cdx?url=a&filter=nofield", "", nil, 400, "filter"},
		{"cdx wildcard", unixHC, "GET", "http://x/cdx?url=example.com/*", "", nil, 400, "wildcard"},
		{"no token", tcpHC, "GET", d.tcp + "/v1/status", "", nil, 401, "token"},
		{"wrong token", tcpHC, "GET", d.tcp + "/v1/status", "", map[string]string{"Authorization": "Bearer wrong-wrong-wrong-wrong"}, 401, "token"},
		{"wrong host", tcpHC, "GET", d.tcp + "/v1/status", "", map[string]string{"Authorization": auth, "Host": "attacker.example:80"}, 403, "host"},
		{"rebinding host", tcpHC, "GET", d.tcp + "/healthz", "", map[string]string{"Host": "evil.example"}, 403, "host"},
		{"bad origin", tcpHC, "POST", d.tcp + "/v1/claim", `{"digest":"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYA"}`, map[string]string{"Authorization": auth, "Origin": "http://evil.example"}, 403, "origin"},
		{"bad origin on socket", unixHC, "POST", "http://x/v1/claim", `{"digest":"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYA"}`, map[string]string{"Origin": "null"}, 403, "origin"},
		{"path token on write route", tcpHC, "POST", d.tcp + "/t/" + testCDXToken + "/v1/claim", `{}`, nil, 403, "CDX"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tc.hdr {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := tc.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			var e api.Error
			if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
				t.Fatalf("not a JSON error: %q", b)
			}
			if !strings.Contains(e.Error, tc.errSub) {
				t.Errorf("error %q does not mention %q", e.Error, tc.errSub)
			}
		})
	}
	// Still serving, on both listeners; the good token and an allowed
	// origin work.
	if err := d.client.Healthz(context.Background()); err != nil {
		t.Fatal(err)
	}
	tc, err := client.New(d.tcp, client.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := tc.Status(context.Background(), &st); err != nil {
		t.Fatalf("TCP with the token: %v", err)
	}
	req, _ := http.NewRequest("GET", d.tcp+"/v1/status", nil)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Origin", "http://127.0.0.1:9999")
	resp, err := tcpHC.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("allowed origin: %v %v", resp, err)
	}
	resp.Body.Close()
}
