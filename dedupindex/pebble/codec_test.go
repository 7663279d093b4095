package pebble

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/ddtest"
)

// TestCodecDataDriven pins the on-disk encoding of keys and values: a
// change here breaks existing indexes and needs a format version bump.
func TestCodecDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/codec.txt", func(t *testing.T, c ddtest.Cmd) string {
		switch c.Name {
		case "value":
			r := record{
				targetURI:    c.Arg("uri", ""),
				recordID:     c.Arg("id", ""),
				file:         c.Arg("file", ""),
				mime:         c.Arg("mime", ""),
				etag:         c.Arg("etag", ""),
				lastModified: strings.ReplaceAll(c.Arg("lastmod", ""), "_", " "),
			}
			var err error
			if r.date, err = time.Parse(time.RFC3339Nano, c.Arg("date", "2024-01-01T00:00:00Z")); err != nil {
				return err.Error()
			}
			num := func(name string) int64 { n, _ := strconv.ParseInt(c.Arg(name, "0"), 10, 64); return n }
			r.fileID, r.mimeID = uint64(num("fileid")), uint64(num("mimeid"))
			r.offset, r.length, r.payloadLength, r.status = num("offset"), num("length"), num("plen"), int(num("status"))
			b := encodeRecord(nil, &r)
			back, err := decodeRecord(b)
			if err != nil {
				return "decode: " + err.Error()
			}
			if fmt.Sprint(back) != fmt.Sprint(r) || !back.date.Equal(r.date) {
				return fmt.Sprintf("round trip mismatch:\n%+v\n%+v", back, r)
			}
			return fmt.Sprintf("%d bytes: %x", len(b), b)
		case "decode":
			b, err := hex.DecodeString(c.Pos[0])
			if err != nil {
				return err.Error()
			}
			r, err := decodeRecord(b)
			if err != nil {
				return "error: " + err.Error()
			}
			return fmt.Sprintf("date=%s uri=%q id=%q file=%d/%q offset=%d length=%d plen=%d status=%d mime=%d/%q etag=%q lastmod=%q",
				r.date.Format(time.RFC3339Nano), r.targetURI, r.recordID, r.fileID, r.file, r.offset, r.length, r.payloadLength, r.status, r.mimeID, r.mime, r.etag, r.lastModified)
		case "key":
			k := dedupindex.Key{Scope: c.Arg("scope", "s"), Digest: c.Arg("digest", ""), URL: c.Arg("url", "")}
			pk, err := parseKey(k)
			if err != nil {
				return "error: " + err.Error()
			}
			id, _ := strconv.ParseUint(c.Arg("scopeid", "1"), 10, 64)
			p := primaryKey(id, pk)
			s := secondaryKey(id, hash8(c.Arg("surt", "")), pk)
			ds, err := decodeSecondaryKey(s)
			if err != nil || !bytes.HasPrefix(p, ds.primary) {
				return fmt.Sprintf("secondary round trip failed: %v", err)
			}
			dp, err := decodePrimaryKey(p)
			if err != nil || dp.scopeID != id || dp.pk.digest() != pk.digest() || dp.pk.hasURL != pk.hasURL {
				return fmt.Sprintf("primary round trip failed: %v", err)
			}
			return fmt.Sprintf("primary %d bytes: %x\nsecondary %d bytes: %x", len(p), p, len(s), s)
		}
		t.Fatalf("unknown command %q", c.Name)
		return ""
	})
}

func FuzzDecodeRecord(f *testing.F) {
	date := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, r := range []record{
		{date: date, targetURI: "http://example.com/", recordID: "<urn:uuid:6c6f5a66-1f5e-4c55-9a3e-3f7f1b5a1c2d>", fileID: 3, offset: 1 << 40, length: 99, payloadLength: 12, status: 200, mimeID: 1},
		{date: date.Truncate(time.Second), targetURI: "dns:x", recordID: "<urn:x>", file: "f.warc", mime: "text/plain", etag: `"e"`, lastModified: "yesterday"},
		{date: time.Unix(0, 0)},
	} {
		f.Add(encodeRecord(nil, &r))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to a value that decodes the same.
		b2 := encodeRecord(nil, &r)
		r2, err := decodeRecord(b2)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if fmt.Sprint(r) != fmt.Sprint(r2) {
			t.Fatalf("re-encoding changed the record:\n%+v\n%+v", r, r2)
		}
	})
}

func FuzzDecodeKeys(f *testing.F) {
	pk, _ := parseKey(dedupindex.Key{Scope: "s", Digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", URL: "com,example)/"})
	f.Add(primaryKey(7, pk))
	f.Add(secondaryKey(300, hash8("com,example)/"), pk))
	f.Add([]byte{tagSecondary, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if dp, err := decodePrimaryKey(b); err == nil {
			if got := primaryKey(dp.scopeID, dp.pk); string(got) != string(b) {
				t.Fatalf("primary key %x re-encodes as %x", b, got)
			}
		}
		if ds, err := decodeSecondaryKey(b); err == nil {
			if got := secondaryKey(ds.scopeID, ds.surtHash, parsedKey{alg: ds.primary[len(ds.primary)-secDigestLen-1], sum: ds.primary[len(ds.primary)-secDigestLen:]}); string(got) != string(b) {
				t.Fatalf("secondary key %x re-encodes as %x", b, got)
			}
		}
	})
}
