package warcio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// arcCorpus returns the path of a corpus ARC file.
func arcCorpus(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(testenv.SharedDir(t), "corpus", "arc", name)
}

// TestARCCorpus reads every corpus ARC file and pins a per-record summary
// (type, offset, length, URI, date, status, payload digest, anomalies) in
// testdata/arc-corpus.golden (-update rewrites it). The Heritrix ARC holds
// 300 records (JWAT and the gzip members agree); pywb gives the small
// sample's HTTP record offset 171/151 and length 856/1656.
func TestARCCorpus(t *testing.T) {
	var out strings.Builder
	counts := map[string]int{}
	for _, path := range testenv.CorpusARCs(t) {
		recs := readAll(t, path, Options{BlockDigest: true})
		counts[filepath.Base(path)] = len(recs)
		for _, rec := range recs {
			if rec.ARC == nil {
				t.Fatalf("%s offset %d: not read as ARC", path, rec.Offset)
			}
			fmt.Fprintf(&out, "%s %s %d %d %s %s %d %s %v\n", filepath.Base(path), rec.Type, rec.Offset, rec.Length,
				rec.Capture("").URI, rec.Date.Format("20060102150405"), rec.Status(), rec.PayloadDigest, rec.Anomalies)
		}
	}
	if counts["aut-example.arc.gz"] != 300 || counts["warcio-example.arc"] != 2 || counts["warcio-example.arc.gz"] != 2 {
		t.Errorf("record counts %v", counts)
	}
	golden(t, "testdata/arc-corpus.golden", out.String())
	for name, want := range map[string][2]int64{"warcio-example.arc": {151, 1656}, "warcio-example.arc.gz": {171, 856}} {
		recs := readAll(t, arcCorpus(t, name), Options{})
		if got := [2]int64{recs[1].Offset, recs[1].Length}; got != want {
			t.Errorf("%s: HTTP record at %v, pywb says %v", name, got, want)
		}
	}
}

