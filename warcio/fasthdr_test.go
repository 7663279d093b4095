//go:build cgo

package warcio

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
)

// gzipMemberWith writes body as one gzip member whose header has the
// given flags, extra header bytes (after the fixed ten) and OS byte; with
// FHCRC in flags it carries the header's CRC-16, plus delta (a damaged
// one when delta is not 0).
func gzipMemberWith(t *testing.T, body string, flags byte, extra []byte, osByte byte, delta uint16) []byte {
	t.Helper()
	h := append([]byte{0x1f, 0x8b, 8, flags, 1, 2, 3, 4, 0, osByte}, extra...)
	if flags&gzipFHCRC != 0 {
		h = binary.LittleEndian.AppendUint16(h, uint16(crc32.ChecksumIEEE(h))+delta)
	}
	var d bytes.Buffer
	fw, err := flate.NewWriter(&d, 6)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(body))
	fw.Close()
	out := append(h, d.Bytes()...)
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE([]byte(body)))
	return binary.LittleEndian.AppendUint32(out, uint32(len(body)))
}

// TestFastInflateHeaderFirst: a member of an input in memory that
// libdeflate inflates before the gzip reader parses its header
// (openFastFirst) reads as the gzip reader reads it: header fields
// libdeflate parses (a name, a comment, extra data, any OS byte) and a
// header CRC-16 — checked by the gzip reader first, right or damaged —
// give the same records, errors, spans and offsets with the fast path as
// without; and the members with a sound header are served by it.
func TestFastInflateHeaderFirst(t *testing.T) {
	if !fastAvailable {
		t.Fatal("libdeflate is not built in: this test needs cgo")
	}
	rec := func(i int) string {
		body := fmt.Sprintf("record %d body", i)
		return fmt.Sprintf("WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://example.com/%d\r\nWARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:%08d-0000-0000-0000-000000000000>\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, i, len(body), body)
	}
	const fname, fcomment, fextra = 0x08, 0x10, 0x04
	members := [][]byte{
		gzipMemberWith(t, rec(0), 0, nil, 255, 0),
		gzipMemberWith(t, rec(1), fname|fcomment, []byte("name.warc\x00a comment\x00"), 3, 0),
		gzipMemberWith(t, rec(2), fextra, []byte{4, 0, 'a', 'b', 2, 0}, 200, 0),
		gzipMemberWith(t, rec(3), gzipFHCRC, nil, 3, 0),
		gzipMemberWith(t, rec(4), gzipFHCRC|fname, []byte("n\x00"), 3, 0x5a5a),
		gzipMemberWith(t, rec(5), 0, nil, 3, 0),
	}
	data := bytes.Join(members, nil)
	mem, _ := checkFastSameAsSlow(t, data, "header fields")
	slow := readFastOrSlow(t, data, "header fields", false, true)
	if len(slow.Recs) != 5 {
		t.Fatalf("read %d records without the fast path, want 5 (the member with a damaged header CRC skipped): %q", len(slow.Recs), slow.Steps)
	}
	if mem != 5 {
		t.Fatalf("the fast path served %d members, want 5", mem)
	}
}
