package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func runIndexCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = run(context.Background(), append([]string{"index"}, args...), &env{stdout: &o, stderr: &e, getenv: func(string) string { return "" }})
	return o.String(), e.String(), err
}

func TestIndexCommand(t *testing.T) {
	corpus := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	dir := filepath.Join(t.TempDir(), "idx")
	iana := filepath.Join(corpus, "pywb-iana.warc.gz")

	out, _, err := runIndexCLI(t, "import", "--index", dir, "--scope", "old", "--quiet", iana)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	for _, want := range []string{"records read:      343", "originals added:   28", "revisits skipped:  123", "bad records:       0"} {
		if !strings.Contains(out, want) {
			t.Errorf("import summary lacks %q:\n%s", want, out)
		}
	}
	// Importing again finds everything present. (28 originals: the
	// payloads of the 2xx responses; two payloads only non-2xx responses
	// carry are not originals under the default policy.)
	out, _, err = runIndexCLI(t, "import", "--index", dir, "--scope", "old", "--quiet", iana)
	if err != nil || !strings.Contains(out, "originals added:   0") || !strings.Contains(out, "already present:   28") {
		t.Fatalf("re-import: %v\n%s", err, out)
	}

	out, _, err = runIndexCLI(t, "stats", "--index", dir, "--check", "--json")
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	var st struct {
		dedupindex.Stats
		OK *bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats JSON: %v\n%s", err, out)
	}
	if st.Originals != 28 || st.Scopes["old"] != 28 || st.OK == nil || !*st.OK {
		t.Fatalf("stats = %s", out)
	}

	// By URL, then by digest in another encoding than the index's.
	out, _, err = runIndexCLI(t, "lookup", "--index", dir, "--scope", "old", "--url", "https://iana.org/")
	if err != nil {
		t.Fatalf("lookup --url: %v", err)
	}
	var o dedupindex.Original
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &o); err != nil {
		t.Fatalf("lookup --url output: %v\n%s", err, out)
	}
	if o.TargetURI != "http://www.iana.org/" || !strings.HasPrefix(o.RecordID, "<urn:uuid:") {
		t.Fatalf("lookup --url = %+v", o)
	}
	d, _ := digest.Parse(o.Digest)
	out, _, err = runIndexCLI(t, "lookup", "--index", dir, "--scope", "old", "sha1:"+d.Hex())
	if err != nil {
		t.Fatalf("lookup hex digest: %v", err)
	}
	var o2 dedupindex.Original
	if err := json.Unmarshal([]byte(out), &o2); err != nil || o2.RecordID != o.RecordID {
		t.Fatalf("lookup by digest = %s (%v), want record %s", out, err, o.RecordID)
	}

	out, _, err = runIndexCLI(t, "lookup", "--index", dir, "--scope", "old", digest.Of(digest.SHA1, []byte("absent")).Base32())
	if !errors.Is(err, errNotFound) || strings.TrimSpace(out) != "not found" {
		t.Fatalf("lookup of an absent digest = %q, %v", out, err)
	}
	if _, _, err := runIndexCLI(t, "lookup", "--index", dir, "--scope", "default", d.Base32()); !errors.Is(err, errNotFound) {
		t.Fatalf("lookup in another scope = %v, want not found", err)
	}

	var ue usageError
	if _, _, err := runIndexCLI(t, "lookup", "--index", dir, "sha1:nonsense"); !errors.As(err, &ue) {
		t.Fatalf("lookup of a malformed digest = %v, want a usage error", err)
	}
	if _, _, err := runIndexCLI(t, "frobnicate"); !errors.As(err, &ue) {
		t.Fatalf("unknown subcommand = %v, want a usage error", err)
	}
	if _, _, err := runIndexCLI(t, "stats", "--index", filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "no index at") {
		t.Fatalf("stats of a missing index = %v", err)
	}
}

func TestIndexImportBadInput(t *testing.T) {
	dir := t.TempDir()
	cdxj := filepath.Join(dir, "in.cdxj")
	data := "com,example)/ 20240101000000 {\"url\": \"http://example.com/\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"" +
		digest.Of(digest.SHA1, []byte("x")).Base32() + "\", \"length\": \"10\", \"offset\": \"0\", \"filename\": \"a.warc.gz\"}\n" +
		"this is not a cdxj line\n"
	if err := os.WriteFile(cdxj, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	out, stderr, err := runIndexCLI(t, "import", "--index", idx, "--quiet", cdxj)
	if err == nil || !strings.Contains(err.Error(), "1 bad records") {
		t.Fatalf("import with a bad line = %v", err)
	}
	if !strings.Contains(stderr, "in.cdxj line 2") || !strings.Contains(out, "originals added:   1") {
		t.Fatalf("bad line not reported with its line number, or good line lost:\n%s\n%s", stderr, out)
	}
	if _, _, err := runIndexCLI(t, "import", "--index", idx, "--format", "arc", cdxj); err == nil {
		t.Fatal("import accepted --format arc")
	}
}

// A WARC compressed as one gzip stream (not one member per record): its
// records cannot be located, so none may be an original; issue 21 found
// them counted "other skipped" with nothing on stderr and exit 0. Each
// such would-be original is a bad record, named, and the exit status 1.
func TestIndexImportOneStreamNamesUnlocatable(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-dupes.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr) // every member, as one stream
	if err != nil {
		t.Fatal(err)
	}
	var one bytes.Buffer
	zw := gzip.NewWriter(&one)
	zw.Write(plain)
	zw.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "one-stream.warc.gz")
	if err := os.WriteFile(path, one.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runIndexCLI(t, "import", "--index", filepath.Join(dir, "idx"), "--quiet", path)
	if err == nil || report(&strings.Builder{}, err, false) != exitFailure || !strings.Contains(stderr, path) || !strings.Contains(stderr, "cannot be located") {
		t.Fatalf("import of a one-stream WARC: %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	if !strings.Contains(out, "originals added:   0") {
		t.Fatalf("an unlocatable record became an original:\n%s", out)
	}
}

// index stats of an index that holds no original (a mistyped Redis
// prefix looks the same) says so and exits 1 (issue 21: "0 originals",
// exit 0); the figures are still printed.
func TestIndexStatsEmptyIndexFails(t *testing.T) {
	dir := t.TempDir()
	cdxj := filepath.Join(dir, "revisits.cdxj")
	line := `com,example)/ 20240101000000 {"url": "http://example.com/", "mime": "warc/revisit", "status": "200", "digest": "` +
		digest.Of(digest.SHA1, []byte("x")).Base32() + `", "length": "10", "offset": "0", "filename": "a.warc.gz"}` + "\n"
	if err := os.WriteFile(cdxj, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	if out, stderr, err := runIndexCLI(t, "import", "--index", idx, "-q", cdxj); err != nil || !strings.Contains(out, "originals added:   0") {
		t.Fatalf("import of revisits only: %v\n%s\n%s", err, out, stderr)
	}
	out, _, err := runIndexCLI(t, "stats", "--index", idx)
	if err == nil || report(&strings.Builder{}, err, false) != exitFailure || !strings.Contains(err.Error(), "holds nothing") || !strings.Contains(out, "originals:  0") {
		t.Fatalf("stats of an empty index: %v\n%s", err, out)
	}
}
