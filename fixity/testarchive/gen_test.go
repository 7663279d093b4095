package testarchive

import (
	"bytes"
	"os"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

// TestBuiltinWARC checks that the embedded WARC is what site.go describes
// (run with -update after changing site.go) and that it loads completely.
func TestBuiltinWARC(t *testing.T) {
	var buf bytes.Buffer
	if err := writeWARC(&buf, siteRecords()); err != nil {
		t.Fatal(err)
	}
	if ddtest.Update() {
		if err := os.WriteFile("testdata/site.warc.gz", buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(buf.Bytes(), siteWARC) {
		t.Fatal("testdata/site.warc.gz is stale: run go test -run TestBuiltinWARC -update")
	}
	s, err := New("web")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	if n != len(siteRecords()) {
		t.Fatalf("loaded %d mementos, site.go has %d", n, len(siteRecords()))
	}
}
