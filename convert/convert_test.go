package convert

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// convertOne converts path into a new temporary directory.
func convertOne(t *testing.T, path string, opts Options) Result {
	t.Helper()
	res, err := ARCToWARC(context.Background(), path, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("%s: %v", path, res.Problems)
	}
	return res
}

// readRecords reads every record of a file, failing on any read error.
func readRecords(t *testing.T, path string) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{BlockDigest: true})
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
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, rec)
	}
}

// TestARCToWARCCorpus converts every corpus ARC file, in WARC 1.1 and 1.0:
// the output passes gowarc's strict validation, holds one record per ARC
// record plus the warcinfo and source-list records, passes Verify, and its
// captures are the ARC's captures (same URI, date, media type and payload
// digest, and the same HTTP status for HTTP captures).
func TestARCToWARCCorpus(t *testing.T) {
	for _, path := range testenv.CorpusARCs(t) {
		for _, version := range []string{Version11, Version10} {
			t.Run(filepath.Base(path)+"/"+version, func(t *testing.T) {
				arcRecs := readRecords(t, path)
				res := convertOne(t, path, Options{Version: version})
				if res.Records != len(arcRecs) {
					t.Errorf("converted %d records, the ARC holds %d", res.Records, len(arcRecs))
				}
				if n := testenv.StrictWARC(t, res.WARC); n != len(arcRecs)+2 {
					t.Errorf("gowarc reads %d records, want %d (ARC records + warcinfo + source list)", n, len(arcRecs)+2)
				}
				warcRecs := readRecords(t, res.WARC)
				for _, rec := range warcRecs {
					if rec.Version != version {
						t.Fatalf("record at %d is WARC/%s, want %s", rec.Offset, rec.Version, version)
					}
				}
				if warcRecs[0].Type != "warcinfo" || warcRecs[1].Type != "metadata" || warcRecs[1].Header("WARC-Concurrent-To") != warcRecs[0].RecordID {
					t.Errorf("the file does not start with warcinfo + the filedesc metadata record concurrent to it")
				}
				rep, err := Verify(context.Background(), path, res.WARC)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.OK() || rep.Matched != len(arcRecs) {
					t.Fatalf("verify: %+v", rep)
				}
				sameCaptures(t, path, arcRecs, res.WARC, warcRecs)
			})
		}
	}
}

// sameCaptures compares the captures (Capture.IsCapture) of an ARC file and
// its conversion, in order.
func sameCaptures(t *testing.T, arcPath string, arcRecs []*warcio.Record, warcPath string, warcRecs []*warcio.Record) {
	t.Helper()
	var a, w []*warcio.Record
	for _, r := range arcRecs {
		if r.Capture("").IsCapture() {
			a = append(a, r)
		}
	}
	for _, r := range warcRecs {
		if r.Capture("").IsCapture() {
			w = append(w, r)
		}
	}
	if len(a) != len(w) || len(a) == 0 {
		t.Fatalf("%d ARC captures, %d WARC captures", len(a), len(w))
	}
	for i := range a {
		ca, cw := a[i].Capture(filepath.Base(arcPath)), w[i].Capture(filepath.Base(warcPath))
		if strings.ReplaceAll(ca.URI, " ", "%20") != cw.URI || !ca.Date.Equal(cw.Date) || ca.Digest != cw.Digest || ca.MIME != cw.MIME {
			t.Errorf("capture %d: ARC %s %s %s %s, WARC %s %s %s %s", i, ca.URI, ca.Date, ca.MIME, ca.Digest, cw.URI, cw.Date, cw.MIME, cw.Digest)
		}
		// A non-HTTP ARC record is a response with status 200 to pywb, its
		// conversion a resource record, which has no status.
		if a[i].HTTP != nil && ca.Status != cw.Status {
			t.Errorf("capture %d %s: status %d in the ARC, %d in the WARC", i, ca.URI, ca.Status, cw.Status)
		}
		if a[i].HTTP == nil && cw.Type != "resource" {
			t.Errorf("capture %d %s: non-HTTP record became %s", i, ca.URI, cw.Type)
		}
	}
}

