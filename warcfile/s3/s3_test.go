package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/warcfile/s3"
)

func TestBucketOnSeaweedFS(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	b, err := s3.Open(ctx, srv.URL("coll/warcs"))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	local := filepath.Join(t.TempDir(), "A.warc.gz")
	os.WriteFile(local, data, 0o644)
	up, err := b.Upload(ctx, local, "A.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	if up.Size != int64(len(data)) || up.URL != "s3://wayside/coll/warcs/A.warc.gz" {
		t.Errorf("upload %+v", up)
	}
	if err := b.Put(ctx, "A.cdxj", []byte("line\n")); err != nil {
		t.Fatal(err)
	}
	// An object in a deeper "directory" is not listed as a file here.
	if err := srv.Client(t).MakeBucket(ctx, "other", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client(t).PutObject(ctx, "wayside", "coll/warcs/sub/B.warc.gz", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range list {
		names = append(names, i.Name)
	}
	if strings.Join(names, " ") != "A.cdxj A.warc.gz" {
		t.Errorf("List = %v", names)
	}
	o, err := b.Open(ctx, "A.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 1, 1 << 20, int64(len(data)) - 10} {
		p := make([]byte, 100)
		n, err := o.ReadAt(p, off)
		want := data[off:min(off+100, int64(len(data)))]
		if n != len(want) || !bytes.Equal(p[:n], want) || (n < 100 && err != io.EOF) || (n == 100 && err != nil) {
			t.Errorf("ReadAt(%d) = %d, %v", off, n, err)
		}
	}
	all, err := io.ReadAll(o)
	if err != nil || !bytes.Equal(all, data) {
		t.Errorf("Read: %d bytes, %v", len(all), err)
	}
	o.Close()
	if _, err := b.Stat(ctx, "missing.warc.gz"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing object: %v", err)
	}

	// Replaced behind the reader's back: a read fails naming it, never
	// returning the new bytes as the old object's.
	o, err = b.Open(ctx, "A.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client(t).PutObject(ctx, "wayside", "coll/warcs/A.warc.gz", bytes.NewReader(data[:1000]), 1000, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := o.ReadAt(make([]byte, 100), 0); err == nil {
		t.Errorf("ReadAt after the object was replaced: %d bytes, no error", n)
	} else if !strings.Contains(err.Error(), "A.warc.gz") {
		t.Errorf("error does not name the object: %v", err)
	}
	// Verify catches the replaced object.
	if err := b.Verify(ctx, "A.warc.gz", up.Size, up.SHA256); err == nil {
		t.Error("Verify passed a replaced object")
	}
}

func TestOpenRefuses(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	for u, want := range map[string]string{
		"s3://AKIA:secret@wayside/x?endpoint=" + srv.Endpoint: "credentials in the URL are refused",
		"s3://nosuchbucket/x?endpoint=" + srv.Endpoint:        "no such bucket",
		"s3://wayside/x?endpoint=ftp://h":                     "endpoint",
		"s3://wayside/x?endpoint=" + srv.Endpoint + "&foo=1":  "unknown parameter",
		"s3:///x": "no bucket",
	} {
		_, err := s3.Open(ctx, u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want %q", u, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error repeats the credentials: %v", err)
		}
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-key-0000000000")
	b, err := s3.Open(ctx, srv.URL("x"))
	if err == nil {
		_, err = b.List(ctx)
	}
	if err == nil {
		t.Error("wrong credentials accepted")
	}
}

// TestUploadServerStopped stops the server before an upload: Upload fails
// and says so, and the local file is untouched (the caller keeps it).
func TestUploadServerStopped(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	b, err := s3.Open(ctx, srv.URL("p"))
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "C.warc.gz")
	os.WriteFile(local, []byte("some warc bytes"), 0o644)
	srv.Stop()
	cctx, cancel := context.WithTimeout(ctx, 30e9)
	defer cancel()
	if _, err := b.Upload(cctx, local, "C.warc.gz"); err == nil {
		t.Fatal("upload to a stopped server succeeded")
	}
	if got, _ := os.ReadFile(local); string(got) != "some warc bytes" {
		t.Fatal("local file changed")
	}
	srv.Restart(t)
	if _, err := b.Upload(ctx, local, "C.warc.gz"); err != nil {
		t.Fatalf("upload after restart: %v", err)
	}
}
