package warcio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func corpusFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.SharedDir(t), "corpus", "warc", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type result struct {
	recs []*Record
	errs []error
}

// readLoop reads to the end, continuing past errors, like an indexer does.
// Bytes in memory are read both buffered and as a mapped file is read
// (Options.Map), which must give the same.
func readLoop(t *testing.T, rd io.Reader) result {
	t.Helper()
	res := readBuffered(t, rd)
	if br, ok := rd.(*bytes.Reader); ok {
		data := make([]byte, br.Size())
		br.ReadAt(data, 0)
		checkMemMatches(t, data, res)
	}
	return res
}

func readBuffered(t *testing.T, rd io.Reader) result {
	t.Helper()
	r := NewReader(rd, "cut.warc.gz")
	var res result
	for i := 0; i < 10000; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return res
		}
		if err != nil {
			res.errs = append(res.errs, err)
			continue
		}
		res.recs = append(res.recs, rec)
	}
	t.Fatal("reader does not end")
	return res
}

// checkCut reads data[:cut] and checks: no panic, every record that ends
// before the cut is returned unchanged, and the tail is a clean EOF exactly
// at a record boundary and ErrTruncated naming the partial record otherwise.
func checkCut(t *testing.T, full []*Record, data []byte, cut int, compressed bool) {
	t.Helper()
	res := readLoop(t, bytes.NewReader(data[:cut]))
	complete := 0
	partialAt := int64(-1)
	for _, r := range full {
		end := r.End()
		if !compressed {
			end -= 4 // a plain record is whole once its block is; the CRLFs after it may be missing
		}
		if end <= int64(cut) {
			complete++
			continue
		}
		if r.Offset < int64(cut) {
			partialAt = r.Offset
		}
		break
	}
	if len(res.recs) != complete {
		t.Fatalf("cut %d: %d records, want %d (errors %v)", cut, len(res.recs), complete, res.errs)
	}
	for i, r := range res.recs {
		if r.Offset != full[i].Offset || r.PayloadDigest != full[i].PayloadDigest || r.RecordID != full[i].RecordID {
			t.Fatalf("cut %d: record %d differs: offset %d digest %s, want %d %s", cut, i, r.Offset, r.PayloadDigest, full[i].Offset, full[i].PayloadDigest)
		}
	}
	if partialAt < 0 {
		if len(res.errs) != 0 {
			t.Fatalf("cut %d at a record boundary: errors %v, want clean EOF", cut, res.errs)
		}
		return
	}
	if len(res.errs) != 1 {
		t.Fatalf("cut %d inside the record at %d: errors %v, want one ErrTruncated", cut, partialAt, res.errs)
	}
	var e *Error
	if !errors.Is(res.errs[0], ErrTruncated) || !errors.As(res.errs[0], &e) || e.Offset != partialAt {
		t.Fatalf("cut %d: error %v, want ErrTruncated at offset %d", cut, res.errs[0], partialAt)
	}
}

func TestTruncatedGzipEveryOffset(t *testing.T) {
	for _, name := range []string{"pywb-example-wget-1-14.warc.gz", "warcio-example.warc.gz"} {
		data := corpusFile(t, name)
		full := readLoop(t, bytes.NewReader(data))
		if len(full.errs) != 0 || len(full.recs) == 0 {
			t.Fatalf("%s: %v", name, full.errs)
		}
		// Every offset of the first record (gzip header, deflate data,
		// trailer), around every member boundary, and a stride over the rest.
		cuts := map[int]bool{}
		for cut := 0; cut <= int(full.recs[0].End())+3; cut++ {
			cuts[cut] = true
		}
		for _, r := range full.recs {
			for d := -12; d <= 12; d++ {
				cuts[int(r.End())+d] = true
			}
		}
		for cut := 0; cut <= len(data); cut += 7 {
			cuts[cut] = true
		}
		for cut := range cuts {
			if cut >= 0 && cut <= len(data) {
				checkCut(t, full.recs, data, cut, true)
			}
		}
	}
}

func TestTruncatedLargeFiles(t *testing.T) {
	for _, tc := range []struct {
		name       string
		compressed bool
	}{
		{"npmwarc-CC-MAIN-20140820021334-00006.warc", false},
		{"aut-example.docs.warc.gz", true},
	} {
		data := corpusFile(t, tc.name)
		full := readLoop(t, bytes.NewReader(data))
		if len(full.errs) != 0 {
			t.Fatal(full.errs)
		}
		var cuts []int
		for cut := 0; cut <= len(data); cut += 9973 {
			cuts = append(cuts, cut)
		}
		for _, r := range full.recs { // around every boundary
			for _, d := range []int64{-5, -4, -1, 0, 1} { // trailer, boundary, next header
				if c := r.Offset + d; c >= 0 && c <= int64(len(data)) {
					cuts = append(cuts, int(c))
				}
			}
		}
		for _, cut := range cuts {
			checkCut(t, full.recs, data, cut, tc.compressed)
		}
	}
}

// TestOpenFileOfCrashedCrawler reads a ".open" file whose last record was
// cut mid-write, through Open.
func TestOpenFileOfCrashedCrawler(t *testing.T) {
	data := corpusFile(t, "pywb-iana.warc.gz")
	full := readLoop(t, bytes.NewReader(data))
	last := full.recs[len(full.recs)-1]
	cut := int(last.Offset + last.Length/2)
	path := filepath.Join(t.TempDir(), "crawl-00001.warc.gz.open")
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			t.Fatal("clean EOF on a cut file")
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrTruncated) || e.Offset != last.Offset || e.File != path {
				t.Fatalf("err %v", err)
			}
			break
		}
		n++
	}
	if n != len(full.recs)-1 {
		t.Fatalf("%d complete records, want %d", n, len(full.recs)-1)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after ErrTruncated: %v, want io.EOF", err)
	}
}

