package warcfile_test

import (
	"archive/zip"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/warcfile"
)

// writeWACZ writes a zip at p holding data (a corpus WARC file) stored as
// archive/NAME after a deflated member, and the same bytes deflated as
// archive/deflated.warc.gz.
func writeWACZ(t *testing.T, p, name string, data []byte) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	pad, _ := zw.CreateHeader(&zip.FileHeader{Name: "datapackage.json", Method: zip.Deflate})
	pad.Write([]byte(strings.Repeat("{}", 1000)))
	sw, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/" + name, Method: zip.Store})
	sw.Write(data)
	dw, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/deflated.warc.gz", Method: zip.Deflate})
	dw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLocationsWACZMember: a WARC file stored in a WACZ is opened through
// Locations by the WACZ's base name in the WARC directories, by a file URL
// and by an http URL (read by range through a real file server) with the
// member as "#NAME", and every record reads back as from the file itself;
// Stat gives the member's size. A deflated member, a missing member and a
// missing WACZ are errors naming them; Allowed applies to the WACZ.
func TestLocationsWACZMember(t *testing.T) {
	src := corpusFile(t, "pywb-iana.warc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeWACZ(t, filepath.Join(dir, "coll.wacz"), "pywb-iana.warc.gz", data)
	srv := serveDir(t, dir)
	httpWACZ := srv + "/coll.wacz"
	fileWACZ := (&url.URL{Scheme: "file", Path: filepath.Join(dir, "coll.wacz")}).String()

	locs := warcfile.NewLocations([]string{t.TempDir(), dir})
	defer locs.Close()
	for _, loc := range []string{
		"coll.wacz#pywb-iana.warc.gz",
		"coll.wacz#archive/pywb-iana.warc.gz",
		fileWACZ + "#pywb-iana.warc.gz",
		httpWACZ + "#pywb-iana.warc.gz",
	} {
		checkReadBack(t, locs, loc, src)
		f, err := locs.Open(context.Background(), loc)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() != int64(len(data)) || fi.Name() != "pywb-iana.warc.gz" {
			t.Errorf("%s: Stat = %v %v, want the member's %d bytes", loc, fi, err, len(data))
		}
		f.Close()
	}

	for loc, want := range map[string]string{
		"coll.wacz#deflated.warc.gz":        "compressed",
		"coll.wacz#missing.warc.gz":         "no member archive/missing.warc.gz",
		httpWACZ + "#missing.warc.gz":       "no member archive/missing.warc.gz",
		"other.wacz#pywb-iana.warc.gz":      "other.wacz",
		fileWACZ + "x#pywb-iana.warc.gz":    "coll.waczx", // not a WACZ name: the whole name is the file
		"coll.wacz#../../etc/passwd":        "path",
		httpWACZ + "#deflated.warc.gz":      "compressed",
		httpWACZ[:len(httpWACZ)-9] + "#a.w": "", // no .wacz: opened as a plain file, which is a directory listing
	} {
		_, err := locs.Open(context.Background(), loc)
		if want == "" {
			continue // only must not panic
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error naming %q", loc, err, want)
		}
	}
	if _, err := locs.Open(context.Background(), "coll.wacz#missing.warc.gz"); !warcfile.IsNotExist(err) {
		t.Errorf("a missing member: %v, want not-exist", err)
	}

	allowed := warcfile.NewLocations(nil)
	allowed.Allowed = []string{srv + "/other/"}
	defer allowed.Close()
	if _, err := allowed.Open(context.Background(), httpWACZ+"#pywb-iana.warc.gz"); err == nil || !strings.Contains(err.Error(), "not under an allowed location") {
		t.Errorf("a member of a WACZ outside Allowed: %v", err)
	}
}
