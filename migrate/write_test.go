package migrate

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// TestWriteReplaceLinks writes the replace workflow's copy of a WARC file
// holding a BMP, a gzip-encoded page, a stylesheet and a page whose gzip
// encoding is broken: the BMP is replaced at a.png with a 301 at a.bmp;
// the encoded page is decoded, rewritten and stored without its
// Content-Encoding; the stylesheet is rewritten; the broken page is copied
// as it is and named as unchecked; the rest is copied byte for byte.
func TestWriteReplaceLinks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.warc.gz")
	mw, err := warcio.NewMemberWriter(6)
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	var offsets []int64
	add := func(uri string, head string, body []byte) {
		offsets = append(offsets, int64(file.Len()))
		block := append([]byte("HTTP/1.1 200 OK\r\n"+head+"Content-Length: "+itoa(len(body))+"\r\n\r\n"), body...)
		h := warcio.RecordHead{Version: "1.1", Type: "response", ID: warcio.NewRecordID(), Date: "2024-03-01T08:00:00Z",
			Fields:      []warcio.Field{{Name: "WARC-Target-URI", Value: uri}, {Name: "Content-Type", Value: "application/http; msgtype=response"}},
			BlockDigest: digest.Of(digest.SHA1, block).String(), ContentLength: int64(len(block))}
		if _, err := mw.WriteRecord(&file, &h, bytes.NewReader(block)); err != nil {
			t.Fatal(err)
		}
	}
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	add("http://h/img/a.bmp", "Content-Type: image/bmp\r\n", []byte("BM-old-bitmap"))
	add("http://h/", "Content-Type: text/html\r\nContent-Encoding: gzip\r\n", gz(`<img src="img/a.bmp"><img src="img/other.bmp">`))
	add("http://h/css/s.css", "Content-Type: text/css\r\n", []byte(`b{background:url(../img/a.bmp)}`))
	add("http://h/broken", "Content-Type: text/html\r\nContent-Encoding: gzip\r\n", []byte("not gzip at all"))
	add("http://h/img/other.bmp", "Content-Type: image/bmp\r\n", []byte("BM-not-migrated"))
	if err := os.WriteFile(in, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG-result")
	ocs := []Outcome{{Target: Target{File: "in.warc.gz", Offset: offsets[0], URI: "http://h/img/a.bmp", PUID: "fmt/116"},
		Status: StatusMigrated, Result: png, Validation: &Validation{OK: true, ResultPUID: "fmt/11"}}}
	renames := Renames{}
	renames.Add("http://h/img/a.bmp", "http://h/img/a.png")
	decode := func(b []byte, enc string) ([]byte, error) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	out := filepath.Join(dir, "out.warc.gz")
	st, err := WriteReplace(out, in, ocs, WriteOptions{Pathways: DefaultPathways(), Renames: renames, Decode: decode})
	if err != nil {
		t.Fatal(err)
	}
	if st.Replaced != 1 || st.Rewritten != 2 || st.Links != 2 || len(st.Unchecked) != 1 || !strings.Contains(st.Unchecked[0], "http://h/broken") {
		t.Errorf("stats %+v", st)
	}
	r, err := warcio.Open(out, warcio.Options{KeepPayload: 1 << 20, KeepHTTPHead: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	raw, _ := os.ReadFile(out)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		line := rec.Type + " " + rec.TargetURI
		if rec.HTTP != nil {
			line += " " + itoa(rec.HTTP.Status) + " " + rec.HTTP.Header.Get("Content-Type") + " " + rec.HTTP.Header.Get("Content-Encoding") + " " + rec.HTTP.Header.Get("Location")
		}
		if rec.Type == "response" && rec.HTTP.Status == 200 {
			line += " " + string(rec.Payload)
			if rec.PayloadDigest != rec.Headers.Get("WARC-Payload-Digest") && rec.Headers.Get("WARC-Payload-Digest") != "" {
				t.Errorf("%s: payload digest %s, header %s", rec.TargetURI, rec.PayloadDigest, rec.Headers.Get("WARC-Payload-Digest"))
			}
		}
		got = append(got, line)
	}
	want := []string{
		"response http://h/img/a.png 200 image/png   \x89PNG-result",
		"response http://h/img/a.bmp 301   http://h/img/a.png",
		"metadata http://h/img/a.png",
		`response http://h/ 200 text/html   <img src="img/a.png"><img src="img/other.bmp">`,
		"metadata http://h/",
		`response http://h/css/s.css 200 text/css   b{background:url(../img/a.png)}`,
		"metadata http://h/css/s.css",
		"response http://h/broken 200 text/html gzip  not gzip at all",
		"response http://h/img/other.bmp 200 image/bmp   BM-not-migrated",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("copy:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The last two are the input's gzip members, byte for byte.
	inRaw := file.Bytes()
	if !bytes.HasSuffix(raw, inRaw[offsets[3]:]) {
		t.Error("records not rewritten are not copied byte for byte")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