// autRecords returns the uncompressed records of the Heritrix ARC (header
// line, block and the separating line feed), one per gzip member.
func autRecords(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile(arcCorpus(t, "aut-example.arc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, rec := range readAll(t, arcCorpus(t, "aut-example.arc.gz"), Options{SkipPayloadDigest: true}) {
		zr, err := gzip.NewReader(bytes.NewReader(data[rec.Offset:rec.End()]))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// setLength rewrites the Archive-length of a record's header line.
func setLength(rec []byte, length string) []byte {
	i := bytes.IndexByte(rec, '\n')
	line := rec[:i]
	sp := bytes.LastIndexByte(line, ' ')
	return append(append(append([]byte(nil), line[:sp+1]...), length...), rec[i:]...)
}

// dropField removes the Content-type field of a record's header line.
func dropField(rec []byte) []byte {
	i := bytes.IndexByte(rec, '\n')
	f := bytes.Split(rec[:i], []byte(" "))
	f = append(f[:len(f)-2], f[len(f)-1])
	return append(bytes.Join(f, []byte(" ")), rec[i:]...)
}

// readResult is what reading a damaged file gave: the records' URIs (their
// payload digests checked against the intact file's) and the errors.
type readResult struct {
	uris []string
	errs []error
}

func readDamaged(t *testing.T, name string, data []byte, stream bool) readResult {
	t.Helper()
	var rd io.Reader = bytes.NewReader(data)
	if stream {
		rd = struct{ io.Reader }{rd} // no Seek
	}
	r := NewReader(rd, name, Options{})
	var res readResult
	for range 1000 {
		rec, err := r.Next()
		if err == io.EOF {
			return res
		}
		if err != nil {
			res.errs = append(res.errs, err)
			continue
		}
		res.uris = append(res.uris, rec.Capture("").URI)
	}
	t.Fatal("reader does not end")
	return res
}

// TestARCBadInput damages real ARC data (the Heritrix ARC's records, plain
// and gzip per record) and checks that each fault is reported with the file
// and the record's offset, that every good record before and after it is
// read with its intact payload digest, and that forgivable faults are read
// with a note (Anomalies) instead of an error.
func TestARCBadInput(t *testing.T) {
	recs := autRecords(t)
	want := map[string]string{} // URI → intact payload digest
	for _, rec := range readAll(t, arcCorpus(t, "aut-example.arc.gz"), Options{}) {
		want[rec.Capture("").URI] = rec.PayloadDigest
	}
	first := recs[:12] // filedesc + 11 records
	plain := func(rs [][]byte) []byte { return bytes.Join(rs, nil) }
	gzipped := func(rs [][]byte) []byte {
		var b []byte
		for _, r := range rs {
			b = append(b, gz(r)...)
		}
		return b
	}
	offsetOf := func(rs [][]byte, i int, compressed bool) int64 {
		if compressed {
			return int64(len(gzipped(rs[:i])))
		}
		return int64(len(plain(rs[:i])))
	}
	replace := func(i int, r []byte) [][]byte {
		rs := append([][]byte(nil), first...)
		rs[i] = r
		return rs
	}
	const bad = 5
	cases := []struct {
		name       string
		rs         [][]byte
		compressed bool
		tail       []byte // appended after the records (compressed: raw bytes)
		cut        int    // bytes cut off the end
		kind       error  // nil: read without error
		msg        string
		lost       int // records not read
		anomaly    bool
	}{
		{name: "intact/plain", rs: first},
		{name: "intact/gzip", rs: first, compressed: true},
		{name: "truncated/plain", rs: first, cut: 100, kind: ErrTruncated, msg: "overruns the file", lost: 1},
		{name: "truncated/gzip", rs: first, compressed: true, cut: 100, kind: ErrTruncated, msg: "gzip member cut short", lost: 1},
		{name: "too-few-fields/plain", rs: replace(bad, dropField(recs[bad])), kind: ErrCorrupt, msg: "has 4 fields, want 5", lost: 1},
		{name: "too-few-fields/gzip", rs: replace(bad, dropField(recs[bad])), compressed: true, kind: ErrCorrupt, msg: "has 4 fields, want 5", lost: 1},
		// A length running over the next header line is cut back to it
		// (the record is kept, marked truncated); one running past the end
		// of the file is kept when its HTTP message is whole.
		{name: "length-overruns-file/plain", rs: replace(bad, setLength(recs[bad], "99999999")), anomaly: true},
		{name: "length-overruns-last/plain", rs: append(append([][]byte(nil), first[:11]...), setLength(first[11], "99999999")), anomaly: true},
		{name: "wrong-length-long/plain", rs: replace(bad, setLength(recs[bad], fmt.Sprint(len(recs[bad])+40))), anomaly: true},
		{name: "wrong-length-short/plain", rs: replace(bad, setLength(recs[bad], "100")), anomaly: true},
		{name: "wrong-length-long/gzip", rs: replace(bad, setLength(recs[bad], fmt.Sprint(len(recs[bad])+40))), compressed: true, anomaly: true},
		{name: "wrong-length-short/gzip", rs: replace(bad, setLength(recs[bad], "100")), compressed: true, anomaly: true},
		{name: "no-final-line-feed/plain", rs: append(append([][]byte(nil), first[:11]...), bytes.TrimSuffix(first[11], []byte("\n")))},
		{name: "no-line-feed-between/plain", rs: replace(bad, bytes.TrimSuffix(recs[bad], []byte("\n"))), anomaly: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := plain(tc.rs)
			if tc.compressed {
				data = gzipped(tc.rs)
			}
			data = append(data[:len(data)-tc.cut:len(data)-tc.cut], tc.tail...)
			for _, stream := range []bool{false, true} {
				if stream && (tc.anomaly || tc.kind != nil) {
					continue // corrections and overrun checks need a seekable file
				}
				res := readDamaged(t, "damaged.arc", data, stream)
				if got := len(res.uris); got != len(tc.rs)-tc.lost {
					t.Errorf("stream=%v: read %d records, want %d (errors %v)", stream, got, len(tc.rs)-tc.lost, res.errs)
				}
				for _, u := range res.uris {
					if _, ok := want[u]; !ok && u != "IAH-20080430204825-00000-blackbook.arc" {
						t.Errorf("record read under an unknown URI %q", u)
					}
				}
				if tc.kind == nil {
					if len(res.errs) > 0 {
						t.Errorf("errors: %v", res.errs)
					}
					continue
				}
				if len(res.errs) != 1 {
					t.Fatalf("want one error, got %v", res.errs)
				}
				var e *Error
				wantOff := offsetOf(tc.rs, bad, tc.compressed)
				if tc.kind == ErrTruncated {
					wantOff = offsetOf(tc.rs, len(tc.rs)-1, tc.compressed)
				}
				if !errors.As(res.errs[0], &e) || !errors.Is(e, tc.kind) || e.File != "damaged.arc" || e.Offset != wantOff || !strings.Contains(e.Error(), tc.msg) {
					t.Errorf("error %v: want %v at damaged.arc offset %d mentioning %q", res.errs[0], tc.kind, wantOff, tc.msg)
				}
			}
		})
	}
	// Digests: every record read from a corrected or damaged file carries
	// its intact payload digest.
	for _, tc := range cases {
		data := plain(tc.rs)
		if tc.compressed {
			data = gzipped(tc.rs)
		}
		data = data[:len(data)-tc.cut]
		r := NewReader(bytes.NewReader(data), tc.name, Options{})
		anomalies := 0
		for range 1000 {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				continue
			}
			anomalies += len(rec.Anomalies)
			if u := rec.Capture("").URI; want[u] != "" && rec.PayloadDigest != want[u] {
				t.Errorf("%s: %s payload digest %s, intact %s", tc.name, u, rec.PayloadDigest, want[u])
			}
		}
		if tc.anomaly != (anomalies > 0) {
			t.Errorf("%s: %d anomalies noted, want some: %v", tc.name, anomalies, tc.anomaly)
		}
	}
}

// TestARCCorruptGzipMember flips bytes inside one gzip member of the real
// Heritrix ARC: that record is reported (file, offset of its member) and
// the 299 others are read.
func TestARCCorruptGzipMember(t *testing.T) {
	path := arcCorpus(t, "aut-example.arc.gz")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, path, Options{SkipPayloadDigest: true})
	victim := recs[100]
	data = append([]byte(nil), data...)
	for i := victim.Offset + 20; i < victim.Offset+60; i++ {
		data[i] ^= 0x55
	}
	res := readDamaged(t, "aut-example.arc.gz", data, false)
	if len(res.uris) != 299 {
		t.Errorf("read %d records, want 299", len(res.uris))
	}
	var e *Error
	if len(res.errs) != 1 || !errors.As(res.errs[0], &e) || !errors.Is(e, ErrCorrupt) || e.Offset != victim.Offset {
		t.Fatalf("errors %v, want one ErrCorrupt at offset %d", res.errs, victim.Offset)
	}
}

