package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile/s3"
)

const loadConfig = `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
  cdx_token: ` + testCDXToken + `
ingest:
  dirs: [DIR/warcs]
  poll_interval: 50ms
access:
  storage:
    cdx11: DIR/elsewhere
    cdxj: file://DIR/elsewhere
    readme: file://DIR/elsewhere
`

// outbackREADMELine is the CDX line of OutbackCDX's README (its loading
// and query examples).
const outbackREADMELine = "org,example)/ 20030402160014 http://example.org/ text/html 200 MOH7IEN2JAEJOHYXIEPEEGHOHG5VI=== - - 2248 396 mycrawl.warc.gz"

// post sends body to the daemon's TCP listener with the bearer token
// (tok "" sends none).
func post(t *testing.T, u, tok string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// loadFixture is a daemon that ingests pywb's revisit sample and the
// file holding its originals into "default", with a copy of both files
// elsewhere and their CDXJ (as `wayside cdxj` writes it).
type loadFixture struct {
	dir, base, staff string
	d                *daemon
	cdxj             string
	lines, urls      []string
}

func newLoadFixture(t *testing.T, extraStorage string) *loadFixture {
	t.Helper()
	dir := t.TempDir()
	corpus := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	// pywb's revisits and the file holding their originals.
	srcs := []string{filepath.Join(corpus, "pywb-dupes.warc.gz"), filepath.Join(corpus, "pywb-iana.warc.gz")}
	for _, sub := range []string{"warcs", "elsewhere"} {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
		testenv.CopyFiles(t, filepath.Join(dir, sub), srcs...)
	}
	d := startDaemon(t, dir, loadConfig+extraStorage)
	f := &loadFixture{dir: dir, d: d, base: d.tcp, staff: d.tcp + "/t/" + testCDXToken}
	code, cdxjOut, errOut := runBinary(t, "cdxj", filepath.Join(dir, "elsewhere"))
	if code != 0 {
		t.Fatalf("wayside cdxj: %d %s", code, errOut)
	}
	f.cdxj = cdxjOut
	f.lines = strings.Split(strings.TrimSpace(cdxjOut), "\n")
	seen := map[string]bool{}
	for _, l := range f.lines {
		var r struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal([]byte(l[strings.IndexByte(l, '{'):]), &r); err != nil {
			t.Fatal(err)
		}
		if !seen[r.URL] {
			seen[r.URL] = true
			f.urls = append(f.urls, r.URL)
		}
	}
	sort.Strings(f.urls)
	waitFor(t, "ingest", func() bool {
		_, body := get(t, f.staff+"/default/cdx?url=iana.org&matchType=domain&output=json", nil)
		_, body2 := get(t, f.staff+"/default/cdx?url=example.com&output=json", nil)
		return strings.Count(body, "\n")+strings.Count(body2, "\n") == len(f.lines)
	})
	return f
}

// same compares the answers of collection coll with the ingested
// collection's: CDX API (JSON, CDXJ, text), TimeMaps, and every id_
// memento (status, type, bytes). The loaded collection names each file
// by its location (the filename field, errors naming the file): the
// strings strip are taken out of its answers, leaving the base name.
func (f *loadFixture) same(t *testing.T, coll string, strip ...string) {
	t.Helper()
	staff := f.staff
	lines, urls := f.lines, f.urls
	same := func(what, coll, want, got string) {
		t.Helper()
		if got = strings.ReplaceAll(got, "/"+coll+"/", "/default/"); got != want {
			t.Errorf("%s: %s answers\n%s\nthe ingested collection\n%s", what, coll, got, want)
		}
	}
	for _, q := range []string{"url=iana.org&matchType=domain&output=json", "url=example.com&output=json",
		"url=iana.org&matchType=domain&output=cdxj", "url=iana.org/&sort=reverse&output=text"} {
		_, want := get(t, staff+"/default/cdx?"+q, nil)
		_, got := get(t, staff+"/"+coll+"/cdx?"+q, nil)
		for _, x := range strip {
			got = strings.ReplaceAll(got, x, "") // the filename: a location here
		}
		if strings.TrimSpace(want) == "" {
			t.Fatalf("cdx %s: the ingested collection answers nothing", q)
		}
		same("cdx "+q, coll, want, got)
	}
	mementos := 0
	for _, u := range urls {
		_, want := get(t, staff+"/default/timemap/link/"+u, nil)
		_, got := get(t, staff+"/"+coll+"/timemap/link/"+u, nil)
		same("timemap "+u, coll, want, got)
		_, rows := get(t, staff+"/default/cdx?url="+url.QueryEscape(u)+"&output=text&fl=timestamp", nil)
		for _, ts := range strings.Fields(rows) {
			wr, wb := get(t, staff+"/default/"+ts+"id_/"+u, nil)
			gr, gb := get(t, staff+"/"+coll+"/"+ts+"id_/"+u, nil)
			// An error names the file: by its location here.
			for _, x := range strip {
				gb = strings.ReplaceAll(gb, x, "")
			}
			if wr.StatusCode != gr.StatusCode || wb != gb || wr.Header.Get("Content-Type") != gr.Header.Get("Content-Type") {
				t.Errorf("id_ %s %s: %s answers %d (%d bytes), the ingested collection %d (%d bytes) %q", ts, u, coll, gr.StatusCode, len(gb), wr.StatusCode, len(wb), wb)
			}
			if wr.StatusCode == 200 {
				mementos++
			}
		}
	}
	if mementos < len(lines)*9/10 {
		t.Errorf("%s: only %d of %d captures replayed", coll, mementos, len(lines))
	}
}

// TestE2ECaptureLoad loads the index lines of a real WARC (pywb's
// revisit sample) into collections by POST, OutbackCDX style — as CDX11
// lines (the daemon's own CDX answer for the ingested copy, the layout
// OutbackCDX takes) and as the CDXJ `wayside cdxj` writes — with the WARC
// in a directory the daemon does not watch; the same WARC is ingested
// into "default". Every CDX API answer (JSON and CDXJ; the filename
// aside, a location URL here), TimeMap and id_ memento of the loaded
// collections must equal the ingested one's. Then OutbackCDX's README
// example line loads, is answered back as OutbackCDX answers it (its
// filename resolved to its location) and is deleted; a body with bad lines is refused naming them
// and stores nothing; the routes need the token.
func TestE2ECaptureLoad(t *testing.T) {
	f := newLoadFixture(t, "")
	dir, base, staff, lines, cdxjOut := f.dir, f.base, f.staff, f.lines, f.cdxj
	// The CDX11 lines: the daemon's own text answer (urlkey timestamp
	// original mime status digest redirect robotflags length offset
	// filename), behind the OutbackCDX/cdx-indexer header line.
	cdx11 := " CDX N b a m s k r M S V g\n"
	for _, q := range []string{"url=iana.org&matchType=domain", "url=example.com"} {
		_, body := get(t, staff+"/default/cdx?"+q+"&output=text", nil)
		cdx11 += body
	}
	if n := strings.Count(cdx11, "\n"); n != len(lines)+1 {
		t.Fatalf("CDX11 body has %d lines, want %d:\n%s", n, len(lines)+1, cdx11)
	}
	if c, body := post(t, base+"/cdx11", testToken, []byte(cdx11)); c != 200 || !strings.HasPrefix(body, "Added "+strconv.Itoa(len(lines))+" records") {
		t.Fatalf("POST /cdx11: %d %s", c, body)
	}
	if c, body := post(t, base+"/cdxj", testToken, []byte(cdxjOut)); c != 200 || !strings.HasPrefix(body, "Added "+strconv.Itoa(len(lines))+" records") {
		t.Fatalf("POST /cdxj: %d %s", c, body)
	}

	for _, coll := range []string{"cdx11", "cdxj"} {
		f.same(t, coll, "file://"+filepath.Join(dir, "elsewhere")+"/")
	}
	same := func(what, coll, want, got string) {
		t.Helper()
		if got = strings.ReplaceAll(got, "/"+coll+"/", "/default/"); got != want {
			t.Errorf("%s: %s answers\n%s\nthe ingested collection\n%s", what, coll, got, want)
		}
	}

	// OutbackCDX's README: load, query (answered as OutbackCDX answers
	// it), delete, delete again (no error, nothing deleted).
	if c, body := post(t, base+"/readme", testToken, []byte(outbackREADMELine+"\n")); c != 200 || body != "Added 1 records (1 new)\n" {
		t.Fatalf("POST /readme: %d %q", c, body)
	}
	// As OutbackCDX answers it, the filename resolved to its location.
	wantLine := strings.Replace(outbackREADMELine, " mycrawl.warc.gz", " file://"+filepath.Join(dir, "elsewhere", "mycrawl.warc.gz"), 1)
	if _, body := get(t, staff+"/readme/cdx?url=example.org&output=text", nil); body != wantLine+"\n" {
		t.Errorf("readme query:\n%s\nwant\n%s", body, wantLine)
	}
	if c, body := post(t, base+"/readme/delete", testToken, []byte(outbackREADMELine+"\n")); c != 200 || body != "Deleted 1 records\n" {
		t.Fatalf("POST /readme/delete: %d %q", c, body)
	}
	if _, body := get(t, staff+"/readme/cdx?url=example.org&output=text", nil); body != "" {
		t.Errorf("after delete the query answers %q", body)
	}
	if c, body := post(t, base+"/readme/delete", testToken, []byte(outbackREADMELine+"\n")); c != 200 || body != "Deleted 0 records\n" {
		t.Fatalf("POST /readme/delete again: %d %q", c, body)
	}
	// Deleting the CDXJ collection's lines empties it; the CDX11 one
	// (same file location, another collection) keeps all its captures.
	if c, body := post(t, base+"/cdxj/delete", testToken, []byte(cdxjOut)); c != 200 || body != "Deleted "+strconv.Itoa(len(lines))+" records\n" {
		t.Fatalf("POST /cdxj/delete: %d %q", c, body)
	}
	if _, body := get(t, staff+"/cdxj/cdx?url=iana.org&matchType=domain&output=text", nil); body != "" {
		t.Errorf("cdxj after delete: %q", body)
	}
	_, want := get(t, staff+"/default/cdx?url=iana.org&matchType=domain&output=json", nil)
	_, got := get(t, staff+"/cdx11/cdx?url=iana.org&matchType=domain&output=json", nil)
	same("cdx11 after the other collection's delete", "cdx11", want, strings.ReplaceAll(got, "file://"+filepath.Join(dir, "elsewhere")+"/", ""))

	// Bad lines: all named, nothing stored.
	bad := strings.Join([]string{
		"org,example)/a 20030402160014 http://example.org/a text/html 200 - - - 100 0 good.warc.gz",
		"org,example)/b 2003-04-02 http://example.org/b text/html 200 - - - 100 0 good.warc.gz",
		"org,example)/c 20030402160014 http://example.org/c text/html 200 - - - 100 200 good.warc.gz",
		"org,example)/d 20030402160014 http://example.org/d text/html 200 - - - 100 - good.warc.gz",
		"org,example)/e 20030402160014 http://example.org/e text/html 200 - - - 100 0 ../escape.warc.gz",
		"@alias http://legacy.example.org/page-one http://www.example.org/page1",
	}, "\n")
	c, body := post(t, base+"/readme", testToken, []byte(bad))
	if c != 400 || !strings.Contains(body, "4 bad lines") || !strings.Contains(body, "line 6: an @alias line") {
		t.Fatalf("POST bad lines: %d %s", c, body)
	}
	for _, n := range []string{"line 2", "line 4", "line 5"} {
		if !strings.Contains(body, n) {
			t.Errorf("the refusal does not name %s: %s", n, body)
		}
	}
	if strings.Contains(body, "line 1:") || strings.Contains(body, "line 3:") {
		t.Errorf("the refusal names a good line: %s", body)
	}
	if _, body := get(t, staff+"/readme/cdx?url=example.org&matchType=prefix&output=text", nil); body != "" {
		t.Errorf("a refused body stored captures: %q", body)
	}

	// Token rules: a write route.
	if c, _ := post(t, base+"/readme", "", []byte(outbackREADMELine)); c != http.StatusUnauthorized {
		t.Errorf("POST without a token: %d", c)
	}
	if c, _ := post(t, staff+"/readme", "", []byte(outbackREADMELine)); c != http.StatusForbidden {
		t.Errorf("POST with the CDX path token: %d", c)
	}
	if c, _ := post(t, base+"/default", testToken, []byte(outbackREADMELine)); c != http.StatusNotFound {
		t.Errorf("POST to a collection without access.storage: %d", c)
	}
}

// TestE2ECaptureLoadS3 loads the same CDXJ into a collection whose
// storage is a bucket prefix on a real S3 server (SeaweedFS) holding the
// WARCs: its answers, id_ mementos read by range from the bucket among
// them, equal the ingested collection's.
func TestE2ECaptureLoadS3(t *testing.T) {
	srv := s3test.Start(t)
	loc := srv.URL("loaded")
	f := newLoadFixture(t, "    bucket: "+loc+"\n")
	b, err := s3.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pywb-dupes.warc.gz", "pywb-iana.warc.gz"} {
		if _, err := b.Upload(context.Background(), filepath.Join(f.dir, "elsewhere", name), name); err != nil {
			t.Fatal(err)
		}
	}
	if c, body := post(t, f.base+"/bucket", testToken, []byte(f.cdxj)); c != 200 || !strings.HasPrefix(body, "Added "+strconv.Itoa(len(f.lines))+" records") {
		t.Fatalf("POST /bucket: %d %s", c, body)
	}
	f.same(t, "bucket", "s3://wayside/loaded/", "?endpoint="+srv.Endpoint)
}
