package warcio

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func readAll(t testing.TB, path string, opts Options) []*Record {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []*Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, rec)
	}
}

// TestCorpusGolden reads every corpus WARC fully and compares a summary
// (record counts per type, digest disagreements) with testdata/corpus.golden.
// The counts were cross-checked against gowarc (TestCorpusAgreesWithGowarc).
func TestCorpusGolden(t *testing.T) {
	var out strings.Builder
	for _, path := range testenv.CorpusWARCs(t) {
		recs := readAll(t, path, Options{})
		types := map[string]int{}
		disagree := 0
		for _, rec := range recs {
			types[rec.Type]++
			if rec.Type != "revisit" && rec.DeclaredPayloadDigest != "" && rec.DeclaredPayloadDigest != rec.PayloadDigest {
				disagree++
			}
		}
		var names []string
		for k := range types {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(&out, "%s records=%d", filepath.Base(path), len(recs))
		for _, k := range names {
			fmt.Fprintf(&out, " %s=%d", k, types[k])
		}
		fmt.Fprintf(&out, " payload-digest-disagreements=%d\n", disagree)
	}
	golden(t, "testdata/corpus.golden", out.String())
}

// golden compares got with the file at path (ddtest.Golden).
func golden(t *testing.T, path, got string) { t.Helper(); ddtest.Golden(t, path, []byte(got)) }

// TestCorpusAgreesWithGowarc checks record offsets and types against
// gowarc's reader, and that records tile the file: each record's stored
// bytes end where the next begins and the last ends at the end of the file.
func TestCorpusAgreesWithGowarc(t *testing.T) {
	for _, path := range testenv.CorpusWARCs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			recs := readAll(t, path, Options{SkipPayloadDigest: true})
			ref, gerr := readGowarc(path)
			if gerr != nil {
				t.Logf("gowarc stops after %d records: %v", len(ref), gerr)
			} else if len(ref) != len(recs) {
				t.Errorf("gowarc reads %d records, warcio %d", len(ref), len(recs))
			}
			for i := range min(len(ref), len(recs)) {
				if ref[i].Offset != recs[i].Offset || ref[i].Type != recs[i].Type {
					t.Errorf("record %d: gowarc %+v, warcio offset %d type %s", i, ref[i], recs[i].Offset, recs[i].Type)
				}
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, rec := range recs {
				next := fi.Size()
				if i+1 < len(recs) {
					next = recs[i+1].Offset
				}
				if rec.End() != next {
					t.Errorf("record %d at %d: length %d ends at %d, next record at %d", i, rec.Offset, rec.Length, rec.End(), next)
				}
			}
		})
	}
}

// TestCorpusPayloadDigests recomputes every payload digest and compares it
// with the WARC-Payload-Digest header. The only disagreements allowed are
// the known writer bug of digesting the chunked transfer encoding (Heritrix
// #769, wget): for those the test checks, with its own gzip and header
// parsing, that the header equals the SHA-1 of the raw chunked body.
func TestCorpusPayloadDigests(t *testing.T) {
	checked, chunkBug := 0, 0
	for _, path := range testenv.CorpusWARCs(t) {
		for _, rec := range readAll(t, path, Options{}) {
			if rec.Type == "revisit" || rec.DeclaredPayloadDigest == "" {
				continue
			}
			checked++
			if rec.DeclaredPayloadDigest == rec.PayloadDigest {
				continue
			}
			if rec.HTTP == nil || !rec.HTTP.Chunked {
				t.Errorf("%s offset %d: computed %s, header %s (not chunked)", filepath.Base(path), rec.Offset, rec.PayloadDigest, rec.DeclaredPayloadDigest)
				continue
			}
			raw := rawHTTPBody(t, path, rec)
			if got := digest.Of(digest.SHA1, raw).String(); got != rec.DeclaredPayloadDigest {
				t.Errorf("%s offset %d: header %s is neither the de-chunked digest %s nor the raw-body digest %s",
					filepath.Base(path), rec.Offset, rec.DeclaredPayloadDigest, rec.PayloadDigest, got)
				continue
			}
			chunkBug++
			t.Logf("%s offset %d %s: header digests the chunk framing", filepath.Base(path), rec.Offset, rec.TargetURI)
		}
	}
	if checked == 0 {
		t.Fatal("no record with a payload digest header in the corpus")
	}
	t.Logf("%d payload digests checked, %d written over the chunk framing", checked, chunkBug)
}

