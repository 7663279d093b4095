package record

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/ddtest"
)

// TestRecordDataDriven pins the stored encoding of values: a change here
// breaks existing indexes and needs a format version bump.
func TestRecordDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/record.txt", func(t *testing.T, c ddtest.Cmd) string {
		switch c.Name {
		case "value":
			r := Record{
				TargetURI:    c.Arg("uri", ""),
				RecordID:     c.Arg("id", ""),
				File:         c.Arg("file", ""),
				MIME:         c.Arg("mime", ""),
				ETag:         c.Arg("etag", ""),
				LastModified: strings.ReplaceAll(c.Arg("lastmod", ""), "_", " "),
			}
			var err error
			if r.Date, err = time.Parse(time.RFC3339Nano, c.Arg("date", "2024-01-01T00:00:00Z")); err != nil {
				return err.Error()
			}
			num := func(name string) int64 { n, _ := strconv.ParseInt(c.Arg(name, "0"), 10, 64); return n }
			r.FileID, r.MIMEID, r.OriginID = uint64(num("fileid")), uint64(num("mimeid")), uint64(num("originid"))
			r.Offset, r.Length, r.PayloadLength, r.Status = num("offset"), num("length"), num("plen"), int(num("status"))
			b := Append(nil, &r)
			back, err := Decode(b)
			if err != nil {
				return "decode: " + err.Error()
			}
			if fmt.Sprint(back) != fmt.Sprint(r) || !back.Date.Equal(r.Date) {
				return fmt.Sprintf("round trip mismatch:\n%+v\n%+v", back, r)
			}
			return fmt.Sprintf("%d bytes: %x", len(b), b)
		case "decode":
			b, err := hex.DecodeString(c.Pos[0])
			if err != nil {
				return err.Error()
			}
			r, err := Decode(b)
			if err != nil {
				return "error: " + err.Error()
			}
			return fmt.Sprintf("date=%s uri=%q id=%q file=%d/%q offset=%d length=%d plen=%d status=%d mime=%d/%q etag=%q lastmod=%q",
				r.Date.Format(time.RFC3339Nano), r.TargetURI, r.RecordID, r.FileID, r.File, r.Offset, r.Length, r.PayloadLength, r.Status, r.MIMEID, r.MIME, r.ETag, r.LastModified)
		}
		t.Fatalf("unknown command %q", c.Name)
		return ""
	})
}

func FuzzDecodeRecord(f *testing.F) {
	date := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, r := range []Record{
		{Date: date, TargetURI: "http://example.com/", RecordID: "<urn:uuid:6c6f5a66-1f5e-4c55-9a3e-3f7f1b5a1c2d>", FileID: 3, Offset: 1 << 40, Length: 99, PayloadLength: 12, Status: 200, MIMEID: 1},
		{Date: date.Truncate(time.Second), TargetURI: "dns:x", RecordID: "<urn:x>", File: "f.warc", MIME: "text/plain", ETag: `"e"`, LastModified: "yesterday"},
		{Date: date, TargetURI: "/a?b", OriginID: 1 << 27},
		{Date: time.Unix(0, 0)},
	} {
		f.Add(Append(nil, &r))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to a value that decodes the same.
		b2 := Append(nil, &r)
		r2, err := Decode(b2)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if fmt.Sprint(r) != fmt.Sprint(r2) {
			t.Fatalf("re-encoding changed the record:\n%+v\n%+v", r, r2)
		}
	})
}

// TestOriginalRoundTrip converts originals to records and back through an
// interning table, with and without origin interning.
func TestOriginalRoundTrip(t *testing.T) {
	date := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	table := map[Kind]map[string]uint64{}
	intern := func(internOrigins bool) Interner {
		return func(k Kind, s string) (uint64, error) {
			if s == "" || k == KindOrigin && !internOrigins {
				return 0, nil
			}
			if table[k] == nil {
				table[k] = map[string]uint64{}
			}
			if id, ok := table[k][s]; ok {
				return id, nil
			}
			table[k][s] = uint64(len(table[k]) + 1)
			return table[k][s], nil
		}
	}
	resolve := func(k Kind, id uint64) (string, error) {
		for s, i := range table[k] {
			if i == id {
				return s, nil
			}
		}
		return "", fmt.Errorf("unknown %s id %d", k, id)
	}
	for _, uri := range []string{"https://www.example.org/a/b?c=d#e", "http://e", "http://e?q", "dns:example.org", "urn:x:y", "http://"} {
		for _, interning := range []bool{false, true} {
			o := dedupindex.Original{Digest: "sha1:X", TargetURI: uri, Date: date, RecordID: "<urn:uuid:6c6f5a66-1f5e-4c55-9a3e-3f7f1b5a1c2d>",
				File: "a.warc.gz", Offset: 5, Length: 6, PayloadLength: 7, Status: 200, MIME: "text/html"}
			r, err := FromOriginal(o, intern(interning))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, split := SplitOrigin(uri); (r.OriginID != 0) != (interning && split) {
				t.Fatalf("%s (interning %v): origin id %d", uri, interning, r.OriginID)
			}
			back, err := Decode(Append(nil, r))
			if err != nil {
				t.Fatal(err)
			}
			got, err := back.Original("sha1:X", resolve)
			if err != nil {
				t.Fatal(err)
			}
			if got != o {
				t.Fatalf("round trip of %s (interning %v):\n%+v\nwant\n%+v", uri, interning, got, o)
			}
		}
	}
	r := &Record{Date: date, OriginID: 99, TargetURI: "/x"}
	if _, err := r.Original("sha1:X", resolve); err == nil {
		t.Fatal("an unknown origin id resolved")
	}
}
