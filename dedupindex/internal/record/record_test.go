package record

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/ddtest"
)

// codecs are the two encodings of a record: the varint one pebble stores
// and the packed one Redis stores.
var codecs = map[string]struct {
	append func([]byte, *Record) []byte
	decode func([]byte) (Record, error)
}{
	"value":  {Append, Decode},
	"packed": {AppendPacked, DecodePacked},
}

// TestRecordDataDriven pins the stored encodings of values
// (testdata/record.txt: the varint encoding; testdata/packed.txt: the
// packed one): a change here breaks existing indexes and needs a format
// version bump.
func TestRecordDataDriven(t *testing.T) {
	for _, file := range []string{"testdata/record.txt", "testdata/packed.txt"} {
		t.Run(file, func(t *testing.T) { ddtest.Run(t, file, runRecordCmd) })
	}
}

func runRecordCmd(t *testing.T, c *ddtest.Case) string {
	name, decoding := strings.CutPrefix(c.Cmd, "decode-")
	if c.Cmd == "decode" {
		name, decoding = "value", true
	}
	codec, ok := codecs[name]
	if !ok {
		t.Fatalf("unknown command %q", c.Cmd)
	}
	if decoding {
		b, err := hex.DecodeString(c.Positional()[0])
		if err != nil {
			return err.Error()
		}
		r, err := codec.decode(b)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("date=%s uri=%q id=%q file=%d/%q offset=%d length=%d plen=%d status=%d mime=%d/%q etag=%q lastmod=%q origin=%d",
			r.Date.Format(time.RFC3339Nano), r.TargetURI, r.RecordID, r.FileID, r.File, r.Offset, r.Length, r.PayloadLength, r.Status, r.MIMEID, r.MIME, r.ETag, r.LastModified, r.OriginID)
	}
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
	b := codec.append(nil, &r)
	sum := 0
	for _, f := range FieldSizes(&r, name == "packed") {
		sum += f.Bytes
	}
	if sum != len(b) {
		return fmt.Sprintf("field sizes add up to %d, not %d: %v", sum, len(b), FieldSizes(&r, name == "packed"))
	}
	back, err := codec.decode(b)
	if err != nil {
		return "decode: " + err.Error()
	}
	if fmt.Sprint(back) != fmt.Sprint(r) || !back.Date.Equal(r.Date) {
		return fmt.Sprintf("round trip mismatch:\n%+v\n%+v", back, r)
	}
	return fmt.Sprintf("%d bytes: %x", len(b), b)
}

// fuzzRecords seed the fuzz targets of both codecs.
var fuzzRecords = func() []Record {
	date := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	return []Record{
		{Date: date, TargetURI: "http://example.com/", RecordID: "<urn:uuid:6c6f5a66-1f5e-4c55-9a3e-3f7f1b5a1c2d>", FileID: 3, Offset: 1 << 40, Length: 99, PayloadLength: 12, Status: 200, MIMEID: 1},
		{Date: date.Truncate(time.Second), TargetURI: "dns:x", RecordID: "<urn:x>", File: "f.warc", MIME: "text/plain", ETag: `"e"`, LastModified: "yesterday"},
		{Date: date.Truncate(time.Microsecond), TargetURI: "/section-1/article-22.html?ref=3", OriginID: 1 << 27, FileID: 1, ETag: `W/"5d-8a1b"`, LastModified: "Mon, 06 May 2024 07:08:09 GMT", Status: 304},
		{Date: time.Unix(0, 0)},
	}
}()

// fuzzCodec checks that whatever a codec decodes re-encodes to a value
// that decodes the same.
func fuzzCodec(f *testing.F, name string) {
	codec := codecs[name]
	for _, r := range fuzzRecords {
		f.Add(codec.append(nil, &r))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := codec.decode(b)
		if err != nil {
			return
		}
		b2 := codec.append(nil, &r)
		r2, err := codec.decode(b2)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if fmt.Sprint(r) != fmt.Sprint(r2) {
			t.Fatalf("re-encoding changed the record:\n%+v\n%+v", r, r2)
		}
	})
}

func FuzzDecodeRecord(f *testing.F) { fuzzCodec(f, "value") }

func FuzzDecodePacked(f *testing.F) { fuzzCodec(f, "packed") }

// textAll decodes one text that must fill the decoder's bytes.
func (d *decoder) textAll() (string, error) {
	s := d.text()
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return s, d.err
}

// TestPackedText: any string — ETags and URIs of every byte value and
// length — comes back exactly, Huffman-coded or not, and the URI paths of
// real crawls are coded shorter.
func TestPackedText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var strs []string
	for n := range 300 {
		b := make([]byte, n)
		for i := range b {
			if n%2 == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = "abcdefghijklmnopqrstuvwxyz0123456789/-._?=&%"[rng.IntN(44)]
			}
		}
		strs = append(strs, string(b))
	}
	strs = append(strs, `""`, `"`, `W/"`, `W/""`, `W/"x"`, `"a"b"`)
	for _, s := range strs {
		back, err := (&decoder{b: appendText(nil, s)}).textAll()
		if err != nil || back != s {
			t.Fatalf("text %q came back as %q (%v)", s, back, err)
		}
		if s == "" {
			continue
		}
		r := Record{Date: time.Unix(1, 0).UTC(), TargetURI: s, FileID: 1}
		got, err := DecodePacked(AppendPacked(nil, &r))
		if err != nil || got.TargetURI != s {
			t.Fatalf("URI %q came back as %q (%v)", s, got.TargetURI, err)
		}
	}
	for _, path := range []string{"/wiki/Special:Search?search=web+archive&go=Go", "/wp-content/uploads/2024/05/header-image-1024x768.jpg"} {
		if enc, ok := huffEncode(path); !ok || len(enc) > len(path)*3/4 {
			t.Errorf("%s: coded in %d bytes (Huffman %v), want at most 3/4 of %d", path, len(enc), ok, len(path))
		}
	}
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
			for name, codec := range codecs {
				back, err := codec.decode(codec.append(nil, r))
				if err != nil {
					t.Fatal(err)
				}
				got, err := back.Original("sha1:X", resolve)
				if err != nil {
					t.Fatal(err)
				}
				if got != o {
					t.Fatalf("%s round trip of %s (interning %v):\n%+v\nwant\n%+v", name, uri, interning, got, o)
				}
			}
		}
	}
	r := &Record{Date: date, OriginID: 99, TargetURI: "/x"}
	if _, err := r.Original("sha1:X", resolve); err == nil {
		t.Fatal("an unknown origin id resolved")
	}
}
