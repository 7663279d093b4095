package warcfile_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// corpusRecords reads path sequentially: the records (with payloads) a
// location read must give back at their offsets.
func corpusRecords(t *testing.T, path string) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{KeepPayload: 1 << 22})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*warcio.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

// checkReadBack reads every record of the corpus file name through
// locs at loc (in reverse order, so every read is a new range) and
// compares it with the sequential read of the local copy.
func checkReadBack(t *testing.T, locs *warcfile.Locations, loc, local string) {
	t.Helper()
	want := corpusRecords(t, local)
	if len(want) < 2 {
		t.Fatalf("%s: only %d records", local, len(want))
	}
	for i := len(want) - 1; i >= 0; i-- {
		w := want[i]
		got, err := locs.ReadRecord(context.Background(), loc, w.Offset, w.Length, warcio.Options{KeepPayload: 1 << 22})
		if err != nil {
			t.Fatalf("%s record %d: %v", loc, i, err)
		}
		if got.Offset != w.Offset || got.TargetURI != w.TargetURI || !got.Date.Equal(w.Date) || got.PayloadDigest != w.PayloadDigest || !bytes.Equal(got.Payload, w.Payload) {
			t.Fatalf("%s offset %d: read by location differs from the local read (%s %s %s vs %s %s %s)", loc, w.Offset,
				got.TargetURI, got.Date, got.PayloadDigest, w.TargetURI, w.Date, w.PayloadDigest)
		}
	}
}

func corpusFile(t *testing.T, name string) string {
	t.Helper()
	for _, p := range testenv.CorpusWARCs(t) {
		if filepath.Base(p) == name {
			return p
		}
	}
	t.Fatalf("corpus file %s missing", name)
	return ""
}

func TestLocationsBaseNameAndFileURL(t *testing.T) {
	src := corpusFile(t, "pywb-iana.warc.gz")
	d1, d2 := t.TempDir(), t.TempDir()
	testenv.CopyFiles(t, d2, src)
	// The same name still open in the first directory is found as .open.
	open := filepath.Join(d1, "x.warc.gz"+warcio.OpenSuffix)
	data, _ := os.ReadFile(src)
	os.WriteFile(open, data, 0o644)
	locs := warcfile.NewLocations([]string{d1, d2})
	defer locs.Close()
	checkReadBack(t, locs, "pywb-iana.warc.gz", src)
	checkReadBack(t, locs, "x.warc.gz", src)
	fileURL := (&url.URL{Scheme: "file", Path: filepath.Join(d2, "pywb-iana.warc.gz")}).String()
	checkReadBack(t, locs, fileURL, src)

	for _, bad := range []string{"nope.warc.gz", "file:///nonexistent/a.warc.gz"} {
		if _, err := locs.Open(context.Background(), bad); !warcfile.IsNotExist(err) || !strings.Contains(err.Error(), strings.TrimPrefix(bad, "file://")) {
			t.Errorf("Open(%q) = %v, want not-exist naming it", bad, err)
		}
	}
	for bad, want := range map[string]string{
		"../x.warc.gz":                     "path",
		"ftp://host/x.warc.gz":             "unknown scheme",
		"http://user:pw@host/x.warc.gz":    "credentials in the URL are refused",
		"s3://AKIA:secret@b/x?endpoint=e":  "credentials in the URL are refused",
		"file://otherhost/x.warc.gz":       "local file",
		"file:relative/x.warc.gz":          "",
		"http://[::1/x":                    "",
		"https://host/x.warc.gz\x00":       "",
		"dir/x.warc.gz":                    "path",
		"":                                 "empty",
		"http://host/a.warc.gz?x=1#frag  ": "",
	} {
		err := warcfile.CheckLocation(bad)
		if bad == "http://host/a.warc.gz?x=1#frag  " {
			continue // only must not panic
		}
		if bad == "file:relative/x.warc.gz" {
			if err == nil {
				t.Errorf("CheckLocation(%q) accepted", bad)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLocation(%q) = %v, want %q", bad, err, want)
		}
		if strings.Contains(bad, "@") && err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "secret")) {
			t.Errorf("CheckLocation(%q): the error shows the credentials: %v", bad, err)
		}
	}
}

func TestJoinAndBase(t *testing.T) {
	for _, c := range []struct{ base, name, want string }{
		{"s3://b/p?endpoint=http://127.0.0.1:9000", "a.warc.gz", "s3://b/p/a.warc.gz?endpoint=http://127.0.0.1:9000"},
		{"s3://b/p/", "a.warc.gz", "s3://b/p/a.warc.gz"},
		{"s3://b", "a.warc.gz", "s3://b/a.warc.gz"},
		{"https://h/warcs/", "a.warc.gz", "https://h/warcs/a.warc.gz"},
		{"/srv/warcs", "a b.warc.gz", "file:///srv/warcs/a%20b.warc.gz"},
	} {
		got, err := warcfile.Join(c.base, c.name)
		if err != nil || got != c.want {
			t.Errorf("Join(%q, %q) = %q, %v; want %q", c.base, c.name, got, err, c.want)
		}
		if err == nil && warcfile.Base(got) != c.name {
			t.Errorf("Base(%q) = %q", got, warcfile.Base(got))
		}
		if err == nil && !strings.HasPrefix(got, "s3:") { // s3 is registered by warcfile/s3, not linked here
			if err := warcfile.CheckLocation(got); err != nil {
				t.Errorf("CheckLocation(%q): %v", got, err)
			}
		}
	}
	if _, err := warcfile.Join("s3://b/p", "../x"); err == nil {
		t.Error("Join accepted a path as a name")
	}
}

