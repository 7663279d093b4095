package postdedup

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
)

// Awkward text: every escaped byte, a trailing backslash, non-UTF-8.
const awkward = "a\tb\nc\rd\\e\\t\xff\\"

// TestLineRoundTrip: manifest and plan lines give back exactly what was
// written, awkward text, empty fields and absent parts included, and the
// sort prefix of a manifest line is what sort-joins expect.
func TestLineRoundTrip(t *testing.T) {
	date := time.Date(2024, 3, 1, 8, 0, 0, 329000000, time.UTC)
	entries := []*Entry{
		{Key: "sha1:AAAA", Path: "dir/a " + awkward + ".warc.gz", Version: "1.1", DateText: "2024-03-01T08:00:00.329Z", HeadLength: 120,
			Capture: wayside.Capture{URI: "http://x/" + awkward, Date: date, RecordID: "<urn:uuid:1>", Type: "response",
				Digest: "sha1:AAAA", Status: 200, MIME: "text/html", MIMEDetected: awkward, Metadata: `{"a":"\t"}`,
				File: "a.warc.gz", Offset: 12345, Length: 999, PayloadLength: 4096, ETag: `"e"`, LastModified: "x"},
			SameAs: "dir/z.warc.gz#0", Head: []byte("HTTP/1.1 200 OK\r\nX: \t\\\r\n\r\n"), Headers: [][2]string{{"WARC-Type", "response"}, {"X-Odd", awkward}, {"", ""}}},
		{Key: noKey, Path: "b.warc", Version: "0.17",
			Capture: wayside.Capture{Type: "revisit", Digest: "not a digest", DigestMismatch: true, Truncated: "length", Scope: "s",
				Profile: "p", RevisitOf: &wayside.Ref{}},
			NotOriginal: codeRevisit + ": already a revisit record", NotDuplicate: codeRevisit + ": x"},
		{Key: "sha1:BBBB", Path: "c.warc.gz", Version: "1.0",
			Capture:     wayside.Capture{Type: "revisit", Date: date, RevisitOf: &wayside.Ref{RecordID: "<urn:uuid:2>", TargetURI: "http://y/", Date: date}},
			NotOriginal: "revisit: r", NotDuplicate: "revisit: r"},
	}
	for i, e := range entries {
		e.Capture.Dir = filepath.Dir(e.Path)
		line := e.appendLine(nil)
		if !bytes.HasPrefix(line, e.linePrefix()) {
			t.Errorf("entry %d: line %q does not start with its sort prefix %q", i, line, e.linePrefix())
		}
		roundTrip(t, fmt.Sprintf("entry %d", i), e, line, parseEntry)
	}
	copies := []*Copy{
		{Path: "dir/a\t.warc.gz", Offset: 77, Length: 500, RecordID: "<urn:uuid:3>", URI: awkward, Version: "1.1", PayloadLength: 4096, Key: "sha1:AAAA",
			Head: []byte("HTTP/1.1 200 OK\r\n\r\n"), Headers: [][2]string{{"WARC-Date", "2024"}, {"X", awkward}},
			Original: Original{RecordID: "<urn:uuid:1>", URI: "http://x/", DateText: "2024-03-01T08:00:00Z", Digest: "sha1:AAAA", PayloadLength: 4096,
				Path: "dir/a\t.warc.gz", File: "a\t.warc.gz", Offset: 3, Length: 600}},
		{Path: "b", Offset: 0, Length: 1, RecordID: "<r>", Version: "1.0", Key: "sha1:C", Head: []byte("H"),
			Original: Original{RecordID: "<o>", File: "other.warc.gz", Offset: 9, Length: 10, External: true}},
	}
	for i, c := range copies {
		roundTrip(t, fmt.Sprintf("copy %d", i), c, c.appendLine(nil), parseCopy)
	}
}

// roundTrip checks that line, written from want, parses back to want, and
// that the line cut short or with a field too many is refused.
func roundTrip[T any](t *testing.T, name string, want T, line []byte, parse func([]byte) (T, error)) {
	t.Helper()
	if bytes.ContainsAny(line, "\n\r") {
		t.Fatalf("%s: line holds a raw newline: %q", name, line)
	}
	got, err := parse(line)
	if err != nil {
		t.Fatalf("%s: %v (line %q)", name, err, line)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s round trip:\n got %+v\nwant %+v", name, got, want)
	}
	if _, err := parse(line[:bytes.LastIndexByte(line, '\t')]); err == nil {
		t.Errorf("%s: a line without its last field parsed", name)
	}
	if _, err := parse(append(bytes.Clone(line), "\tx"...)); err == nil {
		t.Errorf("%s: a line with an extra field parsed", name)
	}
}

// TestFormatOneRefused: a manifest or plan of format 1 (JSON lines) is
// refused with an error saying what to do, naming the file.
func TestFormatOneRefused(t *testing.T) {
	dir := t.TempDir()
	man := filepath.Join(dir, "m.tsv")
	os.WriteFile(man, []byte(manifestFormat+"\t{\"format\":1,\"alg\":\"sha1\",\"source\":\"header\",\"part\":0,\"parts\":1}\n"), 0o644)
	_, err := OpenManifest(man)
	if err == nil || !strings.Contains(err.Error(), man) || !strings.Contains(err.Error(), "format 1") || !strings.Contains(err.Error(), "write it again") {
		t.Errorf("format 1 manifest: %v", err)
	}
	plan := filepath.Join(dir, "p.tsv")
	os.WriteFile(plan, []byte(planFormat+"\t{\"format\":1,\"manifests\":[],\"policy\":{}}\n"), 0o644)
	_, err = openPlans([]string{plan})
	if err == nil || !strings.Contains(err.Error(), plan) || !strings.Contains(err.Error(), "format 1") {
		t.Errorf("format 1 plan: %v", err)
	}
}
