package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func damageGzip(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

func damageRecord(i int) []byte {
	body := strings.Repeat(fmt.Sprintf("payload %d ", i), 20)
	block := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0000dada-0000-4000-8000-%012d>\r\nWARC-Target-URI: http://example.org/%d\r\nWARC-Date: 2024-05-06T07:08:%02dZ\r\nContent-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, i, i, len(block), block)
}

// TestDamagedInputReportedByEveryReader: a WARC with bytes between gzip
// members that are no gzip data, and a gzip member holding two records
// with a junk line between them, makes every reading command name both
// stretches by file and offset and fail; with --tolerate-damage they
// succeed, still naming them (mementomap generate: --skip-bad). The gzip ARC of the report (one member,
// records around a damaged one) converts with the damaged stretch named.
func TestDamagedInputReportedByEveryReader(t *testing.T) {
	dir := t.TempDir()
	var d []byte
	d = append(d, damageGzip(damageRecord(0))...)
	junkAt := len(d)
	d = append(d, damageGzip(append(append(damageRecord(1), "junk line in the member\n"...), damageRecord(2)...))...)
	rawAt := len(d)
	d = append(d, "not gzip data\n"...)
	d = append(d, damageGzip(damageRecord(3))...)
	warc := filepath.Join(dir, "damaged.bin") // named like nothing: told by content
	if err := os.WriteFile(warc, d, 0o644); err != nil {
		t.Fatal(err)
	}
	fd := "1 0 Wayside\nURL IP-address Archive-date Content-type Archive-length\n"
	arcText := fmt.Sprintf("filedesc://r.arc 0.0.0.0 20240506070809 text/plain %d\n%s\n", len(fd), fd)
	for i, u := range []string{"http://a.example/", "http://b.example/", "http://c.example/"} {
		blk := fmt.Sprintf("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nbody%d", i)
		line := fmt.Sprintf("%s 10.0.0.1 20240506070809 text/html %d\n", u, len(blk))
		if i == 1 {
			line = strings.Replace(line, " 20240506070809 ", " 2024O506070809 ", 1)
		}
		arcText += line + blk + "\n"
	}
	arc := filepath.Join(dir, "r.arc.gz")
	if err := os.WriteFile(arc, damageGzip([]byte(arcText)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args func(n int) []string
		in   string
		want []string
	}{
		{"cdxj", func(n int) []string {
			return []string{"cdxj", "-q", "-o", filepath.Join(dir, fmt.Sprint("x", n, ".cdxj"))}
		}, warc, []string{fmt.Sprintf("offset %d", junkAt), fmt.Sprintf("offset %d", rawAt)}},
		{"index import", func(n int) []string {
			return []string{"index", "import", "-q", "--index", filepath.Join(dir, fmt.Sprint("idx", n))}
		}, warc, []string{fmt.Sprintf("offset %d", junkAt), fmt.Sprintf("offset %d", rawAt)}},
		{"characterize", func(int) []string { return []string{"characterize", "-q"} }, warc, []string{fmt.Sprintf("offset %d", junkAt), fmt.Sprintf("offset %d", rawAt)}},
		{"dedup run", func(n int) []string {
			return []string{"dedup", "run", "-q", "-o", filepath.Join(dir, fmt.Sprint("dd", n))}
		}, warc, []string{fmt.Sprintf("offset %d", junkAt), fmt.Sprintf("offset %d", rawAt)}},
		{"convert arc2warc", func(n int) []string {
			return []string{"convert", "arc2warc", "-q", "-o", filepath.Join(dir, fmt.Sprint("conv", n))}
		}, arc, []string{"2024O506070809"}},
	} {
		_, stderr, err := runCDXJCmd(t, append(tc.args(0), tc.in)...)
		if err == nil {
			t.Errorf("%s: exit 0 on damaged input\n%s", tc.name, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr does not name %q:\n%s", tc.name, w, stderr)
			}
		}
		args := tc.args(1)
		args = append(append(args[:len(args):len(args)], "--tolerate-damage"), tc.in)
		_, stderr, err = runCDXJCmd(t, args...)
		if err != nil || !strings.Contains(stderr, "tolerated (--tolerate-damage)") {
			t.Errorf("%s --tolerate-damage: %v\n%s", tc.name, err, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s --tolerate-damage: stderr does not name %q:\n%s", tc.name, w, stderr)
			}
		}
	}
	// mementomap generate stops at the first damaged stretch; --skip-bad
	// is its way of going on, naming each.
	if _, stderr, err := runCDXJCmd(t, "mementomap", "generate", "-q", "-o", filepath.Join(dir, "m0.ukvs"), warc); err == nil || !strings.Contains(stderr+err.Error(), fmt.Sprintf("offset %d", junkAt)) {
		t.Errorf("mementomap generate: %v\n%s", err, stderr)
	}
	_, stderr, err := runCDXJCmd(t, "mementomap", "generate", "-q", "--skip-bad", "-o", filepath.Join(dir, "m1.ukvs"), warc)
	if err != nil || !strings.Contains(stderr, fmt.Sprintf("offset %d", junkAt)) || !strings.Contains(stderr, fmt.Sprintf("offset %d", rawAt)) {
		t.Errorf("mementomap generate --skip-bad: %v\n%s", err, stderr)
	}
}
