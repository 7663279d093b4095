package sidecar_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
)

// TestMaintRoutesNeedToken: the delete and replace routes are write
// routes: over TCP they need the bearer token (the CDX path token is not
// enough), an empty selector is refused, and with the token a delete
// removes exactly what it selects from the daemon's dedup index.
func TestMaintRoutesNeedToken(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, apiTestConfig)
	ctx := context.Background()
	for _, p := range []string{"/v1/index/delete", "/v1/index/update", "/v1/index/scan", "/v1/captures/delete", "/v1/captures/replace"} {
		for _, pre := range []string{"", "/t/" + testCDXToken} {
			req, _ := http.NewRequest("POST", d.tcp+pre+p, strings.NewReader(`{"files":["a.warc.gz"]}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s%s without the token: %d, want 401 or 403", pre, p, resp.StatusCode)
			}
		}
	}
	tc, err := client.New(d.tcp, client.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.DeleteIndex(ctx, dedupindex.Selector{}); err == nil || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("empty selector: %v", err)
	}
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var es []dedupindex.Entry
	for i, f := range []string{"a.warc.gz", "b.warc.gz", "a.warc.gz"} {
		o := dedupindex.Original{Digest: "sha1:" + strings.Repeat(string(rune('A'+i)), 32), TargetURI: "http://e.example/" + f,
			Date: date, RecordID: "<urn:uuid:0000000" + string(rune('0'+i)) + "-1111-4222-8333-444455556666>", File: f, Offset: int64(i)}
		es = append(es, dedupindex.Entry{Key: dedupindex.Key{Scope: "default", Digest: o.Digest}, Original: o})
	}
	if _, err := tc.Put(ctx, es); err != nil {
		t.Fatal(err)
	}
	n, err := tc.DeleteIndex(ctx, dedupindex.Selector{Files: []string{filepath.Join("/elsewhere", "a.warc.gz")}})
	if err != nil || n != 2 {
		t.Fatalf("delete --file a.warc.gz = %d, %v; want 2", n, err)
	}
	var left []string
	if err := tc.ScanIndex(ctx, dedupindex.Selector{}, func(e dedupindex.Entry) error { left = append(left, e.Original.File); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "b.warc.gz" {
		t.Fatalf("after delete the index holds %v", left)
	}
}
