package convert

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/warcio"
)

func arcLine(url string, length int) string {
	return fmt.Sprintf("%s 10.0.0.1 20240506070809 text/html %d\n", url, length)
}

func arcHTTP(body string) string {
	return "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
}

// damagedMemberARC is the file of the report: one gzip member holding a
// filedesc and five records, two of them damaged (an Archive-length that
// runs over the next header line, a header line whose date is no date),
// the good ones around them.
func damagedMemberARC(t *testing.T) (path string, good []string) {
	fd := "1 0 Wayside\nURL IP-address Archive-date Content-type Archive-length\n"
	var b strings.Builder
	b.WriteString(fmt.Sprintf("filedesc://report.arc 0.0.0.0 20240506070809 text/plain %d\n%s\n", len(fd), fd))
	for i, dmg := range []string{"", "long", "", "date", ""} {
		url := fmt.Sprintf("http://example.org/%d", i)
		block := arcHTTP(strings.Repeat(fmt.Sprintf("record %d ", i), 20+i))
		switch dmg {
		case "long":
			b.WriteString(arcLine(url, len(block)+90) + block + "\n")
		case "date":
			b.WriteString(strings.Replace(arcLine(url, len(block)), " 20240506070809 ", " 2024O506070809 ", 1) + block + "\n")
		default:
			b.WriteString(arcLine(url, len(block)) + block + "\n")
			good = append(good, url)
		}
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(b.String()))
	zw.Close()
	path = filepath.Join(t.TempDir(), "report.arc.gz")
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, good
}

// TestARCToWARCDamagedMultiRecordMember reproduces the report: arc2warc of
// a gzip ARC whose one member holds several records, some damaged, dropped
// a good record, wrote a bogus filedesc-derived record, said "0 skipped"
// and verify passed. Now every good record is converted, the record with
// the long Archive-length is kept (cut back to the next header line,
// marked WARC-Truncated), the record with the bad date is reported and
// listed as skipped, no other record is written, and Verify, checking
// against the second framing (to which the bad header line is no record
// either: 5 records), passes with the skip listed.
func TestARCToWARCDamagedMultiRecordMember(t *testing.T) {
	path, good := damagedMemberARC(t)
	res, err := ARCToWARC(context.Background(), path, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "2024O506070809") || !strings.Contains(res.Problems[0], "offset 1069") {
		t.Fatalf("problems %v, want the one bad header line", res.Problems)
	}
	recs := readRecords(t, res.WARC)
	uris := map[string]int{}
	truncated := 0
	for _, r := range recs {
		uris[r.TargetURI]++
		if r.Header("WARC-Truncated") == "length" {
			truncated++
		}
		if r.Type == "metadata" && r.ContentType != "application/warc-fields" && r.ContentLength > 200 {
			t.Errorf("filedesc record of %d bytes: raw ARC bytes in it", r.ContentLength)
		}
	}
	for _, u := range append(good, "http://example.org/1") {
		if uris[u] != 1 {
			t.Errorf("%s converted %d times, want once (records %v)", u, uris[u], uris)
		}
	}
	if truncated != 1 {
		t.Errorf("%d records marked WARC-Truncated, want 1", truncated)
	}
	if uris["http://example.org/3"] != 0 {
		t.Errorf("the record with the bad header line was converted")
	}
	// warcinfo + filedesc metadata + 4 records + source list.
	if len(recs) != 7 {
		t.Errorf("%d WARC records, want 7", len(recs))
	}
	rep, err := Verify(context.Background(), path, res.WARC)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Disagreements)+len(rep.NotConverted)+len(rep.Missing)+len(rep.Extra) > 0 || len(rep.Skipped) != 1 || rep.Framed != 5 {
		t.Errorf("verify: framed %d, skipped %v, disagreements %v, not converted %v, missing %v, extra %v", rep.Framed, rep.Skipped, rep.Disagreements, rep.NotConverted, rep.Missing, rep.Extra)
	}
	// The reader's error makes the report not OK (the input has an
	// unreadable record), but only for that reason.
	if len(rep.Problems) != 1 {
		t.Errorf("verify problems %v, want the one bad record", rep.Problems)
	}
}

// TestVerifyDoesNotTrustReader feeds the cross-check a reading that missed
// a record without a word (what the old reader did) and an output that
// lacks one without listing it: both are found, from the second framing
// alone.
func TestVerifyDoesNotTrustReader(t *testing.T) {
	path, _ := damagedMemberARC(t)
	framed, err := framescan.File(path)
	if err != nil {
		t.Fatal(err)
	}
	var read []framescan.Read
	converted := map[string]int{}
	var missed framescan.Record
	for _, r := range framed.Records {
		if r.URI == "http://example.org/2" {
			missed = r
			continue // the reader "lost" it, and so did the conversion
		}
		read = append(read, framescan.Read{Key: r.Key(), Offset: r.Member, DataOffset: r.DataOffset})
		converted[r.URI+" "+"20240506070809"]++
	}
	// The bad-date record is "skipped with its reason".
	var skipped []warcio.Span
	for _, r := range framed.Records {
		if strings.Contains(r.Date, "O") {
			t.Fatalf("framescan took %q for a date", r.Date)
		}
	}
	rep := &Report{ARC: path}
	crossCheck(rep, framed, read, nil, converted, skipped)
	if len(rep.Disagreements) != 1 || !strings.Contains(rep.Disagreements[0], "http://example.org/2") {
		t.Errorf("disagreements %v, want the record the reader missed", rep.Disagreements)
	}
	if len(rep.NotConverted) != 1 || !strings.Contains(rep.NotConverted[0], "http://example.org/2") {
		t.Errorf("not converted %v, want the record the output lacks", rep.NotConverted)
	}
	// Listed as skipped (by its uncompressed extent): no longer missing.
	rep = &Report{ARC: path}
	for _, r := range framed.Records {
		if r.URI != "http://example.org/2" {
			converted[r.URI+" "+"20240506070809"]++
		}
	}
	skipped = []warcio.Span{{DataOffset: missed.DataOffset, DataLength: 10, Reason: "test"}}
	crossCheck(rep, framed, read, skipped, converted, skipped)
	if len(rep.Disagreements)+len(rep.NotConverted) > 0 {
		t.Errorf("a listed skip still reported: %v %v", rep.Disagreements, rep.NotConverted)
	}
}
