package sidecar_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcfile"
)

// TestE2EGoCrawlerThroughSidecar is examples/sidecar-client as a test: a Go
// crawler writes its own WARCs and deduplicates through a running sidecar
// (client.Index behind dedupindex.Deduper, over the Unix socket). The same
// payload at a second URL becomes a revisit of the committed original, and
// the sidecar, watching the crawler's WARC directory, indexes the files too
// without disturbing what the crawler committed.
func TestE2EGoCrawlerThroughSidecar(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	os.MkdirAll(warcs, 0o755)
	d := startDaemon(t, dir, ingestTestConfig)

	body := strings.Repeat("the same page body, served at two URLs. ", 60)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, body)
	}))
	defer site.Close()

	dd, err := dedupindex.NewDeduper(d.client.Index(), dedupindex.Policy{Match: dedupindex.MatchDigest})
	if err != nil {
		t.Fatal(err)
	}
	w, err := warcfile.OpenWriter(warcfile.WriterOptions{Dir: warcs})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := crawl.NewRecorder(crawl.Options{Writer: w, Dedup: dd})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rec}
	for _, p := range []string{"/first", "/second"} {
		resp, err := hc.Get(site.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	st := rec.Stats()
	if st.Responses != 1 || st.RevisitsDigest != 1 {
		t.Fatalf("recorder stats %+v: want one response and one revisit", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dg := "sha1:" + sha1B32([]byte(body))
	o, found, err := d.client.Lookup(ctx, api.Key{Digest: dg})
	if err != nil || !found || o.TargetURI != site.URL+"/first" || !strings.HasSuffix(o.File, ".warc.gz") {
		t.Fatalf("the crawler's commit is not in the sidecar: %+v %v %v", o, found, err)
	}
	// The watcher reads the crawler's finished WARC: the original keeps the
	// crawler's record id, the revisit is not indexed, /second has no
	// original for CDX clients.
	waitFor(t, "ingest of the crawler's WARC", func() bool {
		s, err := d.client.Ingest(ctx)
		if err != nil || len(s.Files) == 0 {
			return false
		}
		for _, f := range s.Files {
			if !f.Done {
				return false
			}
		}
		return true
	})
	o2, _, _ := d.client.Lookup(ctx, api.Key{Digest: dg})
	if o2.RecordID != o.RecordID {
		t.Errorf("ingest replaced the committed original: %s → %s", o.RecordID, o2.RecordID)
	}
	ans, err := d.client.CDX(ctx, url.Values{"url": {site.URL + "/second"}, "limit": {"-1"}})
	if err != nil || ans != "" {
		t.Errorf("CDX for the revisited URL: %q %v, want a miss", ans, err)
	}
	ans, err = d.client.CDX(ctx, url.Values{"url": {site.URL + "/first"}, "limit": {"-1"}})
	if err != nil || !strings.Contains(ans, " "+strings.TrimPrefix(dg, "sha1:")+" ") {
		t.Errorf("CDX for the original: %q %v", ans, err)
	}
}
