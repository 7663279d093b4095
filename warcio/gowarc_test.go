package warcio

import (
	"crypto/sha1"
	"io"
	"testing"

	"github.com/nlnwa/gowarc"
)

// gowarcRecord is what gowarc v1.6.0 reports for one record.
type gowarcRecord struct {
	Offset int64
	Type   string
}

// readGowarc lists the records of a file as gowarc sees them, leniently
// (all error policies ErrIgnore). It is the independent reference for the
// corpus tests; err is gowarc's own error when it gives up.
func readGowarc(path string) ([]gowarcRecord, error) {
	r, err := gowarc.NewWarcFileReader(path, 0,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore),
		gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrIgnore),
		gowarc.WithBlockErrorPolicy(gowarc.ErrIgnore),
		gowarc.WithSkipParseBlock())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []gowarcRecord
	for {
		rec, off, _, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, gowarcRecord{Offset: off, Type: rec.Type().String()})
	}
}

// BenchmarkGowarcRead reads the warcgen WARC with gowarc v1.6.0 and hashes
// each HTTP payload, for comparison with BenchmarkRead.
func BenchmarkGowarcRead(b *testing.B) {
	path := benchWARC(b)
	raw := rawSize(b, path)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		r, err := gowarc.NewWarcFileReader(path, 0,
			gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore),
			gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
			gowarc.WithBlockErrorPolicy(gowarc.ErrIgnore))
		if err != nil {
			b.Fatal(err)
		}
		h := sha1.New()
		for {
			rec, _, _, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if pb, ok := rec.Block().(gowarc.PayloadBlock); ok {
				p, err := pb.PayloadBytes()
				if err != nil {
					b.Fatal(err)
				}
				h.Reset()
				io.Copy(h, p)
			} else {
				p, _ := rec.Block().RawBytes()
				io.Copy(io.Discard, p)
			}
		}
		r.Close()
	}
	cpu := cpuTime() - cpu0
	b.SetBytes(raw)
	b.ReportMetric(float64(raw)*float64(b.N)/1e6/cpu.Seconds(), "rawMB/cpu-s")
}
