package interop_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/warcio"
)

// shapeRecord is a small response record.
func shapeRecord(i int) []byte {
	body := bytes.Repeat([]byte(fmt.Sprintf("shape %d ", i)), 10+i*7)
	block := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:5a5a5a5a-0000-4000-8000-%012d>\r\nWARC-Target-URI: http://example.org/shape/%d\r\nWARC-Date: 2024-05-06T07:08:09Z\r\nContent-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, i, len(block), block)
}

func gzipAll(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// TestFramingShapesAgreeWithWarcioJS builds a WARC in each framing shape
// the issue names — one gzip member per record, gzip members holding
// several records, one gzip stream for the whole file, uncompressed — and
// the one-stream file again under names that do not say WARC (*.bin,
// *.warc.gz.open): warcio.js (which reads all of them right) must find
// the same records, in the same order, with the same block bytes (SHA-1
// over the block warcio.js hands out) as Wayside's reader, and the second
// framing (internal/framescan) the same records again.
func TestFramingShapesAgreeWithWarcioJS(t *testing.T) {
	js := tools(t)
	dir := t.TempDir()
	var recs [][]byte
	for i := range 9 {
		recs = append(recs, shapeRecord(i))
	}
	shapes := map[string][]byte{}
	var member, multi, plain []byte
	for i, r := range recs {
		member = append(member, gzipAll(r)...)
		plain = append(plain, r...)
		if i%3 == 0 {
			multi = append(multi, gzipAll(bytes.Join(recs[i:min(i+3, len(recs))], nil))...)
		}
	}
	shapes["member.warc.gz"] = member
	shapes["multi.warc.gz"] = multi
	shapes["stream.warc.gz"] = gzipAll(plain)
	shapes["plain.warc"] = plain
	shapes["stream.bin"] = shapes["stream.warc.gz"]
	shapes["stream.warc.gz.open"] = shapes["stream.warc.gz"]
	var files []string
	for name, b := range shapes {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	theirs := js.warcioRecords(t, files)
	for _, p := range files {
		name := filepath.Base(p)
		r, err := warcio.Open(p, warcio.Options{BlockDigest: true})
		if err != nil {
			t.Fatal(err)
		}
		var ours []*warcio.Record
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				break
			}
			ours = append(ours, rec)
		}
		r.Close()
		if n, _ := r.Unaccounted(); n != 0 {
			t.Errorf("%s: %d unaccounted spans", name, n)
		}
		js := theirs[p]
		if len(js) != len(ours) || len(ours) != len(recs) {
			t.Errorf("%s: warcio.js reads %d records, Wayside %d, written %d", name, len(js), len(ours), len(recs))
			continue
		}
		for i := range ours {
			_, hx := hexOf(ours[i].BlockDigest)
			if js[i].h("WARC-Record-ID") != ours[i].RecordID || js[i].Block["sha1"] != hx || js[i].BlockLen != ours[i].ContentLength {
				t.Errorf("%s record %d: warcio.js %s sha1 %s (%d bytes), Wayside %s sha1 %s (%d bytes)", name, i, js[i].h("WARC-Record-ID"), js[i].Block["sha1"], js[i].BlockLen, ours[i].RecordID, hx, ours[i].ContentLength)
			}
		}
		sc, err := framescan.File(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Records) != len(ours) {
			t.Errorf("%s: the second framing finds %d records, Wayside reads %d", name, len(sc.Records), len(ours))
			continue
		}
		for i, s := range sc.Records {
			if s.ID != ours[i].RecordID || s.DataOffset != ours[i].DataOffset {
				t.Errorf("%s record %d: second framing %s at uncompressed %d, Wayside %s at %d", name, i, s.ID, s.DataOffset, ours[i].RecordID, ours[i].DataOffset)
			}
		}
	}
}