// onlyReader hides io.Seeker so the reader must resynchronise forward only.
type onlyReader struct{ io.Reader }

func TestCorruptGzipMemberIsSkipped(t *testing.T) {
	data := corpusFile(t, "pywb-iana.warc.gz")
	full := readLoop(t, bytes.NewReader(data)).recs
	for _, k := range []int{0, 100, len(full) - 1} {
		bad := append([]byte(nil), data...)
		victim := full[k]
		mid := victim.Offset + victim.Length/2
		for i := int64(0); i < 16 && mid+i < victim.End()-8; i++ {
			bad[mid+i] ^= 0x5a
		}
		modes := []bool{true}
		if k == 100 {
			modes = append(modes, false) // scan forward past the bad member without seeking back
		}
		for _, seekable := range modes {
			var rd io.Reader = bytes.NewReader(bad)
			if !seekable {
				rd = onlyReader{rd}
			}
			res := readLoop(t, rd)
			if len(res.errs) != 1 || !errors.Is(res.errs[0], ErrCorrupt) {
				t.Fatalf("record %d seekable=%v: errors %v, want one ErrCorrupt", k, seekable, res.errs)
			}
			var e *Error
			if errors.As(res.errs[0], &e); e.Offset != victim.Offset {
				t.Errorf("error offset %d, want %d", e.Offset, victim.Offset)
			}
			if len(res.recs) != len(full)-1 {
				t.Fatalf("record %d seekable=%v: %d records, want %d", k, seekable, len(res.recs), len(full)-1)
			}
			j := 0
			for i, r := range full {
				if i == k {
					continue
				}
				if res.recs[j].Offset != r.Offset || res.recs[j].PayloadDigest != r.PayloadDigest {
					t.Fatalf("after corruption of record %d: record %d at %d, want %d", k, j, res.recs[j].Offset, r.Offset)
				}
				j++
			}
		}
	}
}

func TestGarbageBetweenMembers(t *testing.T) {
	data := corpusFile(t, "warcio-example.warc.gz")
	full := readLoop(t, bytes.NewReader(data)).recs
	at := full[2].Offset
	bad := append(append(append([]byte(nil), data[:at]...), []byte("\x00garbage\x1f\x8b not a member")...), data[at:]...)
	res := readLoop(t, bytes.NewReader(bad))
	if len(res.errs) != 1 || !errors.Is(res.errs[0], ErrCorrupt) {
		t.Fatalf("errors %v", res.errs)
	}
	if len(res.recs) != len(full) {
		t.Fatalf("%d records, want %d", len(res.recs), len(full))
	}
}

func TestTrailingZeroPadding(t *testing.T) {
	data := corpusFile(t, "warcio-example.warc.gz")
	padded := append(append([]byte(nil), data...), make([]byte, 10000)...)
	res := readLoop(t, bytes.NewReader(padded))
	if len(res.errs) != 0 || len(res.recs) != 6 {
		t.Fatalf("%d records, errors %v", len(res.recs), res.errs)
	}
}

func TestCorruptPlainRecordIsSkipped(t *testing.T) {
	data := corpusFile(t, "npmwarc-CC-MAIN-20140820021334-00006.warc")
	full := readLoop(t, bytes.NewReader(data)).recs
	k := 3
	bad := append([]byte(nil), data...)
	copy(bad[full[k].Offset:], "XARC/")
	res := readLoop(t, bytes.NewReader(bad))
	if len(res.errs) != 1 || !errors.Is(res.errs[0], ErrCorrupt) {
		t.Fatalf("errors %v", res.errs)
	}
	if len(res.recs) != len(full)-1 || res.recs[k].Offset != full[k+1].Offset {
		t.Fatalf("%d records", len(res.recs))
	}
}

// TestBlockDigestDetectsDamage: a flipped byte inside an uncompressed
// record's block reads fine but no longer matches its WARC-Block-Digest.
func TestBlockDigestDetectsDamage(t *testing.T) {
	data := corpusFile(t, "npmwarc-CC-MAIN-20140820021334-00006.warc")
	full := readLoop(t, bytes.NewReader(data)).recs
	var victim *Record
	for _, r := range full {
		if r.Type == "response" && r.DeclaredBlockDigest != "" && r.HTTP != nil && !r.HTTP.Chunked && r.PayloadLength > 100 {
			victim = r
			break
		}
	}
	if victim == nil {
		t.Fatal("no response with a block digest")
	}
	bad := append([]byte(nil), data...)
	bad[victim.End()-10] ^= 1 // inside the payload, before the trailer
	r := NewReader(bytes.NewReader(bad), "bad.warc", Options{BlockDigest: true})
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec.Offset != victim.Offset {
			if rec.DeclaredBlockDigest != "" && rec.BlockDigest != rec.DeclaredBlockDigest {
				t.Errorf("undamaged record at %d fails its block digest", rec.Offset)
			}
			continue
		}
		if rec.BlockDigest == rec.DeclaredBlockDigest {
			t.Fatal("damage not detected by the block digest")
		}
		if rec.PayloadDigest == victim.PayloadDigest {
			t.Fatal("damage not visible in the payload digest")
		}
		return
	}
}
