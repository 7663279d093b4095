package framescan_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// TestCorpusAgreesWithReader: on every WARC and ARC file of the shared
// corpus (written by Heritrix, wget, wpull, pywb, JWAT, Common Crawl…)
// the second framing finds exactly the records warcio reads, in order, at
// the same uncompressed offsets; payloads that embed archives and records
// of every framing the corpus holds included.
func TestCorpusAgreesWithReader(t *testing.T) {
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	for _, p := range files {
		r, err := warcio.Open(p, warcio.Options{SkipPayloadDigest: true})
		if err != nil {
			t.Fatal(err)
		}
		var read []framescan.Read
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("%s: %v", p, err)
				break
			}
			key := framescan.Key(rec.RecordID, rec.TargetURI, rec.Header("WARC-Date"))
			if rec.ARC != nil {
				key = framescan.Key("", rec.ARC.URL, rec.ARC.Date)
			}
			read = append(read, framescan.Read{Key: key, Offset: rec.Offset, DataOffset: rec.DataOffset})
		}
		r.Close()
		res, err := framescan.File(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range framescan.Compare(filepath.Base(p), res, read, nil) {
			t.Error(d)
		}
		if len(res.Records) == len(read) {
			for i := range read {
				if res.Records[i].DataOffset != read[i].DataOffset {
					t.Errorf("%s record %d: uncompressed offset %d, warcio %d", filepath.Base(p), i, res.Records[i].DataOffset, read[i].DataOffset)
					break
				}
			}
		}
	}
}

// TestFileAgreesWithScan: the mapped scan (File) and the io.ReaderAt one
// (Scan) find the same records, members and gaps on every corpus file and
// on a damaged copy of one (bytes cut from the middle of a member, a
// stretch of garbage between members), so the two sources frame alike.
func TestFileAgreesWithScan(t *testing.T) {
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	var gz string
	for _, p := range files {
		if strings.HasSuffix(p, ".gz") && gz == "" {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 4096 {
				gz = p
			}
		}
	}
	if gz == "" {
		t.Fatal("no compressed corpus file over 4 KiB")
	}
	data, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append(append(append([]byte{}, data[:len(data)/3]...), "garbage between members\n"...), data[len(data)/2:]...)
	dp := filepath.Join(t.TempDir(), "damaged.warc.gz")
	if err := os.WriteFile(dp, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(files, dp) {
		mapped, err := framescan.File(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		read, err := framescan.Scan(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(mapped, read) {
			t.Errorf("%s: File found %d records, %d members, %d gaps; Scan %d, %d, %d", filepath.Base(p),
				len(mapped.Records), mapped.Members, len(mapped.Gaps), len(read.Records), read.Members, len(read.Gaps))
		}
		if p == dp && len(mapped.Gaps) == 0 {
			t.Errorf("%s: no gap found in the damaged copy", p)
		}
	}
}

// TestTinyFiles: an empty file and files of one and two bytes (too short
// for a gzip header, or a gzip magic and nothing else) frame to no
// records, mapped and read alike, the gzip magic with the rest a gap.
func TestTinyFiles(t *testing.T) {
	dir := t.TempDir()
	for i, data := range [][]byte{nil, {'W'}, {0x1f, 0x8b}, {0x1f, 0x8b, 0x08}} {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mapped, err := framescan.File(p)
		if err != nil {
			t.Fatalf("%x: %v", data, err)
		}
		read, err := framescan.Scan(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%x: %v", data, err)
		}
		if len(mapped.Records) != 0 || !reflect.DeepEqual(mapped, read) {
			t.Errorf("%x: File %+v, Scan %+v", data, mapped, read)
		}
		if len(data) >= 2 && data[0] == 0x1f {
			var gap int64
			for _, g := range mapped.Gaps {
				gap += g.Length
			}
			if gap != int64(len(data)) {
				t.Errorf("%x: gaps cover %d of %d bytes", data, gap, len(data))
			}
		}
	}
}
