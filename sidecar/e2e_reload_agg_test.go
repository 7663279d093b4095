package sidecar_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/sidecar"
)

// TestE2EReloadAggregateArchives: a daemon started without aggregate
// archives gets one by SIGHUP and answers aggregate TimeMaps from it; a
// config naming an archive with a bad URL is refused and the daemon keeps
// aggregating the archive it has.
func TestE2EReloadAggregateArchives(t *testing.T) {
	root := t.TempDir()
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	adir := filepath.Join(root, "a")
	crawlInto(t, adir, srv.URL+"/", "")
	a := startAggArchive(t, "a", adir, false)

	aggDir := filepath.Join(root, "aggregator")
	os.MkdirAll(aggDir, 0o755)
	agg := startDaemon(t, aggDir, aggregatorConfig("10s"))
	timemap := "/aggregate/timemap/link/" + srv.URL + "/"
	if r := httpGetRawUnix(t, agg.sock, timemap); r.StatusCode != http.StatusNotFound {
		t.Errorf("aggregate route without archives: %d, want 404", r.StatusCode)
	}
	entry := fmt.Sprintf("    - name: a\n      timemap: %s/timemap/link/\n      timegate: %s/\n      timeout: 5s\n", a.base(), a.base())
	cfg := strings.ReplaceAll(strings.ReplaceAll(aggregatorConfig("10s", entry), "DIR", aggDir), "${WAYSIDE_TEST_TOKEN}", testToken)
	os.WriteFile(agg.cfgPath, []byte(cfg), 0o600)
	agg.cmd.Process.Signal(syscall.SIGHUP)
	var st sidecar.Status
	waitFor(t, "the reloaded aggregator", func() bool {
		return agg.client.Status(t.Context(), &st) == nil && st.Aggregate != nil && len(st.Aggregate.Archives) == 1
	})
	code, _, body := getBody(t, agg.tcp+"/t/"+testCDXToken+timemap, nil)
	if code != 200 || len(mementoSet(body)) == 0 {
		t.Fatalf("aggregate TimeMap after the reload: %d\n%s", code, body)
	}
	bad := strings.Replace(cfg, "timemap: "+a.base(), "timemap: ftp://"+strings.TrimPrefix(a.base(), "http://"), 1)
	os.WriteFile(agg.cfgPath, []byte(bad), 0o600)
	if code, body := postUnix(t, agg.sock, "/v1/admin/reload"); code != http.StatusUnprocessableEntity {
		t.Errorf("reload with an ftp archive: %d %s, want 422", code, body)
	}
	if code, _, body2 := getBody(t, agg.tcp+"/t/"+testCDXToken+timemap, nil); code != 200 || len(mementoSet(body2)) != len(mementoSet(body)) {
		t.Errorf("aggregate TimeMap after a refused reload: %d\n%s", code, body2)
	}
	if err := agg.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, agg.log())
	}
}