// TestARCSpacesInURLAndV2 reads header lines with spaces in the URL (as
// real crawlers wrote them) and ARC v2 header lines.
func TestARCSpacesInURLAndV2(t *testing.T) {
	body := "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello"
	v1 := fmt.Sprintf("filedesc://x.arc 0.0.0.0 20080430204825 text/plain 76\n1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n\n"+
		"http://example.com/a b c.html 1.2.3.4 20080430204826 text/plain %d\n%s\n", len(body), body)
	v2head := "URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n"
	v2 := fmt.Sprintf("filedesc://y.arc 0.0.0.0 20080430204825 text/plain %d\n2 0 Test\n%s\n"+
		"http://example.com/x y 1.2.3.4 20080430204826 text/plain 200 ABCDEF - 1234 y.arc %d\n%s\n", len("2 0 Test\n")+len(v2head), v2head, len(body), body)
	for name, data := range map[string]string{"v1": v1, "v2": v2} {
		recs := readAll(t, writeTemp(t, data), Options{})
		if len(recs) != 2 {
			t.Fatalf("%s: %d records", name, len(recs))
		}
		rec := recs[1]
		wantURL := map[string]string{"v1": "http://example.com/a b c.html", "v2": "http://example.com/x y"}[name]
		if rec.TargetURI != wantURL || rec.ARC.IP != "1.2.3.4" || rec.Status() != 200 || rec.PayloadLength != 5 || len(rec.Anomalies) != 0 {
			t.Errorf("%s: %+v %+v", name, rec, rec.ARC)
		}
		if name == "v2" && (rec.ARC.Version != 2 || rec.ARC.ResultCode != "200" || rec.ARC.Filename != "y.arc") {
			t.Errorf("v2 fields: %+v", rec.ARC)
		}
	}
}

func writeTemp(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.arc")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
