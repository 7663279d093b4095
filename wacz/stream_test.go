package wacz

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCreateTo: CreateTo writes to a plain io.Writer (no file, no seek)
// exactly the bytes Create writes for the same WARC files read through
// Inputs; the result verifies; an input whose second read differs from
// the first is an error naming its member.
func TestCreateTo(t *testing.T) {
	in := corpusNamed(t, "pywb-iana.warc.gz", "warcio-example.warc.gz")
	opts := Options{Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Software: "test", TempDir: t.TempDir()}
	want, _ := create(t, in, opts)
	wb, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	res, err := CreateTo(context.Background(), struct{ io.Writer }{&buf}, fileInputs(in), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), wb) || res.Bytes != int64(buf.Len()) {
		t.Fatalf("CreateTo wrote %d bytes (result says %d), Create %d; they differ", buf.Len(), res.Bytes, len(wb))
	}
	p := filepath.Join(t.TempDir(), "streamed.wacz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	rep, err := Verify(context.Background(), p, VerifyOptions{AllowUnsigned: true})
	if err != nil || !rep.OK() || rep.IndexLines == 0 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	if ents, _ := os.ReadDir(opts.TempDir); len(ents) != 0 {
		t.Errorf("left in TempDir: %v", ents)
	}

	data, _ := os.ReadFile(in[0])
	reads := 0
	changing := Input{Name: "changing.warc.gz", Open: func() (io.ReadCloser, error) {
		reads++
		b := bytes.Clone(data)
		if reads == 2 {
			b[len(b)/2] ^= 1
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}}
	_, err = CreateTo(context.Background(), io.Discard, []Input{changing}, opts)
	if err == nil || !strings.Contains(err.Error(), "archive/changing.warc.gz: its source changed") {
		t.Errorf("an input read differently twice: %v", err)
	}
}