// TestLocationsHTTP reads records by Range from a real HTTP server on
// loopback (net/http's file server, which honours Range and
// If-Unmodified-Since), and sees a file replaced or cut after Open fail
// the read with an error naming the file and offset.
// serveDir serves dir on loopback (net/http's file server, which honours
// Range requests) until the test ends, and returns its base URL.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

func TestLocationsHTTP(t *testing.T) {
	src := corpusFile(t, "aut-example.pdf.warc.gz")
	dir := t.TempDir()
	testenv.CopyFiles(t, dir, src)
	base := serveDir(t, dir) + "/"
	locs := warcfile.NewLocations(nil)
	defer locs.Close()
	loc := base + "aut-example.pdf.warc.gz"
	checkReadBack(t, locs, loc, src)

	if _, err := locs.Open(context.Background(), base+"missing.warc.gz"); !warcfile.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}

	// Replaced after Open (new content, new time): the next read fails.
	recs := corpusRecords(t, src)
	last := recs[len(recs)-1]
	f, err := locs.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := filepath.Join(dir, "aut-example.pdf.warc.gz")
	data, _ := os.ReadFile(p)
	data[last.Offset+10] ^= 0xff
	os.WriteFile(p, data, 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(p, later, later)
	_, err = warcio.ReadAt(f, loc, last.Offset, last.Length, warcio.Options{})
	var ce *warcfile.ChangedError
	if !errors.As(err, &ce) || ce.Offset != last.Offset || !strings.Contains(err.Error(), loc) {
		t.Fatalf("read of a replaced file: %v, want a ChangedError at %d naming %s", err, last.Offset, loc)
	}

	// Cut short after Open: the read past the new end fails, never short.
	f2, err := locs.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if err := os.Truncate(p, last.Offset+100); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, later, later) // same time: only the size gives it away
	_, err = warcio.ReadAt(f2, loc, recs[1].Offset, recs[1].Length, warcio.Options{})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), loc) {
		t.Fatalf("read of a truncated file: %v, want a ChangedError naming %s", err, loc)
	}
}

// TestLocationsHTTPRefusesServerWithoutRange: Python's http.server
// answers every GET with the whole file; it is refused at Open.
func TestLocationsHTTPRefusesServerWithoutRange(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.MissingTool(t, "python3: %v", err)
	}
	src := corpusFile(t, "warcio-example.warc.gz")
	dir := t.TempDir()
	testenv.CopyFiles(t, dir, src)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(py, "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	loc := "http://127.0.0.1:" + strconv.Itoa(port) + "/warcio-example.warc.gz"
	locs := warcfile.NewLocations(nil)
	defer locs.Close()
	// Wait (bounded) for the server to answer.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("python http.server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err = locs.Open(context.Background(), loc)
	if err == nil || !strings.Contains(err.Error(), "ignores Range") || !strings.Contains(err.Error(), loc) {
		t.Fatalf("Open on a server without Range: %v", err)
	}
}

// TestLocationsAllowed: with Allowed set, only locations under one of the
// prefixes open; a file:// or http:// location elsewhere, a path that
// climbs out with "..", or another endpoint is refused before any I/O.
func TestLocationsAllowed(t *testing.T) {
	src := corpusFile(t, "warcio-example.warc.gz")
	dir := t.TempDir()
	testenv.CopyFiles(t, dir, src)
	locs := &warcfile.Locations{Dirs: []string{dir}, Allowed: []string{"file://" + dir, "https://h.example/p?k=1"}}
	defer locs.Close()
	if f, err := locs.Open(context.Background(), "file://"+filepath.Join(dir, "warcio-example.warc.gz")); err != nil {
		t.Fatalf("allowed file location: %v", err)
	} else {
		f.Close()
	}
	if f, err := locs.Open(context.Background(), "warcio-example.warc.gz"); err != nil {
		t.Fatalf("base name: %v", err)
	} else {
		f.Close()
	}
	for _, bad := range []string{
		"file:///etc/passwd",
		"file://" + dir + "/../" + filepath.Base(dir) + "x/a.warc.gz",
		"file://" + dir + "/../../etc/passwd",
		"http://127.0.0.1:1/a.warc.gz",
		"https://h.example/p/a.warc.gz?k=2",
		"https://h.example/other/a.warc.gz?k=1",
		"https://h.example/p/../other/a.warc.gz?k=1",
	} {
		_, err := locs.Open(context.Background(), bad)
		if err == nil || !strings.Contains(err.Error(), "not under an allowed location") {
			t.Errorf("Open(%q) = %v, want refused", bad, err)
		}
	}
}
