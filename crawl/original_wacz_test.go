package crawl

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// TestReadPayloadWACZMember: an original stored in a WARC file inside a
// WACZ (its location "c.wacz#NAME", as ingest indexes it) is read back by
// range through the zip, payload and digest checked, as from the WARC file
// itself; a wrong digest is still refused.
func TestReadPayloadWACZMember(t *testing.T) {
	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "aut-example.pdf.warc.gz")
	dir := t.TempDir()
	testenv.WACZOfWARC(t, filepath.Join(dir, "c.wacz"), "iana.warc.gz", src)

	r, err := warcio.Open(src, warcio.Options{KeepPayload: 1 << 22})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type != "response" || n >= 5 {
			continue
		}
		n++
		o := dedupindex.Original{File: "c.wacz#iana.warc.gz", Offset: rec.Offset, Length: rec.Length, Digest: rec.PayloadDigest, RecordID: rec.RecordID}
		got, err := ReadPayload([]string{dir}, o)
		if err != nil {
			t.Fatalf("offset %d: %v", rec.Offset, err)
		}
		if !bytes.Equal(got, rec.Payload) {
			t.Fatalf("offset %d: payload read through the WACZ differs (%d bytes, want %d)", rec.Offset, len(got), len(rec.Payload))
		}
		o.Digest = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		if _, err := ReadPayload([]string{dir}, o); err == nil {
			t.Fatalf("offset %d: a wrong digest was accepted", rec.Offset)
		}
	}
	if n == 0 {
		t.Fatal("no response record in the corpus file")
	}
	if _, err := ReadPayload([]string{dir}, dedupindex.Original{File: "c.wacz#missing.warc.gz", RecordID: "<urn:x>"}); err == nil {
		t.Fatal("a missing member was read")
	}
}