// rawHTTPBody returns the bytes after the HTTP head of rec's block, read
// independently of Reader: gunzip the member, split on blank lines.
func rawHTTPBody(t *testing.T, path string, rec *Record) []byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var src io.Reader = io.NewSectionReader(f, rec.Offset, rec.Length)
	zr, err := gzip.NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := bytes.Cut(data, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no WARC head end in record at %d", rec.Offset)
	}
	block = block[:rec.ContentLength]
	_, body, ok := bytes.Cut(block, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no HTTP head end in record at %d", rec.Offset)
	}
	return body
}

// TestCaptureFromCorpus checks the Capture of real response and revisit
// records (Heritrix revisit with WARC-Refers-To headers).
func TestCaptureFromCorpus(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	recs := readAll(t, filepath.Join(dir, "20141129-heritrix-revisit-with-http-headers-and-new-warc-headers.warc.gz"), Options{})
	c := recs[0].Capture("x.warc.gz")
	if !c.IsRevisit() || c.RevisitOf == nil || c.RevisitOf.TargetURI == "" || c.RevisitOf.Date.IsZero() || c.Digest != recs[0].DeclaredPayloadDigest || c.Digest == "" {
		t.Errorf("revisit capture %+v (ref %+v)", c, c.RevisitOf)
	}
	if !strings.HasPrefix(c.Profile, "http://netpreserve.org/warc/1.0/revisit/") {
		t.Errorf("profile %q", c.Profile)
	}
	for _, rec := range readAll(t, filepath.Join(dir, "pywb-dupes.warc.gz"), Options{}) {
		if rec.Type != "response" {
			continue
		}
		c := rec.Capture("dupes.warc.gz")
		if c.Digest != rec.PayloadDigest || c.Status != rec.Status() || c.Offset != rec.Offset || c.Length != rec.Length || c.URI != rec.TargetURI || c.RevisitOf != nil || c.File != "dupes.warc.gz" {
			t.Errorf("response capture %+v", c)
		}
	}
}

