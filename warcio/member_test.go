package warcio

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

// gzipOf is the reference a member must equal: a fresh gzip.Writer at
// level compressing plain in one Write.
func gzipOf(t testing.TB, plain []byte, level int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkOneMember checks that member is exactly one gzip member holding
// plain, read by the standard library's reader (not the one that wrote it).
func checkOneMember(t *testing.T, member, plain []byte) {
	t.Helper()
	br := bytes.NewReader(member)
	zr, err := stdgzip.NewReader(br)
	if err != nil {
		t.Fatalf("member does not open as gzip: %v", err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("member does not inflate: %v", err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("member inflates to %d bytes, want the %d written", len(got), len(plain))
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes follow the first gzip member, want one member", br.Len())
	}
}

// testBlocks are record blocks of the sizes and kinds that matter to a
// deflate stream: empty, small, text and random data over several
// 64 KiB windows.
func testBlocks() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := []byte(strings.Repeat("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>the same sentence again</p>\n", 4000))
	return map[string][]byte{
		"empty":  nil,
		"small":  []byte("software: wayside\r\nformat: WARC File Format 1.1\r\n"),
		"text":   text,
		"random": random,
	}
}

// TestMemberWriterRecord: WriteRecord's output is byte for byte gzip of
// head + block + RecordEnd, one member, at every level; records written one
// after another with the same writer are read back by Reader at the
// offsets and stored lengths WriteRecord returned.
func TestMemberWriterRecord(t *testing.T) {
	blocks := testBlocks()
	for _, level := range []int{1, 5, 6, 9} {
		mw, err := NewMemberWriter(level)
		if err != nil {
			t.Fatal(err)
		}
		var file bytes.Buffer
		type written struct {
			id       string
			off, n   int64
			blockLen int
		}
		var want []written
		for _, name := range []string{"empty", "small", "text", "random", "small"} {
			block := blocks[name]
			h := RecordHead{Version: "1.1", Type: "resource", ID: NewRecordID(), Date: "2026-01-02T03:04:05Z",
				Fields:      []Field{{Name: "WARC-Target-URI", Value: "https://example.org/" + name}, {Name: "Content-Type", Value: "application/octet-stream"}},
				BlockDigest: digest.Of(digest.SHA1, block).String(), ContentLength: int64(len(block))}
			var plain bytes.Buffer
			h.Write(&plain)
			plain.Write(block)
			plain.WriteString(RecordEnd)

			off := int64(file.Len())
			n, err := mw.WriteRecord(&file, &h, bytes.NewReader(block))
			if err != nil {
				t.Fatalf("level %d %s: %v", level, name, err)
			}
			member := file.Bytes()[off:]
			if n != int64(len(member)) {
				t.Fatalf("level %d %s: WriteRecord returned %d, wrote %d bytes", level, name, n, len(member))
			}
			if ref := gzipOf(t, plain.Bytes(), level); !bytes.Equal(member, ref) {
				t.Fatalf("level %d %s: member (%d bytes) differs from gzip of the record (%d bytes)", level, name, len(member), len(ref))
			}
			checkOneMember(t, member, plain.Bytes())
			want = append(want, written{h.ID, off, n, len(block)})
		}
		r := NewReader(bytes.NewReader(file.Bytes()), "members.warc.gz")
		for i, w := range want {
			rec, err := r.Next()
			if err != nil {
				t.Fatalf("level %d record %d: %v", level, i, err)
			}
			if rec.RecordID != w.id || rec.Offset != w.off || rec.Length != w.n || rec.ContentLength != int64(w.blockLen) || len(rec.Anomalies) > 0 {
				t.Fatalf("level %d record %d read back as %s at %d+%d (block %d, anomalies %v), want %s at %d+%d (block %d)",
					level, i, rec.RecordID, rec.Offset, rec.Length, rec.ContentLength, rec.Anomalies, w.id, w.off, w.n, w.blockLen)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("level %d: after the records: %v, want io.EOF", level, err)
		}
	}
}

// TestMemberWriterCorpus recompresses every record of real WARC files
// with WriteMember: each member equals gzip of the record's bytes, is one
// member, and the recompressed file reads back record for record as the
// original does.
func TestMemberWriterCorpus(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	mw, err := NewMemberWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pywb-iana.warc.gz", "aut-example.pdf.warc.gz", "warcio-example.warc.gz"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		orig := readAll(t, path, Options{})
		var out bytes.Buffer
		for _, rec := range orig {
			zr, err := stdgzip.NewReader(bytes.NewReader(data[rec.Offset : rec.Offset+rec.Length]))
			if err != nil {
				t.Fatalf("%s offset %d: %v", name, rec.Offset, err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s offset %d: %v", name, rec.Offset, err)
			}
			off := int64(out.Len())
			n, err := mw.WriteMember(&out, plain)
			if err != nil {
				t.Fatal(err)
			}
			member := out.Bytes()[off:]
			if n != int64(len(member)) || !bytes.Equal(member, gzipOf(t, plain, 6)) {
				t.Fatalf("%s offset %d: member of %d bytes (returned %d) is not gzip of the record", name, rec.Offset, len(member), n)
			}
			checkOneMember(t, member, plain)
		}
		again := readAll(t, writeTemp(t, out.String()), Options{}) // content, not name, tells WARC from ARC
		if len(again) != len(orig) {
			t.Fatalf("%s: %d records after recompression, want %d", name, len(again), len(orig))
		}
		for i := range orig {
			a, b := orig[i], again[i]
			if a.RecordID != b.RecordID || a.Type != b.Type || a.PayloadDigest != b.PayloadDigest || a.ContentLength != b.ContentLength {
				t.Fatalf("%s record %d: %s %s %s %d read back as %s %s %s %d", name, i,
					a.Type, a.RecordID, a.PayloadDigest, a.ContentLength, b.Type, b.RecordID, b.PayloadDigest, b.ContentLength)
			}
		}
	}
}

// failWriter accepts max bytes, then fails.
type failWriter struct {
	n, max int
}

var errDiskFull = errors.New("no space left on device")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.max {
		k := f.max - f.n
		f.n = f.max
		return k, errDiskFull
	}
	f.n += len(p)
	return len(p), nil
}

// TestMemberWriterErrors: bad levels, a block of the wrong length and a
// failing destination are errors naming the cause, and the writer is
// usable afterwards.
func TestMemberWriterErrors(t *testing.T) {
	for _, level := range []int{-1, 10} {
		if _, err := NewMemberWriter(level); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("gzip level %d out of range 1-9", level)) {
			t.Errorf("level %d: %v, want an out-of-range error", level, err)
		}
		if _, err := NewMemberPool(level); err == nil {
			t.Errorf("pool of level %d: no error", level)
		}
	}
	mw, err := NewMemberWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	if mw.Level() != 6 {
		t.Fatalf("level 0 means %d, want 6", mw.Level())
	}
	block := testBlocks()["text"]
	h := RecordHead{Version: "1.1", Type: "resource", ID: "<urn:uuid:short>", Date: "2026-01-02T03:04:05Z", ContentLength: int64(len(block)) + 1}
	if _, err := mw.WriteRecord(io.Discard, &h, bytes.NewReader(block)); err == nil || !strings.Contains(err.Error(), "record <urn:uuid:short>: wrote") {
		t.Fatalf("short block: %v, want an error naming the record", err)
	}
	fw := &failWriter{max: 100}
	n, err := mw.WriteMember(fw, block)
	if !errors.Is(err, errDiskFull) || n != 100 {
		t.Fatalf("failing destination: %d, %v; want 100 bytes and its error", n, err)
	}
	// The writer starts a fresh member after a failed one.
	var b bytes.Buffer
	if n, err := mw.WriteMember(&b, block); err != nil || n != int64(b.Len()) || !bytes.Equal(b.Bytes(), gzipOf(t, block, 6)) {
		t.Fatalf("after a failure: %d, %v; want gzip of the record", n, err)
	}
}

// TestMemberPoolConcurrent: writers taken from a pool by several
// goroutines at once each produce gzip of their own record.
func TestMemberPoolConcurrent(t *testing.T) {
	p, err := NewMemberPool(1)
	if err != nil {
		t.Fatal(err)
	}
	blocks := testBlocks()
	want := map[string][]byte{}
	for name, b := range blocks {
		want[name] = gzipOf(t, b, 1)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(blocks))
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name, b := range blocks {
				mw := p.Get()
				var out bytes.Buffer
				_, err := mw.WriteMember(&out, b)
				p.Put(mw)
				if err != nil || !bytes.Equal(out.Bytes(), want[name]) {
					errs <- fmt.Errorf("goroutine %d, %s: %v, member equals gzip: %t", g, name, err, bytes.Equal(out.Bytes(), want[name]))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkMemberWriter compares WriteMember with a bare gzip.Writer
// reset and closed per record (what the callers did before), on 256 KiB
// records half text, half random, at level 6.
func BenchmarkMemberWriter(b *testing.B) {
	blocks := testBlocks()
	plain := append(append([]byte(nil), blocks["text"][:128<<10]...), blocks["random"][:128<<10]...)
	b.Run("MemberWriter", func(b *testing.B) {
		mw, _ := NewMemberWriter(6)
		var out bytes.Buffer
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			out.Reset()
			if _, err := mw.WriteMember(&out, plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gzip.Writer", func(b *testing.B) {
		zw, _ := gzip.NewWriterLevel(io.Discard, 6)
		var out bytes.Buffer
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			out.Reset()
			zw.Reset(&out)
			if _, err := zw.Write(plain); err != nil {
				b.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestWriteMemberStoring: a member whose tail is stored rather than
// deflated reads back as exactly the record with the standard library's
// gzip reader and with the system's gzip (readers Wayside did not write),
// as one member; its stored part costs a few bytes per 64 KiB block, and
// the part before it is deflated.
func TestWriteMemberStoring(t *testing.T) {
	gz, gzErr := exec.LookPath("gzip")
	m, err := NewMemberWriter(6)
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(strings.Repeat("WARC/1.1\r\nWARC-Type: response\r\nContent-Type: application/http\r\n", 40))
	for name, tail := range testBlocks() {
		rec := append(append([]byte{}, text...), tail...)
		for _, from := range []int{0, 1, len(text), len(text) + 0xffff, len(rec) - 1, len(rec)} {
			if from > len(rec) {
				continue
			}
			var out bytes.Buffer
			n, err := m.WriteMemberStoring(&out, rec, from)
			if err != nil || n != int64(out.Len()) {
				t.Fatalf("%s from %d: %v, %d of %d bytes counted", name, from, err, n, out.Len())
			}
			zr, err := stdgzip.NewReader(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatalf("%s from %d: %v", name, from, err)
			}
			zr.Multistream(false)
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, rec) {
				t.Fatalf("%s from %d: compress/gzip reads %d bytes (%v), want the %d of the record", name, from, len(got), err, len(rec))
			}
			if rest, _ := io.ReadAll(zr); len(rest) != 0 {
				t.Errorf("%s from %d: bytes after the member", name, from)
			}
			if from > len(text) && from < len(rec) {
				if max := len(text) + (len(rec)-len(text))/0xffff*5 + 5 + 64 + (len(rec) - from); out.Len() > max && name != "random" {
					t.Errorf("%s from %d: %d bytes, want at most %d (stored part plus block heads)", name, from, out.Len(), max)
				}
			}
			if gzErr == nil {
				cmd := exec.Command(gz, "-dc")
				cmd.Stdin = bytes.NewReader(out.Bytes())
				got, err := cmd.Output()
				if err != nil || !bytes.Equal(got, rec) {
					t.Fatalf("%s from %d: gzip -dc: %v, %d bytes, want %d", name, from, err, len(got), len(rec))
				}
			}
		}
	}
	if gzErr != nil {
		t.Logf("gzip not on PATH: checked with compress/gzip only")
	}
}
