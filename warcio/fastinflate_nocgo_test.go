//go:build !cgo

package warcio

import (
	"testing"

	"github.com/wayside-archive/wayside/internal/warcgen"
)

// TestNoFastInflateWithoutCgo: without cgo an in-memory input is read by
// the gzip reader alone, and read right.
func TestNoFastInflateWithoutCgo(t *testing.T) {
	data := warcgen.Gzip(warcgen.WARCRecord(1, "body").B)
	r := newMemReader(data, "x", Options{})
	rec, err := r.Next()
	if err != nil || rec.RecordID != "<urn:uuid:00000000-0000-0000-0000-000000000001>" || rec.Length != int64(len(data)) {
		t.Fatalf("%+v, %v", rec, err)
	}
	if fastAvailable || r.fast != nil {
		t.Fatal("the fast path is on without cgo")
	}
}
