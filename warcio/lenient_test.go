package warcio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

// rec describes one synthetic record for the lenient-reading tests.
type rec struct {
	version  string // "1.0" if empty
	typ      string
	uri      string
	block    string
	eol      string // "\r\n" if empty
	clDelta  int    // added to the true Content-Length
	trailer  string // "\r\n\r\n" if empty; "-" for none
	nameCase func(string) string
	extra    []string // extra header lines
}

func (r rec) bytes() []byte {
	eol := r.eol
	if eol == "" {
		eol = "\r\n"
	}
	v := r.version
	if v == "" {
		v = "1.0"
	}
	name := r.nameCase
	if name == nil {
		name = func(s string) string { return s }
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "WARC/%s%s", v, eol)
	fmt.Fprintf(&b, "%s: %s%s", name("WARC-Type"), r.typ, eol)
	fmt.Fprintf(&b, "%s: %s%s", name("WARC-Target-URI"), r.uri, eol)
	fmt.Fprintf(&b, "%s: 2024-03-01T08:00:00Z%s", name("WARC-Date"), eol)
	fmt.Fprintf(&b, "%s: <urn:uuid:%08d-0000-0000-0000-000000000000>%s", name("WARC-Record-ID"), len(r.block), eol)
	ct := "application/http; msgtype=response"
	if r.typ == "resource" {
		ct = "text/plain"
	}
	fmt.Fprintf(&b, "%s: %s%s", name("Content-Type"), ct, eol)
	for _, x := range r.extra {
		b.WriteString(x + eol)
	}
	fmt.Fprintf(&b, "%s: %d%s%s", name("Content-Length"), len(r.block)+r.clDelta, eol, eol)
	b.WriteString(r.block)
	switch r.trailer {
	case "":
		b.WriteString("\r\n\r\n")
	case "-":
	default:
		b.WriteString(r.trailer)
	}
	return b.Bytes()
}

func gz(p []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(p)
	w.Close()
	return b.Bytes()
}

// build concatenates records, one gzip member each when compress is set,
// and returns the file and each record's offset.
func build(compress bool, recs ...rec) ([]byte, []int64) {
	var file []byte
	var offs []int64
	for _, r := range recs {
		offs = append(offs, int64(len(file)))
		p := r.bytes()
		if compress {
			p = gz(p)
		}
		file = append(file, p...)
	}
	return file, offs
}

func httpResp(body string, headers ...string) string {
	return "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n" + strings.Join(append(headers, ""), "\r\n") + "\r\n" + body
}

func readBytes(t *testing.T, data []byte) ([]*Record, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), "test.warc")
	var out []*Record
	for i := 0; i < 1000; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
	t.Fatal("reader does not end")
	return nil, nil
}

func TestLenientVariants(t *testing.T) {
	body := "<html>hello</html>"
	upper := strings.ToUpper
	lower := strings.ToLower
	variants := []struct {
		name    string
		r       rec
		anomaly string // substring expected among the anomalies, "" for none
	}{
		{"plain 1.0", rec{}, ""},
		{"WARC/1.1", rec{version: "1.1"}, ""},
		{"WARC/0.17", rec{version: "0.17"}, ""},
		{"WARC/0.18", rec{version: "0.18"}, ""},
		{"LF-only lines", rec{eol: "\n", trailer: "\n\n"}, ""},
		{"upper-case header names", rec{nameCase: upper}, ""},
		{"lower-case header names", rec{nameCase: lower}, ""},
		{"Content-Length short by CRLF", rec{clDelta: -2}, ""},
		{"Content-Length over by CRLF", rec{clDelta: 2}, ""},
		{"no trailer", rec{trailer: "-"}, ""},
		{"header without colon", rec{extra: []string{"garbage line"}}, "without a colon"},
		{"folded header", rec{extra: []string{"X-Long: a", " b"}}, ""},
	}
	for _, v := range variants {
		for _, compress := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gzip=%v", v.name, compress), func(t *testing.T) {
				r1 := v.r
				r1.typ, r1.uri, r1.block = "response", "http://example.com/", httpResp(body)
				if r1.clDelta < 0 { // the block ends with the CRLF its length leaves out
					r1.block += "\r\n"
				}
				r2 := rec{typ: "resource", uri: "http://example.com/r.txt", block: "plain text"}
				data, offs := build(compress, r1, r2, r1)
				recs, err := readBytes(t, data)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != 3 {
					t.Fatalf("read %d records, want 3", len(recs))
				}
				for i, rec := range recs {
					if rec.Offset != offs[i] {
						t.Errorf("record %d offset %d, want %d", i, rec.Offset, offs[i])
					}
				}
				got := recs[0]
				if got.Type != "response" || got.TargetURI != "http://example.com/" || got.Status() != 200 || got.MIME != "text/html" {
					t.Errorf("got type %q uri %q status %d mime %q", got.Type, got.TargetURI, got.Status(), got.MIME)
				}
				// An overshooting Content-Length delimits the block: the
				// payload gains the trailer bytes it mis-counts.
				wantBody := body
				if v.r.clDelta > 0 {
					wantBody = body + "\r\n\r\n"[:v.r.clDelta]
				}
				want := digest.Of(digest.SHA1, []byte(wantBody)).String()
				if got.PayloadDigest != want || got.PayloadLength != int64(len(wantBody)) {
					t.Errorf("payload digest %s length %d, want %s %d", got.PayloadDigest, got.PayloadLength, want, len(wantBody))
				}
				if v.r.version != "" && got.Version != v.r.version {
					t.Errorf("version %q, want %q", got.Version, v.r.version)
				}
				if !got.Date.Equal(mustDate("2024-03-01T08:00:00Z")) {
					t.Errorf("date %v", got.Date)
				}
				if recs[1].Type != "resource" || recs[1].MIME != "text/plain" || recs[1].PayloadDigest != digest.Of(digest.SHA1, []byte("plain text")).String() {
					t.Errorf("resource record: %+v", recs[1])
				}
				if v.anomaly != "" && !strings.Contains(strings.Join(got.Anomalies, "|"), v.anomaly) {
					t.Errorf("anomalies %q lack %q", got.Anomalies, v.anomaly)
				}
				if v.name == "folded header" && got.Header("x-long") != "a b" {
					t.Errorf("folded header = %q", got.Header("x-long"))
				}
			})
		}
	}
}

