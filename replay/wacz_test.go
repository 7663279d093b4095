package replay

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/wacz"
)

// TestWACZRoute: GET /<coll>/wacz?url=… answers a WACZ that wacz.Verify
// finds sound, holding every capture the CDX API gives for the same query
// (byte for byte as stored) and the originals of its revisits; no match
// is a 404, no url a 400, too many captures a 413.
func TestWACZRoute(t *testing.T) {
	h, small := corpusHandler(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	get := func(h *Handler, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://archive.test"+path, nil))
		return rec
	}
	const query = "url=example.com&matchType=domain"
	// The zip is streamed as it is built: whenever bytes reach the
	// client, the temporary directory holds no WACZ and no copy of the
	// selected records (only the index and pages staged).
	resp := httptest.NewRecorder()
	sw := &tmpWatch{ResponseRecorder: resp, dir: tmp}
	h.ServeHTTP(sw, httptest.NewRequest(http.MethodGet, "http://archive.test/pywb/wacz?"+query, nil))
	if resp.Code != 200 || resp.Header().Get("Content-Type") != "application/wacz" {
		t.Fatalf("status %d: %s", resp.Code, resp.Body.String())
	}
	if sw.writes == 0 || len(sw.archives) > 0 {
		t.Errorf("%d writes; the temporary directory held %v while the WACZ was sent", sw.writes, sw.archives)
	}
	p := filepath.Join(t.TempDir(), "sel.wacz")
	os.WriteFile(p, resp.Body.Bytes(), 0o644)
	rep, err := wacz.Verify(context.Background(), p, wacz.VerifyOptions{AllowUnsigned: true})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep)
	}
	cdx := get(h, "/pywb/cdx?"+query)
	want := strings.Split(strings.TrimSpace(cdx.Body.String()), "\n")
	if len(want) < 3 {
		t.Fatalf("CDX answer too small: %q", want)
	}
	members := testenv.ZipMembers(t, p)
	have := map[string]cdxj.Line{}
	for _, s := range strings.Split(strings.TrimSpace(string(members[wacz.IndexCDXJPath])), "\n") {
		l, err := cdxj.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		have[l.URL+" "+l.Timestamp] = l
	}
	dir := h.opts.WARCDirs[0]
	for _, s := range want {
		w, err := cdxj.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := have[w.URL+" "+w.Timestamp]
		if !ok {
			t.Errorf("the WACZ lacks %s %s", w.URL, w.Timestamp)
			continue
		}
		src, _ := os.ReadFile(filepath.Join(dir, w.Filename))
		got := members["archive/"+l.Filename]
		if !bytes.Equal(src[w.Offset:w.Offset+w.Length], got[l.Offset:l.Offset+l.Length]) {
			t.Errorf("%s %s: the record's bytes differ from the stored ones", w.URL, w.Timestamp)
		}
	}
	if len(have) < len(want) {
		t.Errorf("%d index lines for %d captures", len(have), len(want))
	}
	for path, code := range map[string]int{
		"/pywb/wacz?url=nowhere.example":           404,
		"/pywb/wacz":                               400,
		"/pywb/wacz?url=iana.org&matchType=domain": 413,
	} {
		hh := h
		if code == 413 {
			hh = small
		}
		if r := get(hh, path); r.Code != code {
			t.Errorf("%s: status %d, want %d: %s", path, r.Code, code, r.Body.String())
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// tmpWatch records, at each write of the response, the WARC and WACZ
// files under dir.
type tmpWatch struct {
	*httptest.ResponseRecorder
	dir      string
	writes   int
	archives []string // WARC or WACZ files seen
}

func (w *tmpWatch) Write(b []byte) (int, error) {
	w.writes++
	filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.Contains(d.Name(), ".warc") || strings.HasSuffix(d.Name(), ".wacz")) {
			w.archives = append(w.archives, p)
		}
		return nil
	})
	return w.ResponseRecorder.Write(b)
}