// TestInputUntouched: converting never changes the input file.
func TestInputUntouched(t *testing.T) {
	for _, path := range testenv.CorpusARCs(t) {
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		convertOne(t, path, Options{})
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatalf("%s changed", path)
		}
	}
}

// members splits a gzip-per-record file into its members.
func members(t *testing.T, path string) [][]byte {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{SkipPayloadDigest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data[rec.Offset:rec.End()])
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestVerifyCatchesTampering converts the Heritrix ARC, then damages the
// conversion three ways — a payload byte changed (headers untouched), a
// record removed, a capture added — and checks that Verify reports each.
func TestVerifyCatchesTampering(t *testing.T) {
	arc := corpusARC(t, "aut-example.arc.gz")
	res := convertOne(t, arc, Options{})
	ms := members(t, res.WARC)
	const victim = 5 // a response record (0 = warcinfo, 1 = filedesc)
	write := func(t *testing.T, ms [][]byte) string {
		p := filepath.Join(t.TempDir(), "tampered.warc.gz")
		if err := os.WriteFile(p, bytes.Join(ms, nil), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	verify := func(t *testing.T, p string) *Report {
		rep, err := Verify(context.Background(), arc, p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() {
			t.Fatalf("tampered conversion verified: %+v", rep)
		}
		return rep
	}
	t.Run("payload-byte", func(t *testing.T) {
		plain := gunzip(t, ms[victim])
		i := bytes.LastIndex(plain, []byte("\r\n\r\n")) - 10
		plain[i] ^= 0x20
		tampered := append([][]byte(nil), ms...)
		tampered[victim] = gzipBytes(t, plain)
		rep := verify(t, write(t, tampered))
		if len(rep.Damaged) != 2 || len(rep.Missing) != 1 || len(rep.Extra) != 1 {
			t.Errorf("want the record damaged (block and payload digests), missing and extra: %+v", rep)
		}
	})
	t.Run("record-removed", func(t *testing.T) {
		tampered := append(append([][]byte(nil), ms[:victim]...), ms[victim+1:]...)
		rep := verify(t, write(t, tampered))
		if len(rep.Missing) != 1 || len(rep.Extra) != 0 || len(rep.Damaged) != 0 || rep.Missing[0].Offset == 0 {
			t.Errorf("want one missing record: %+v", rep)
		}
	})
	t.Run("capture-added", func(t *testing.T) {
		tampered := append(append([][]byte(nil), ms...), ms[victim])
		rep := verify(t, write(t, tampered))
		if len(rep.Extra) != 1 || len(rep.Missing) != 0 {
			t.Errorf("want one extra record: %+v", rep)
		}
	})
}

// TestExistingOutputKept: an existing output file is an error unless
// Overwrite is set, and is then replaced whole.
func TestExistingOutputKept(t *testing.T) {
	arc := testenv.CorpusARCs(t)[0]
	dir := t.TempDir()
	out := filepath.Join(dir, OutputName(arc))
	if err := os.WriteFile(out, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ARCToWARC(context.Background(), arc, dir, Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("want an error for the existing output, got %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Fatal("existing output changed")
	}
	if _, err := ARCToWARC(context.Background(), arc, dir, Options{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(context.Background(), arc, out); err != nil || !rep.OK() {
		t.Fatalf("overwritten output does not verify: %v %+v", err, rep)
	}
}

// corpusARC returns the path of a corpus ARC file.
func corpusARC(t *testing.T, name string) string {
	t.Helper()
	for _, p := range testenv.CorpusARCs(t) {
		if filepath.Base(p) == name {
			return p
		}
	}
	t.Fatalf("%s missing from the corpus", name)
	return ""
}