func mustDate(s string) time.Time {
	t, ok := ParseDate(s)
	if !ok {
		panic(s)
	}
	return t
}

// TestGzipContentLengthOvershoot: a gzip member that ends before the
// declared Content-Length, followed by the next record, is a record with a
// wrong Content-Length, not a truncated file.
func TestGzipContentLengthOvershoot(t *testing.T) {
	r1 := rec{typ: "resource", uri: "http://a/", block: "abc", clDelta: 10, trailer: "-"}
	r2 := rec{typ: "resource", uri: "http://b/", block: "def"}
	data, offs := build(true, r1, r2)
	recs, err := readBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Offset != offs[1] || recs[0].Length != offs[1] {
		t.Fatalf("records %+v", recs)
	}
	if !strings.Contains(strings.Join(recs[0].Anomalies, "|"), "overstates") {
		t.Errorf("anomalies %q", recs[0].Anomalies)
	}
	if recs[1].TargetURI != "http://b/" || string(recs[1].PayloadDigest) != digest.Of(digest.SHA1, []byte("def")).String() {
		t.Errorf("second record %+v", recs[1])
	}
}

// TestWholeFileGzip: several records in one gzip member are read; they get
// no CDX length and say so.
func TestWholeFileGzip(t *testing.T) {
	plain, _ := build(false,
		rec{typ: "resource", uri: "http://a/", block: "abc"},
		rec{typ: "resource", uri: "http://b/", block: "def"})
	recs, err := readBytes(t, gz(plain))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].TargetURI != "http://b/" {
		t.Fatalf("records %+v", recs)
	}
	for _, r := range recs {
		if r.Length != 0 || !strings.Contains(strings.Join(r.Anomalies, "|"), "gzip member") {
			t.Errorf("record %s: length %d anomalies %q", r.TargetURI, r.Length, r.Anomalies)
		}
	}
}

// TestRecordSpanningMembers: a record split over two gzip members reads as one.
func TestRecordSpanningMembers(t *testing.T) {
	p := rec{typ: "resource", uri: "http://a/", block: strings.Repeat("x", 1000)}.bytes()
	data := append(gz(p[:300]), gz(p[300:])...)
	recs, err := readBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].PayloadLength != 1000 || recs[0].Length != int64(len(data)) {
		t.Fatalf("records %+v", recs)
	}
}

func TestEmptyInput(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("\r\n\r\n")} {
		recs, err := readBytes(t, data)
		if err != nil || len(recs) != 0 {
			t.Errorf("%q: %d records, %v", data, len(recs), err)
		}
	}
}

func TestErrorNamesFileAndOffset(t *testing.T) {
	data, offs := build(false, rec{typ: "resource", uri: "http://a/", block: "abc"}, rec{typ: "resource", uri: "http://b/", block: "abcdef"})
	data = data[:len(data)-6]
	_, err := readBytes(t, data)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrTruncated) || e.Offset != offs[1] || e.File != "test.warc" {
		t.Fatalf("err = %v", err)
	}
	if want := fmt.Sprintf("warcio: test.warc offset %d: ", offs[1]); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q lacks %q", err, want)
	}
}

func TestKeepPayload(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	data, _ := build(true, rec{typ: "response", uri: "http://a/", block: httpResp(body)})
	r := NewReader(bytes.NewReader(data), "k.warc.gz", Options{KeepPayload: 25})
	got, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Payload) != body[:25] || got.PayloadLength != 1000 || got.PayloadDigest != digest.Of(digest.SHA1, []byte(body)).String() {
		t.Errorf("payload %q length %d digest %s", got.Payload, got.PayloadLength, got.PayloadDigest)
	}
	r = NewReader(bytes.NewReader(data), "k.warc.gz", Options{SkipPayloadDigest: true})
	if got, err = r.Next(); err != nil || got.PayloadDigest != "" || got.PayloadLength != 1000 || got.Length != int64(len(data)) {
		t.Errorf("without digest: %+v %v", got, err)
	}
}

// failingReader returns its data, then a persistent I/O error.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestIOErrorStopsReader: an input that fails (a bad disk, a directory)
// ends reading with an error wrapping the cause instead of being retried
// for ever as a corrupt record.
func TestIOErrorStopsReader(t *testing.T) {
	eio := errors.New("input/output error")
	for _, compress := range []bool{false, true} {
		data, offs := build(compress, rec{typ: "resource", uri: "http://a/", block: "abc"}, rec{typ: "resource", uri: "http://b/", block: strings.Repeat("x", 5000)})
		cut := offs[1] + (int64(len(data))-offs[1])/2 // the input fails inside the second record
		r := NewReader(&failingReader{data: data[:cut], err: eio}, "eio.warc")
		var errs []error
		recs := 0
		for i := 0; i < 100; i++ {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			recs++
		}
		if recs != 1 || len(errs) != 1 || !errors.Is(errs[0], eio) {
			t.Errorf("gzip=%v: %d records, errors %v; want 1 record and one error wrapping the I/O error", compress, recs, errs)
		}
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Open(dir) = %v", err)
	}
}
