package framescan_test

import (
	"io"
	"path/filepath"
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