// TestCorpusBlockDigests verifies every WARC-Block-Digest in the corpus.
func TestCorpusBlockDigests(t *testing.T) {
	checked := 0
	for _, path := range testenv.CorpusWARCs(t) {
		for _, rec := range readAll(t, path, Options{BlockDigest: true}) {
			if rec.DeclaredBlockDigest == "" {
				continue
			}
			checked++
			if rec.BlockDigest != rec.DeclaredBlockDigest {
				t.Errorf("%s offset %d: block digest %s, header %s", filepath.Base(path), rec.Offset, rec.BlockDigest, rec.DeclaredBlockDigest)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d block digests checked", checked)
	}
	t.Logf("%d block digests verified", checked)
}

// TestCaptureDigestRule: across the corpus a capture carries the declared
// payload digest; the 17 chunked responses whose writers digested the chunk
// framing (JWAT, wget) are recognised as such, not as damaged; and a record
// whose payload no longer matches its declared digest is flagged.
func TestCaptureDigestRule(t *testing.T) {
	framed := 0
	for _, path := range testenv.CorpusWARCs(t) {
		for _, rec := range readAll(t, path, Options{}) {
			c := rec.Capture("x")
			if c.DigestMismatch {
				t.Errorf("%s offset %d: digest mismatch on an intact corpus record (declared %s, computed %s)", filepath.Base(path), rec.Offset, rec.DeclaredPayloadDigest, rec.PayloadDigest)
			}
			if rec.Type == "revisit" || rec.DeclaredPayloadDigest == "" {
				continue
			}
			if c.Digest != rec.DeclaredPayloadDigest {
				t.Errorf("%s offset %d: capture digest %s, declared %s", filepath.Base(path), rec.Offset, c.Digest, rec.DeclaredPayloadDigest)
			}
			if rec.DeclaredPayloadDigest != rec.PayloadDigest {
				if rec.HTTP == nil || !rec.HTTP.Chunked || rec.ChunkedPayloadDigest != rec.DeclaredPayloadDigest {
					t.Errorf("%s offset %d: declared %s is neither the payload digest %s nor the framed one %s", filepath.Base(path), rec.Offset, rec.DeclaredPayloadDigest, rec.PayloadDigest, rec.ChunkedPayloadDigest)
				}
				framed++
			}
		}
	}
	if framed != 17 {
		t.Errorf("%d records with a chunk-framed declared digest, want the corpus's 17", framed)
	}

	body := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
	for _, tc := range []struct {
		declared string
		mismatch bool
	}{
		{"sha1:AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D", false}, // sha1("hello") in hex
		{"sha1:2222222222222222222222222222222A", true},
		{"sha256:2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824", false}, // not re-computed
	} {
		rec := "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n" +
			"WARC-Record-ID: <urn:uuid:1>\r\nWARC-Payload-Digest: " + tc.declared + "\r\nContent-Type: application/http; msgtype=response\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body + "\r\n\r\n"
		r := NewReader(strings.NewReader(rec), "t.warc")
		got, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		c := got.Capture("t.warc")
		if c.DigestMismatch != tc.mismatch || c.Complete() == tc.mismatch {
			t.Errorf("declared %s: mismatch %v complete %v, want mismatch %v", tc.declared, c.DigestMismatch, c.Complete(), tc.mismatch)
		}
	}
}

// TestPayloadDigestIfUndeclared: with the option, every corpus record
// (WARC and ARC) reads as it does by default, except that the payload of
// a record declaring a parsable WARC-Payload-Digest is not hashed — and a
// record declaring none is hashed exactly as by default.
func TestPayloadDigestIfUndeclared(t *testing.T) {
	paths := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	hashed, skipped := 0, 0
	for _, path := range paths {
		full := readAll(t, path, Options{Map: true})
		some := readAll(t, path, Options{Map: true, PayloadDigestIfUndeclared: true})
		if len(full) != len(some) {
			t.Fatalf("%s: %d records by default, %d with the option", filepath.Base(path), len(full), len(some))
		}
		for i, f := range full {
			s := some[i]
			where := fmt.Sprintf("%s record %d at %d", filepath.Base(path), i, f.Offset)
			if f.DeclaredPayloadDigest != "" {
				skipped++
				if s.PayloadDigest != "" || s.ChunkedPayloadDigest != "" || (s.HTTP != nil && s.HTTP.PayloadDigest != "") {
					t.Errorf("%s: declares %s but its payload was hashed", where, f.DeclaredPayloadDigest)
				}
				if s.Capture("f").DigestMismatch {
					t.Errorf("%s: a mismatch told without hashing", where)
				}
				// Blank what was skipped; the rest must be the same.
				f.PayloadDigest, f.ChunkedPayloadDigest = "", ""
				if f.HTTP != nil {
					f.HTTP.PayloadDigest = ""
				}
			} else {
				hashed++
				if f.PayloadDigest == "" || s.PayloadDigest != f.PayloadDigest {
					t.Errorf("%s: declares no digest: payload digest %q, default %q", where, s.PayloadDigest, f.PayloadDigest)
				}
			}
			if fc, sc := f.Capture("f"), s.Capture("f"); fc.Digest != sc.Digest || fc.PayloadLength != sc.PayloadLength {
				t.Errorf("%s: capture digest/length %q/%d, default %q/%d", where, sc.Digest, sc.PayloadLength, fc.Digest, fc.PayloadLength)
			}
			if f.Offset != s.Offset || f.Length != s.Length || f.PayloadLength != s.PayloadLength || f.MIME != s.MIME ||
				f.PayloadDigest != s.PayloadDigest || f.ChunkedPayloadDigest != s.ChunkedPayloadDigest {
				t.Errorf("%s: differs from the default reading:\n %+v\n %+v", where, s, f)
			}
		}
	}
	if hashed == 0 || skipped == 0 {
		t.Errorf("corpus gave %d records hashed and %d skipped: both kinds are needed", hashed, skipped)
	}
}
