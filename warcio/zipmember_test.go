package warcio

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestOpenZipMember: a WARC file stored in a WACZ reads through the zip by
// range exactly as the file itself (records, offsets, lengths, digests);
// a deflated member and a missing one are errors naming them; a real file
// whose name looks like a member name is read as that file.
func TestOpenZipMember(t *testing.T) {
	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := filepath.Join(dir, "c.wacz")
	f, _ := os.Create(w)
	zw := zip.NewWriter(f)
	pad, _ := zw.CreateHeader(&zip.FileHeader{Name: "datapackage.json", Method: zip.Deflate})
	pad.Write([]byte(strings.Repeat("{}", 1000)))
	sw, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/pywb-iana.warc.gz", Method: zip.Store})
	sw.Write(data)
	dw, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/deflated.warc.gz", Method: zip.Deflate})
	dw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	type rec struct {
		typ, uri, digest string
		off, n           int64
	}
	read := func(p string) []rec {
		t.Helper()
		r, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []rec
		for {
			x, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, rec{x.Type, x.TargetURI, x.PayloadDigest, x.Offset, x.Length})
		}
		return out
	}
	want := read(src)
	name := JoinMember(w, "archive/pywb-iana.warc.gz")
	got := read(name)
	if len(want) < 3 || len(got) != len(want) {
		t.Fatalf("%d records from the member, %d from the file", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %+v through the zip, %+v from the file", i, got[i], want[i])
		}
	}
	if n, err := Size(name); err != nil || n != int64(len(data)) {
		t.Errorf("Size: %d, %v; want %d", n, err, len(data))
	}
	if _, err := Open(JoinMember(w, "archive/deflated.warc.gz")); err == nil || !strings.Contains(err.Error(), "archive/deflated.warc.gz is compressed") {
		t.Errorf("deflated member: %v", err)
	}
	if _, err := Open(JoinMember(w, "archive/none.warc.gz")); err == nil || !strings.Contains(err.Error(), "no member archive/none.warc.gz") {
		t.Errorf("missing member: %v", err)
	}
	literal := filepath.Join(dir, "odd.wacz#archive", "x.warc.gz")
	os.MkdirAll(filepath.Dir(literal), 0o755)
	os.WriteFile(literal, data, 0o644)
	if got := read(literal); len(got) != len(want) {
		t.Errorf("a file named like a member: %d records", len(got))
	}
}
