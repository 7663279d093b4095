package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

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
	type row struct {
		r    map[string]string
		file string
	}
	var all []row
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r map[string]string
		if err := json.Unmarshal(l, &r); err != nil {
			d.t.Fatalf("CDX answer: %v\n%s", err, l)
		}
		f := r["filename"]
		r["filename"] = warcfile.Base(f)
		all = append(all, row{r, f})
	}
	sort.Slice(all, func(i, j int) bool { return jsonString(all[i].r) < jsonString(all[j].r) })
	var rows []map[string]string
	var files []string
	for _, x := range all {
		rows, files = append(rows, x.r), append(files, x.file)
	}
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

// serveStoppable is serveInTest with the data directory given and a stop
// function (idempotent; the test fails on a serve error).
func serveStoppable(t *testing.T, data string, extra ...string) (sock string, stop func()) {
	t.Helper()
	sock = filepath.Join(data, "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, stderr, err := runCLI(ctx, append([]string{"serve", "--data-dir", data, "--unix", sock}, extra...)...)
		if errors.Is(err, errCleanStop) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, stderr)
		}
		done <- err
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return sock, stop
}

// TestServeFromBucketFaults: the daemon following a bucket prefix says in
// its status that the store is down while SeaweedFS is stopped, and goes
// on once it is back; then objects are cut short and replaced behind the
// index's back: id_ answers an error naming the file and offset (never
// the bytes of another record), and `wayside index verify` reports each.
func TestServeFromBucketFaults(t *testing.T) {
	srv := s3test.Start(t)
	site, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "warcs")
	prefix := srv.URL("faults")
	if _, stderr, err := runCLI(ctx, "crawl", "--warc-dir", local, "--delay", "0", "--quiet", "--max-file-size", "40000",
		"--upload", prefix, "--keep-local", site.URL+"/"); err != nil {
		t.Fatalf("crawl --upload: %v\n%s", err, stderr)
	}
	warcs, _ := filepath.Glob(filepath.Join(local, "*.warc.gz"))
	sort.Strings(warcs)
	if len(warcs) < 3 {
		t.Fatalf("want at least 3 WARC files, got %v", warcs)
	}
	data, err := os.MkdirTemp("", "wsd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) }) // after the daemon stopped
	sock, stop := serveStoppable(t, data, "--watch", prefix, "--poll", "50ms", "--log-level", "error")
	d := newDaemonClient(t, sock)
	host := strings.TrimPrefix(site.URL, "http://")
	var rows []map[string]string
	var files []string
	for deadline := time.Now().Add(3 * time.Minute); ; {
		if ok, _ := d.ingested(len(warcs)); ok {
			if rows, files = d.cdxRows(host); len(rows) >= 15 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not index the bucket: %d rows", len(rows))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The store down: status says so; back: ingest goes on.
	srv.Stop()
	waitStatus := func(what string, cond func(api.IngestStatus) bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); ; {
			code, _, b, err := d.try("/v1/ingest")
			var st api.IngestStatus
			if err == nil && code == 200 && json.Unmarshal(b, &st) == nil && cond(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("daemon status never showed %s: %s", what, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus("the store down", func(st api.IngestStatus) bool {
		return strings.Contains(st.Paused, "s3://wayside/faults") && !strings.Contains(st.Paused, s3test.SecretKey)
	})
	srv.Restart(t)
	waitStatus("ingest resumed", func(st api.IngestStatus) bool { return st.Paused == "" })

	// Objects changed behind the index's back: the first WARC cut in half,
	// the second replaced by the third's bytes.
	c := srv.Client(t)
	put := func(name string, b []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, "wayside", "faults/"+name, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cutName, replName := filepath.Base(warcs[0]), filepath.Base(warcs[1])
	cutData, _ := os.ReadFile(warcs[0])
	otherData, _ := os.ReadFile(warcs[2])
	half := int64(len(cutData) / 2)
	put(cutName, cutData[:half])
	put(replName, otherData)

	hit := map[string]int{}
	for i, r := range rows {
		name := warcfile.Base(files[i])
		off := r["offset"]
		if name != cutName && name != replName {
			continue
		}
		if name == cutName && atoi(t, off)+atoi(t, r["length"]) <= half {
			continue // still whole in the cut object
		}
		p := "/default/" + r["timestamp"] + "id_/" + r["url"]
		code, _, body, err := d.try(p)
		if err != nil {
			t.Errorf("%s (%s offset %s) after the object changed: the answer was cut (%v), not an error naming the record", p, name, off, err)
			continue
		}
		if code == 200 {
			t.Errorf("%s (%s offset %s) after the object changed: 200, %d bytes", p, name, off, len(body))
			continue
		}
		if !bytes.Contains(body, []byte(name)) || !bytes.Contains(body, []byte("offset "+off)) {
			t.Errorf("%s: %d %q does not name %s offset %s", p, code, body, name, off)
		}
		hit[name]++
	}
	if hit[cutName] == 0 || hit[replName] == 0 {
		t.Fatalf("no capture of the changed objects was tried: %v", hit)
	}

	stop()
	out, stderr, err := runCLI(ctx, "index", "verify", "--index", filepath.Join(data, "index"), "--captures", filepath.Join(data, "capture-index"))
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("index verify over changed objects: %v\n%s\n%s", err, out, stderr)
	}
	for _, name := range []string{cutName, replName} {
		if !strings.Contains(out, name+"?endpoint=") || !strings.Contains(out, " offset ") {
			t.Errorf("index verify does not report %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, filepath.Base(warcs[2])+"?endpoint="+srv.Endpoint+" offset") {
		t.Errorf("index verify reports the untouched %s:\n%s", filepath.Base(warcs[2]), out)
	}
	t.Logf("index verify:\n%s", out)
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
