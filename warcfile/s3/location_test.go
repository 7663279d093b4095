package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcfile/s3"
	"github.com/wayside-archive/wayside/warcio"
)

// TestLocationsS3 reads every record of real WARC files by range from
// SeaweedFS through warcfile.Locations (the s3 scheme this package
// registers) and compares each with the sequential read of the local
// file; then the object is cut and replaced behind an open reader.
func TestLocationsS3(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	b, err := s3.Open(ctx, srv.URL("coll/warcs"))
	if err != nil {
		t.Fatal(err)
	}
	locs := warcfile.NewLocations(nil)
	defer locs.Close()
	var last *warcio.Record
	var lastLoc string
	for _, p := range testenv.CorpusWARCs(t) {
		name := filepath.Base(p)
		if name != "pywb-iana.warc.gz" && name != "aut-example.pdf.warc.gz" && name != "npmwarc-CC-MAIN-20140820021334-00006.warc" {
			continue
		}
		if _, err := b.Upload(ctx, p, name); err != nil {
			t.Fatal(err)
		}
		loc := b.Location(name)
		if !strings.Contains(loc, "endpoint=") || warcfile.Base(loc) != name {
			t.Fatalf("Location = %q", loc)
		}
		if err := warcfile.CheckLocation(loc); err != nil {
			t.Fatal(err)
		}
		want := readLocal(t, p)
		for i := len(want) - 1; i >= 0; i-- {
			w := want[i]
			got, err := locs.ReadRecord(ctx, loc, w.Offset, w.Length, warcio.Options{KeepPayload: 1 << 22})
			if err != nil {
				t.Fatalf("%s record %d: %v", loc, i, err)
			}
			if got.TargetURI != w.TargetURI || !got.Date.Equal(w.Date) || got.PayloadDigest != w.PayloadDigest || !bytes.Equal(got.Payload, w.Payload) {
				t.Fatalf("%s offset %d: differs from the local read", loc, w.Offset)
			}
		}
		last, lastLoc = want[len(want)-1], loc
	}
	if last == nil {
		t.Fatal("no corpus file uploaded")
	}
	if _, err := locs.Open(ctx, b.Location("missing.warc.gz")); !warcfile.IsNotExist(err) {
		t.Errorf("missing object: %v", err)
	}

	// Replaced behind an open reader (same size, one byte changed): the
	// read fails with a ChangedError naming the location, not new bytes.
	f, err := locs.Open(ctx, lastLoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := "coll/warcs/" + warcfile.Base(lastLoc)
	obj, err := srv.Client(t).GetObject(ctx, "wayside", key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	data[last.Offset+5] ^= 0xff
	if _, err := srv.Client(t).PutObject(ctx, "wayside", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = warcio.ReadAt(f, lastLoc, last.Offset, last.Length, warcio.Options{})
	var ce *warcfile.ChangedError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), warcfile.Base(lastLoc)) {
		t.Fatalf("read of a replaced object: %v, want a ChangedError naming it", err)
	}
}

func readLocal(t *testing.T, path string) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{KeepPayload: 1 << 22})
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
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}
