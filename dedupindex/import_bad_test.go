package dedupindex_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// responses lists the HTTP response records with a payload in a WARC.
func responses(t *testing.T, path string) []*warcio.Record {
	t.Helper()
	rd, err := warcio.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []*warcio.Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if rec.Type == "response" && rec.HTTP.IsResponse() && rec.PayloadLength > 0 {
			out = append(out, rec)
		}
	}
}

func corpusFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(testenv.SharedDir(t), "corpus", "warc", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("corpus file: %v", err)
	}
	return p
}

func lookupDigest(t *testing.T, ix dedupindex.Index, scope, dig string) (dedupindex.Original, bool) {
	t.Helper()
	o, ok, err := ix.Lookup(context.Background(), dedupindex.Key{Scope: scope, Digest: dig})
	if err != nil {
		t.Fatal(err)
	}
	return o, ok
}

func TestImportTruncatedWARC(t *testing.T) {
	src := corpusFile(t, "aut-example.docs.warc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	recs := responses(t, src)
	cut := recs[len(recs)/2].Offset + 100 // inside a record's gzip member
	path := filepath.Join(t.TempDir(), "truncated.warc.gz")
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	ix := openTestIndex(t)
	st, err := dedupindex.Import(context.Background(), ix, []string{path}, dedupindex.ImportOptions{BatchSize: 2})
	if err != nil {
		t.Fatalf("Import of a truncated WARC: %v", err)
	}
	if st.Bad != 1 || len(st.Errors) != 1 {
		t.Fatalf("bad = %d, errors = %v; want the one truncated record", st.Bad, st.Errors)
	}
	var ie *dedupindex.ImportError
	if !errors.As(st.Errors[0], &ie) || ie.File != path || ie.Offset != recs[len(recs)/2].Offset || !errors.Is(ie, warcio.ErrTruncated) {
		t.Fatalf("error = %v, want truncation at offset %d of %s", st.Errors[0], recs[len(recs)/2].Offset, path)
	}
	// Every complete response before the cut is indexed, the cut one is not.
	for i, rec := range recs {
		_, ok := lookupDigest(t, ix, dedupindex.DefaultScope, rec.PayloadDigest)
		if want := rec.End() <= cut; ok != want && !(want == false && digestBefore(recs[:i], rec.PayloadDigest)) {
			t.Errorf("record at %d (end %d, cut %d): indexed = %v", rec.Offset, rec.End(), cut, ok)
		}
	}
}

// digestBefore reports whether an earlier record has the same digest.
func digestBefore(recs []*warcio.Record, d string) bool {
	for _, r := range recs {
		if r.PayloadDigest == d {
			return true
		}
	}
	return false
}

func TestImportCorruptWARCContinues(t *testing.T) {
	src := corpusFile(t, "ukwa-flashfrozen-jwat-recompressed.warc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	recs := responses(t, src)
	victim := recs[len(recs)/3]
	bad := bytes.Clone(data)
	for i := victim.Offset + 20; i < victim.Offset+60 && i < victim.End(); i++ {
		bad[i] ^= 0x5a
	}
	path := filepath.Join(t.TempDir(), "corrupt.warc.gz")
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ix := openTestIndex(t)
	st, err := dedupindex.Import(ctx, ix, []string{path}, dedupindex.ImportOptions{})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if st.Bad == 0 {
		t.Fatal("a corrupt gzip member was not reported")
	}
	var ie *dedupindex.ImportError
	if !errors.As(st.Errors[0], &ie) || ie.File != path || ie.Offset != victim.Offset || !strings.Contains(ie.Error(), fmt.Sprintf("offset %d", victim.Offset)) {
		t.Fatalf("error = %v, want one naming %s offset %d", st.Errors[0], path, victim.Offset)
	}
	last := recs[len(recs)-1]
	if _, ok := lookupDigest(t, ix, dedupindex.DefaultScope, last.Capture("").Digest); !ok {
		t.Fatal("records after the corrupt one were not imported")
	}
	if _, ok := lookupDigest(t, ix, dedupindex.DefaultScope, recs[0].Capture("").Digest); !ok {
		t.Fatal("records before the corrupt one were not imported")
	}

	// Strict mode stops at the corrupt record but keeps what came before.
	ix2 := openTestIndex(t)
	st2, err := dedupindex.Import(ctx, ix2, []string{path}, dedupindex.ImportOptions{Strict: true, BatchSize: 1000})
	if !errors.As(err, &ie) || ie.Offset != victim.Offset {
		t.Fatalf("strict Import = %v, want the corrupt record's error", err)
	}
	if _, ok := lookupDigest(t, ix2, dedupindex.DefaultScope, recs[0].Capture("").Digest); !ok || st2.Originals == 0 {
		t.Fatal("strict import lost the originals read before the bad record")
	}
	if _, ok := lookupDigest(t, ix2, dedupindex.DefaultScope, last.Capture("").Digest); ok {
		t.Fatal("strict import went past the bad record")
	}
}

func cdxjLine(url, ts, mime, status, dig string) string {
	return fmt.Sprintf(`%s %s {"url": %q, "mime": %q, "status": %q, "digest": %q, "length": "100", "offset": "5", "filename": "x.warc.gz"}`,
		dedupindex.URLKey(url), ts, url, mime, status, dig)
}

func TestImportCDXAndCDXJ(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d1 := digest.Of(digest.SHA1, []byte("one"))
	d2 := digest.Of(digest.SHA1, []byte("two"))
	d3 := digest.Of(digest.SHA1, []byte("three"))
	d4 := digest.Of(digest.SHA1, []byte("four"))
	cdxj := strings.Join([]string{
		"!meta {\"note\": \"pywb header\"}",
		cdxjLine("http://example.com/one", "20240101000000", "text/html", "200", d1.Base32()),
		cdxjLine("http://example.com/one-again", "20240102000000", "warc/revisit", "-", d1.Base32()),
		cdxjLine("http://example.com/two", "20240103000000", "image/png", "200", "sha1:"+d2.Hex()),
		"com,example)/broken 2024 {not json",
		cdxjLine("dns:example.com", "20240101000000", "text/dns", "-", d3.Base32()),
		cdxjLine("http://example.com/empty", "20240101000000", "text/html", "200", digest.EmptySHA1),
		"",
	}, "\n")
	cdx := strings.Join([]string{
		" CDX N b a m s k r M S V g",
		"com,example)/three 20230505050505 http://example.com/three text/plain 200 " + d3.Base32() + " - - 321 1000 old.warc.gz",
		"com,example)/one 20230101000000 http://example.com/one text/html 200 " + d1.Base32() + " - - 100 0 old.warc.gz",
		"com,example)/rev 20230101000000 http://example.com/rev warc/revisit - " + d4.Base32() + " - - 100 0 old.warc.gz",
		"too few fields here",
		"com,example)/four 2023XX01000000 http://example.com/four text/plain 200 " + d4.Base32() + " - - 100 0 old.warc.gz",
		"",
	}, "\n")
	cdx9 := "com,example)/four 20220202020202 http://example.com/four text/plain 200 " + d4.Base32() + " - 77 nine.warc.gz\n"
	write := func(name, s string, gz bool) string {
		p := filepath.Join(dir, name)
		var b bytes.Buffer
		if gz {
			zw := gzip.NewWriter(&b)
			zw.Write([]byte(s))
			zw.Close()
		} else {
			b.WriteString(s)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pj := write("idx.cdxj", cdxj, false)
	pc := write("idx.cdx.gz", cdx, true)
	p9 := write("nine.txt", cdx9, false)
	ix := openTestIndex(t)
	st, err := dedupindex.Import(ctx, ix, []string{pj, pc, p9}, dedupindex.ImportOptions{Scope: "seed"})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	var got []string
	for _, f := range st.Files {
		got = append(got, formatFileStats(f))
	}
	for _, e := range st.Errors {
		got = append(got, strings.ReplaceAll(e.Error(), dir+"/", ""))
	}
	want := []string{
		"idx.cdxj: format=cdxj records=6 originals=2 present=0 revisits=1 skipped=2 bad=1",
		"idx.cdx.gz: format=cdx records=5 originals=1 present=1 revisits=1 skipped=0 bad=2",
		"nine.txt: format=cdx records=1 originals=1 present=0 revisits=0 skipped=0 bad=0",
	}
	if strings.Join(got[:3], "\n") != strings.Join(want, "\n") {
		t.Fatalf("file stats:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, wantLine := range []string{"idx.cdxj line 5", "idx.cdx.gz line 5", "idx.cdx.gz line 6"} {
		if !strings.Contains(got[3+i], wantLine) {
			t.Errorf("error %d = %s, want it to name %s", i, got[3+i], wantLine)
		}
	}
	o, ok := lookupDigest(t, ix, "seed", d1.String())
	if !ok || o.TargetURI != "http://example.com/one" || o.Date.Format("20060102150405") != "20240101000000" || o.File != "x.warc.gz" || o.Status != 200 {
		t.Fatalf("CDXJ original = %+v, %v", o, ok)
	}
	o, ok = lookupDigest(t, ix, "seed", d3.String())
	if !ok || o.Offset != 1000 || o.Length != 321 || o.File != "old.warc.gz" || o.MIME != "text/plain" {
		t.Fatalf("CDX original = %+v, %v", o, ok)
	}
	o, ok = lookupDigest(t, ix, "seed", d4.String())
	if !ok || o.File != "nine.warc.gz" || o.Offset != 77 {
		t.Fatalf("9-field CDX original = %+v, %v", o, ok)
	}
	// A truncated gzip CDX reports the line where reading failed.
	full, _ := os.ReadFile(pc)
	pt := filepath.Join(dir, "trunc.cdx.gz")
	os.WriteFile(pt, full[:len(full)-12], 0o644)
	st, err = dedupindex.Import(ctx, ix, []string{pt}, dedupindex.ImportOptions{Scope: "seed"})
	if err != nil || st.Bad != 3 || !strings.Contains(st.Errors[len(st.Errors)-1].Error(), "trunc.cdx.gz line") {
		t.Fatalf("truncated gzip CDX: %v %+v %v", err, st.FileStats, st.Errors)
	}
}

// TestImportThenDedup seeds an index from a WARC and checks that the
// Deduper then writes revisits pointing at the imported originals.
func TestImportThenDedup(t *testing.T) {
	ctx := context.Background()
	src := corpusFile(t, "pywb-iana.warc.gz")
	ix := openTestIndex(t)
	if _, err := dedupindex.Import(ctx, ix, []string{src}, dedupindex.ImportOptions{Scope: "2014"}); err != nil {
		t.Fatal(err)
	}
	d, err := dedupindex.NewDeduper(ix, dedupindex.Policy{Scope: "2025", ReadOnlyScopes: []string{"2014"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range responses(t, src) {
		if st := rec.Status(); st < 200 || st > 299 {
			continue // not an original under the default policy (2xx), as in a crawl or ingest
		}
		dg, _ := digest.Parse(rec.PayloadDigest)
		dec, err := d.Decide(ctx, dedupindex.Candidate{URI: rec.TargetURI + "?again", Digest: "sha1:" + dg.Hex(), PayloadLength: rec.PayloadLength, Status: 200})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Action != dedupindex.WriteRevisit || dec.Scope != "2014" || dec.Original.File != "pywb-iana.warc.gz" {
			t.Fatalf("%s: decision %+v, want a revisit of the imported original", rec.TargetURI, dec)
		}
		if dec.Original.Digest != rec.PayloadDigest || dec.Original.Date.IsZero() || dec.Original.RecordID == "" {
			t.Fatalf("%s: original %+v lacks what a revisit needs", rec.TargetURI, dec.Original)
		}
	}
	st, _ := ix.Stats(ctx)
	if st.Scopes["2025"] != 0 {
		t.Fatalf("the read-only scope's duplicates were written to the read-write scope: %+v", st)
	}
}

// FuzzImportLines feeds arbitrary bytes to the CDX and CDXJ importers: they
// must not panic, must account for every line, and must index only what
// they report as added.
func FuzzImportLines(f *testing.F) {
	d := digest.Of(digest.SHA1, []byte("x")).Base32()
	f.Add([]byte(cdxjLine("http://example.com/", "20240101000000", "text/html", "200", d) + "\n"))
	f.Add([]byte(" CDX N b a m s k r M S V g\ncom,example)/ 20240101000000 http://example.com/ text/html 200 " + d + " - - 10 0 a.warc.gz\n"))
	f.Add([]byte("com,example)/ 2024 http://example.com/ text/html 200 " + d + " - 0 a.warc.gz\r\n\n!x\n"))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ix := openTestIndex(t)
		for _, format := range []dedupindex.Format{dedupindex.FormatCDX, dedupindex.FormatCDXJ} {
			st, err := dedupindex.Import(context.Background(), ix, []string{path}, dedupindex.ImportOptions{Format: format, Scope: string(format)})
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			if st.Originals+st.Present+st.Revisits+st.Skipped+st.Bad < st.Records {
				t.Fatalf("%s: %+v does not account for every line", format, st.FileStats)
			}
			s, err := ix.Stats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s.Scopes[string(format)] != st.Originals {
				t.Fatalf("%s: index holds %d originals, import reported %d", format, s.Scopes[string(format)], st.Originals)
			}
		}
	})
}
