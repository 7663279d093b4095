package sidecar_test

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/wacz"
)

// TestE2EIngestWACZ: a WACZ (made by `wayside wacz create` from two WARC
// files) that lands in a watched directory is ingested in place — its
// WARC files read by range through the zip, nothing extracted — and its
// captures are characterized (read back from inside it) and replay: every raw memento (id_), the revisit resolved to its
// original's payload, is the archived payload byte for byte, and
// GET /<coll>/wacz packages them again from inside the WACZ, sound by
// wacz.Verify; a WACZ cut short beside it is reported by name once it
// stops changing; `wayside wacz create --url --from --to` gets the captures
// of a URL prefix and date range from the daemon's index as a WACZ.
func TestE2EIngestWACZ(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir()
	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	bodyA := bytes.Repeat([]byte("page A in a WACZ "), 100)
	bodyB := bytes.Repeat([]byte("page B in a WACZ "), 150)
	files := map[string][]warcRec{
		"one.warc.gz": {
			{Type: "response", URI: "http://wacz.example/a", Date: t0, ID: recID(1), Body: bodyA},
			{Type: "response", URI: "http://wacz.example/b", Date: t0.Add(time.Minute), ID: recID(2), Body: bodyB, Chunked: true},
		},
		"two.warc.gz": {
			{Type: "revisit", URI: "http://wacz.example/a", Date: t0.Add(time.Hour), ID: recID(3), Digest: "sha1:" + sha1B32(bodyA), RefURI: "http://wacz.example/a", RefDate: t0},
		},
	}
	var inputs []string
	for name, recs := range files {
		var w bytes.Buffer
		for _, r := range recs {
			w.Write(r.bytes())
		}
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, w.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, p)
	}
	zpath := filepath.Join(src, "coll.wacz")
	if code, _, stderr := runBinary(t, append([]string{"wacz", "create", "-q", "--no-sign", "-o", zpath}, inputs...)...); code != 0 {
		t.Fatalf("wacz create: %d %s", code, stderr)
	}
	zb, err := os.ReadFile(zpath)
	if err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t, dir, cdxTestConfig+"characterize:\n  enabled: true\n")
	warcs := filepath.Join(dir, "warcs")
	dst := filepath.Join(warcs, "coll.wacz")
	if err := os.WriteFile(dst, zb, 0o644); err != nil {
		t.Fatal(err)
	}
	// Beside it, a WACZ cut short (a copy that broke off): once it has
	// stopped changing it is reported, naming it; the other is ingested.
	if err := os.WriteFile(filepath.Join(warcs, "partial.wacz"), zb[:len(zb)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ingest of the WACZ's 3 records and the report of the partial one", func() bool {
		st, err := d.client.Ingest(context.Background())
		return err == nil && st.Records == 3 && strings.Contains(st.LastError, "partial.wacz")
	})
	st, _ := d.client.Ingest(context.Background())
	if !strings.Contains(st.LastError, "not a complete zip") {
		t.Errorf("the partial WACZ is reported as %q", st.LastError)
	}
	// Reported once, not at every poll: the error count holds while the
	// daemon polls on (three more WARC files, each ingested by a later
	// poll than the one before).
	before := st.Errors
	for i := 0; i < 3; i++ {
		r := warcRec{Type: "response", URI: "http://later.example/" + strconv.Itoa(i), Date: t0, ID: recID(100 + i), Body: []byte("later")}
		if err := os.WriteFile(filepath.Join(warcs, "later-"+strconv.Itoa(i)+".warc.gz"), r.bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ingest of a later WARC file", func() bool {
			st, err := d.client.Ingest(context.Background())
			return err == nil && st.Records == int64(4+i)
		})
	}
	if st, _ := d.client.Ingest(context.Background()); st.Errors != before {
		t.Errorf("the partial WACZ was reported %d more times over three polls: %s", st.Errors-before, st.LastError)
	}
	// The daemon's characterization reads each capture back from inside
	// the WACZ (warcfile.Locations).
	var cs characterize.Stats
	waitFor(t, "characterization of the WACZ's captures", func() bool {
		return d.client.GetJSON(context.Background(), api.PathCharStatus, &cs) == nil && cs.Records+cs.Failed >= 3 && cs.Queued == 0
	})
	if cs.Failed != 0 || cs.Records < 3 {
		t.Errorf("characterization of the WACZ's captures: %+v", cs)
	}
	if ents, _ := os.ReadDir(warcs); len(ents) != 5 {
		t.Errorf("the watched directory holds %d entries, want the two WACZ files and three WARC files alone (nothing extracted)", len(ents))
	}

	base := d.tcp + "/t/" + testCDXToken + "/default"
	for _, tc := range []struct {
		uri  string
		at   time.Time
		want []byte
	}{
		{"http://wacz.example/a", t0, bodyA},
		{"http://wacz.example/b", t0.Add(time.Minute), bodyB},
		{"http://wacz.example/a", t0.Add(time.Hour), bodyA}, // the revisit
	} {
		resp := httpGetRaw(t, base+"/"+tc.at.Format("20060102150405")+"id_/"+tc.uri, nil)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(body, tc.want) {
			t.Errorf("%s at %s: status %d, %d bytes (want %d): %v %.200s", tc.uri, tc.at, resp.StatusCode, len(body), len(tc.want), err, body)
		}
	}

	resp := httpGetRaw(t, base+"/cdx?url="+url.QueryEscape("http://wacz.example/")+"&matchType=host&output=json&fl=filename", nil)
	cdx, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(cdx), "coll.wacz#one.warc.gz") || !strings.Contains(string(cdx), "coll.wacz#two.warc.gz") {
		t.Errorf("CDX filenames do not name the WARC files in the WACZ: %s", cdx)
	}

	resp = httpGetRaw(t, base+"/wacz?url="+url.QueryEscape("http://wacz.example/")+"&matchType=host", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /default/wacz: %d %.300s", resp.StatusCode, b)
	}
	p := filepath.Join(t.TempDir(), "again.wacz")
	os.WriteFile(p, b, 0o644)
	rep, err := wacz.Verify(context.Background(), p, wacz.VerifyOptions{AllowUnsigned: true})
	if err != nil || !rep.OK() || rep.IndexLines != 3 {
		t.Fatalf("the WACZ served from the ingested WACZ: %v %+v", err, rep)
	}

	// `wayside wacz create --url` from the daemon's capture index: a URL
	// prefix and a date range that leaves out the revisit an hour later.
	out := filepath.Join(t.TempDir(), "range.wacz")
	code, _, stderr := runBinary(t, "wacz", "create", "-q", "--addr", d.sock, "--url", "http://wacz.example/", "--match", "prefix",
		"--from", t0.Format("20060102150405"), "--to", t0.Add(30*time.Minute).Format("20060102150405"), "-o", out)
	if code != 0 {
		t.Fatalf("wacz create --url: exit %d: %s", code, stderr)
	}
	rep, err = wacz.Verify(context.Background(), out, wacz.VerifyOptions{AllowUnsigned: true})
	if err != nil || !rep.OK() || rep.IndexLines != 2 {
		t.Fatalf("wacz create --url with a date range: %v %+v, want the 2 captures in the range", err, rep)
	}
	// Nothing in the range: an error naming the cause, no file.
	none := filepath.Join(t.TempDir(), "none.wacz")
	code, _, stderr = runBinary(t, "wacz", "create", "--addr", d.sock, "--url", "http://wacz.example/", "--from", "2001", "--to", "2002", "-o", none)
	if _, serr := os.Stat(none); code != 1 || !strings.Contains(stderr, "no capture") || serr == nil {
		t.Errorf("an empty range: exit %d, %q, file: %v", code, stderr, serr)
	}
}
