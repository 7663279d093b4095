package testenv

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"io"
	"os"
	"testing"
)

// ReadZip reads every member of the zip at p with archive/zip alone (not
// the code under test): their bytes by name, and the members in order.
func ReadZip(t testing.TB, p string) (map[string][]byte, []*zip.File) {
	t.Helper()
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	m := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %s: %v", p, f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %s: %v", p, f.Name, err)
		}
		m[f.Name] = b
	}
	return m, zr.File
}

// Rezip copies the zip src to dst, every member stored, with member
// name's bytes changed by edit (sizes and CRC recomputed: only the content
// differs).
func Rezip(t testing.TB, src, dst, name string, edit func([]byte) []byte) {
	t.Helper()
	data, files := ReadZip(t, src)
	var members []ZipMember
	for _, f := range files {
		b := data[f.Name]
		if f.Name == name {
			b = edit(bytes.Clone(b))
		}
		members = append(members, ZipMember{Name: f.Name, Data: b})
	}
	writeZip(t, dst, true, members...)
}

// ZipMember is one member WriteZip writes: stored unless Deflate.
type ZipMember struct {
	Name    string
	Data    []byte
	Deflate bool
}

// WriteZip writes a zip at path holding members in order, as archive/zip
// writes them by default (a stored member's sizes and CRC in a data
// descriptor after its bytes, not in its local header).
func WriteZip(t testing.TB, path string, members ...ZipMember) {
	t.Helper()
	writeZip(t, path, false, members...)
}

// writeZip is WriteZip; raw: stored members with their sizes and CRC in
// the local header.
func writeZip(t testing.TB, path string, raw bool, members ...ZipMember) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, m := range members {
		var w io.Writer
		switch {
		case m.Deflate:
			w, err = zw.CreateHeader(&zip.FileHeader{Name: m.Name, Method: zip.Deflate})
		case !raw:
			w, err = zw.CreateHeader(&zip.FileHeader{Name: m.Name, Method: zip.Store})
		default:
			w, err = zw.CreateRaw(&zip.FileHeader{Name: m.Name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(m.Data),
				CompressedSize64: uint64(len(m.Data)), UncompressedSize64: uint64(len(m.Data))})
		}
		if err == nil {
			_, err = w.Write(m.Data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// WACZOfWARC writes a WACZ-like zip at path holding the WARC file src
// stored as archive/member, after a deflated datapackage.json (so the
// WARC file does not start the zip), for tests that read a WARC file
// inside a WACZ by range.
func WACZOfWARC(t testing.TB, path, member, src string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	WriteZip(t, path, ZipMember{Name: "datapackage.json", Data: []byte("{}"), Deflate: true}, ZipMember{Name: "archive/" + member, Data: data})
}

// ZipMembers is ReadZip's bytes by member name.
func ZipMembers(t testing.TB, p string) map[string][]byte {
	t.Helper()
	m, _ := ReadZip(t, p)
	return m
}
