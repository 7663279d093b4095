package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/warcfile"
)

// daemonClient talks HTTP to a `wayside serve` on its Unix socket.
type daemonClient struct {
	t  *testing.T
	hc *http.Client
}

func newDaemonClient(t *testing.T, sock string) *daemonClient {
	return &daemonClient{t: t, hc: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get returns the status, headers and body of GET path.
func (d *daemonClient) get(path string) (int, http.Header, []byte) {
	d.t.Helper()
	code, h, b, err := d.try(path)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	return code, h, b
}

func (d *daemonClient) try(path string) (int, http.Header, []byte, error) {
	resp, err := d.hc.Get("http://wayside" + path)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// ingested reports whether the daemon's ingest read n files to their end.
func (d *daemonClient) ingested(n int) (bool, api.IngestStatus) {
	d.t.Helper()
	code, _, b, err := d.try("/v1/ingest")
	var st api.IngestStatus
	if err != nil || code != 200 || json.Unmarshal(b, &st) != nil {
		return false, st
	}
	done := 0
	for _, f := range st.Files {
		if f.Done && f.Offset == f.Size {
			done++
		}
	}
	return done == n && st.Paused == "", st
}

// cdxRows is the daemon's CDX answer (pywb's JSON lines) for every
// capture of host, with each filename replaced by its base name (the
// bucket's daemon stores locations as URLs), sorted; and the filenames as
// answered.
func (d *daemonClient) cdxRows(host string) ([]map[string]string, []string) {
	d.t.Helper()
	code, _, b := d.get("/default/cdx?output=json&matchType=host&url=" + url.QueryEscape(host))
	if code != 200 {
		return nil, nil
	}
	var rows []map[string]string
	var files []string
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r map[string]string
		if err := json.Unmarshal(l, &r); err != nil {
			d.t.Fatalf("CDX answer: %v\n%s", err, l)
		}
		files = append(files, r["filename"])
		r["filename"] = warcfile.Base(r["filename"])
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return jsonString(rows[i]) < jsonString(rows[j]) })
	return rows, files
}

// TestServeFromBucket crawls a local site with `wayside crawl --upload
// s3://…` (SeaweedFS; --keep-local keeps the same WARC files on disk),
// then runs two daemons: one follows the bucket prefix, one the local
// directory. Their CDX answers (filenames aside: the bucket's are the
// objects' s3:// locations), TimeMaps, id_ bodies and rewritten replays
// of every page and resource are the same; the bucket's are read by range
// from the store.
func TestServeFromBucket(t *testing.T) {
	srv := s3test.Start(t)
	site, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "warcs")
	prefix := srv.URL("crawl/one")
	if _, stderr, err := runCLI(ctx, "crawl", "--warc-dir", local, "--delay", "0", "--quiet", "--max-file-size", "40000",
		"--upload", prefix, "--keep-local", site.URL+"/"); err != nil {
		t.Fatalf("crawl --upload: %v\n%s", err, stderr)
	}
	warcs, _ := filepath.Glob(filepath.Join(local, "*.warc.gz"))
	if len(warcs) < 2 {
		t.Fatalf("want several WARC files, got %v", warcs)
	}
	sideLines := 0
	sides, _ := filepath.Glob(filepath.Join(local, "*.cdxj"))
	for _, s := range sides {
		b, _ := os.ReadFile(s)
		sideLines += bytes.Count(b, []byte("\n"))
	}
	fromDisk := newDaemonClient(t, serveInTest(t, "--watch", local, "--poll", "50ms", "--log-level", "warn"))
	fromBucket := newDaemonClient(t, serveInTest(t, "--watch", prefix, "--poll", "50ms", "--log-level", "warn"))

	host := strings.TrimPrefix(site.URL, "http://")
	var diskRows, bucketRows []map[string]string
	var bucketFiles []string
	for deadline := time.Now().Add(3 * time.Minute); ; {
		okD, stD := fromDisk.ingested(len(warcs))
		okB, stB := fromBucket.ingested(len(warcs))
		if okD && okB {
			diskRows, _ = fromDisk.cdxRows(host)
			bucketRows, bucketFiles = fromBucket.cdxRows(host)
			if len(diskRows) == sideLines && len(bucketRows) == sideLines {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemons did not index the crawl (%d lines in its side files; CDX rows %d from disk, %d from the bucket)\ndisk: %+v\nbucket: %+v",
				sideLines, len(diskRows), len(bucketRows), stD, stB)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sideLines < 15 {
		t.Fatalf("only %d captures: the test checks too little", sideLines)
	}
	for _, f := range bucketFiles {
		if !strings.HasPrefix(f, "s3://wayside/crawl/one/") || !strings.Contains(f, "endpoint=") {
			t.Fatalf("the bucket's daemon names a file %q, want its s3:// location", f)
		}
	}
	if a, b := jsonString(diskRows), jsonString(bucketRows); a != b {
		t.Fatalf("CDX answers differ:\ndisk:   %.800s\nbucket: %.800s", a, b)
	}

	// Every capture: its TimeMap, id_ and rewritten replay agree.
	uris := map[string]bool{}
	kinds := map[string]int{}
	for _, r := range diskRows {
		ts, uri, status := r["timestamp"], r["url"], r["status"]
		uris[uri] = true
		for _, mod := range []string{"id_", ""} {
			p := "/default/" + ts + mod + "/" + uri
			cd, hd, bd := fromDisk.get(p)
			cb, hb, bb := fromBucket.get(p)
			if cd != cb || !bytes.Equal(bd, bb) || hd.Get("Content-Type") != hb.Get("Content-Type") || hd.Get("Memento-Datetime") != hb.Get("Memento-Datetime") {
				t.Errorf("%s: disk %d %q (%d bytes), bucket %d %q (%d bytes)", p, cd, hd.Get("Content-Type"), len(bd), cb, hb.Get("Content-Type"), len(bb))
			}
			if cd >= 500 {
				t.Errorf("%s: %d %s", p, cd, bd)
			}
			if mod == "" && cd == 200 {
				kinds[status]++
			}
		}
	}
	for uri := range uris {
		p := "/default/timemap/link/" + uri
		cd, _, bd := fromDisk.get(p)
		cb, _, bb := fromBucket.get(p)
		if cd != 200 || cd != cb || !bytes.Equal(bd, bb) {
			t.Errorf("TimeMap of %s: disk %d, bucket %d:\n%s\n%s", uri, cd, cb, bd, bb)
		}
	}
	if kinds["200"] < 10 {
		t.Errorf("replayed only %v", kinds)
	}

	// The home page replayed from the bucket links its resources back into
	// the archive, and each of them replays.
	home := diskRows[0]
	for _, r := range diskRows {
		if r["url"] == site.URL+"/" {
			home = r
		}
	}
	code, _, page := fromBucket.get("/default/" + home["timestamp"] + "/" + home["url"])
	if code != 200 || !bytes.Contains(page, []byte("Wayside example library")) {
		t.Fatalf("home page from the bucket: %d\n%.300s", code, page)
	}
	res := regexp.MustCompile(`(?:src|href)="(/default/[0-9]{14}[a-z_]*/[^"]+)"`).FindAllSubmatch(page, -1)
	if len(res) < 3 {
		t.Fatalf("the replayed home page links %d archived resources:\n%s", len(res), page)
	}
	embedded := 0
	for _, m := range res {
		p := string(m[1])
		cd, _, bd := fromDisk.get(p)
		cb, _, bb := fromBucket.get(p)
		if cd != cb || !bytes.Equal(bd, bb) {
			t.Errorf("link %s of the replayed home page: disk %d, bucket %d", p, cd, cb)
		}
		if strings.HasPrefix(string(m[0]), "src=") || strings.HasSuffix(p, ".css") {
			embedded++
			if cb != 200 {
				t.Errorf("embedded resource %s of the replayed home page: %d from the bucket", p, cb)
			}
		}
	}
	if embedded < 3 {
		t.Errorf("only %d embedded resources on the replayed home page", embedded)
	}
	t.Logf("%d captures of %d URIs compared (replayed statuses %v); %d links of the home page (%d embedded) replayed from the bucket", len(diskRows), len(uris), kinds, len(res), embedded)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
