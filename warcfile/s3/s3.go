package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// Bucket is a prefix of an S3 bucket holding WARC files.
type Bucket struct {
	c      *minio.Client
	bucket string
	prefix string // "" or ending in "/"
	raw    string // the location, for messages (no credentials in it)
	query  string // the location's parameters (endpoint=…), as given
}

// Open connects to the location u ("s3://BUCKET/PREFIX?endpoint=…").
func Open(ctx context.Context, u string) (*Bucket, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	switch {
	case pu.Scheme != "s3":
		return nil, fmt.Errorf("s3: %s: not an s3:// URL", u)
	case pu.User != nil:
		return nil, fmt.Errorf("s3: %s://%s: credentials in the URL are refused: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or use the shared credentials file", pu.Scheme, pu.Host)
	case pu.Host == "":
		return nil, fmt.Errorf("s3: %s: no bucket", u)
	}
	q := pu.Query()
	endpoint, secure := "s3.amazonaws.com", true
	if e := q.Get("endpoint"); e != "" {
		eu, err := url.Parse(e)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return nil, fmt.Errorf("s3: %s: endpoint %q: want http://HOST:PORT or https://HOST", u, e)
		}
		endpoint, secure = eu.Host, eu.Scheme == "https"
	}
	for k := range q {
		if k != "endpoint" && k != "region" && k != "path-style" {
			return nil, fmt.Errorf("s3: %s: unknown parameter %q (endpoint, region, path-style)", u, k)
		}
	}
	lookup := minio.BucketLookupAuto
	if ps := q.Get("path-style"); ps != "" {
		on, err := strconv.ParseBool(ps)
		if err != nil {
			return nil, fmt.Errorf("s3: %s: path-style=%q: want true or false", u, ps)
		}
		if on {
			lookup = minio.BucketLookupPath
		}
	} else if q.Get("endpoint") != "" {
		lookup = minio.BucketLookupPath // most S3-compatible servers
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
	})
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: q.Get("region"), BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("s3: %s: %w", u, err)
	}
	prefix := strings.Trim(pu.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	loc := "s3://" + pu.Host + "/" + prefix
	b := &Bucket{c: c, bucket: pu.Host, prefix: prefix, raw: loc, query: pu.RawQuery}
	ok, err := c.BucketExists(ctx, b.bucket)
	switch {
	case err != nil:
		return nil, fmt.Errorf("s3: %s: %w", loc, err)
	case !ok:
		return nil, fmt.Errorf("s3: %s: no such bucket %s", loc, b.bucket)
	}
	return b, nil
}

// String is the location, s3://BUCKET/PREFIX/.
func (b *Bucket) String() string { return b.raw }

// URL is the location of the object name.
func (b *Bucket) URL(name string) string { return b.raw + name }

// Location is the full location URL of the object name, with the
// bucket's parameters (s3://BUCKET/PREFIX/NAME?endpoint=…): what an index
// stores to find the object again.
func (b *Bucket) Location(name string) string {
	if b.query == "" {
		return b.URL(name)
	}
	return b.URL(name) + "?" + b.query
}

// Sub is the bucket at the prefix dir ("" for the bucket's root, else
// a/b) of the same bucket and connection.
func (b *Bucket) Sub(dir string) *Bucket {
	s := *b
	s.prefix = strings.Trim(dir, "/")
	if s.prefix != "" {
		s.prefix += "/"
	}
	s.raw = "s3://" + b.bucket + "/" + s.prefix
	return &s
}

func (b *Bucket) key(name string) (string, error) {
	if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
		return "", fmt.Errorf("s3: %q is not a file name", name)
	}
	return b.prefix + name, nil
}

// Info describes a stored object.
type Info struct {
	Name    string
	Size    int64
	ModTime time.Time
	ETag    string
}

func (i Info) fileInfo() fs.FileInfo { return fileInfo{i} }

// List returns the objects directly under the prefix, by name.
func (b *Bucket) List(ctx context.Context) ([]Info, error) {
	var out []Info
	for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix}) {
		if o.Err != nil {
			return nil, fmt.Errorf("s3: list %s: %w", b.raw, o.Err)
		}
		name := strings.TrimPrefix(o.Key, b.prefix)
		if name == "" || strings.Contains(name, "/") {
			continue
		}
		out = append(out, Info{Name: name, Size: o.Size, ModTime: o.LastModified, ETag: o.ETag})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stat describes the object name; a missing object is an error wrapping
// fs.ErrNotExist.
func (b *Bucket) Stat(ctx context.Context, name string) (Info, error) {
	k, err := b.key(name)
	if err != nil {
		return Info{}, err
	}
	st, err := b.c.StatObject(ctx, b.bucket, k, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, b.wrap("stat", name, err)
	}
	return Info{Name: name, Size: st.Size, ModTime: st.LastModified, ETag: st.ETag}, nil
}

func (b *Bucket) wrap(op, name string, err error) error {
	if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
		return fmt.Errorf("s3: %s %s: %w", op, b.URL(name), fs.ErrNotExist)
	}
	return fmt.Errorf("s3: %s %s: %w", op, b.URL(name), err)
}

// Object is a stored file open for reading: Read reads it in order,
// ReadAt by range.
type Object struct {
	b    *Bucket
	ctx  context.Context
	key  string
	info Info
	off  int64
	body io.ReadCloser // the current sequential GET
}

// Open opens the object name. The object's size and ETag are taken once:
// every read is conditional on that ETag, so an object replaced after
// Open fails the read instead of mixing two versions.
func (b *Bucket) Open(ctx context.Context, name string) (*Object, error) {
	info, err := b.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	return &Object{b: b, ctx: ctx, key: b.prefix + name, info: info}, nil
}

// Stat returns the object's description as Open found it.
func (o *Object) Stat() (fs.FileInfo, error) { return o.info.fileInfo(), nil }

// Info returns the object's description as Open found it.
func (o *Object) Info() Info { return o.info }

func (o *Object) get(off, end int64) (io.ReadCloser, error) {
	opts := minio.GetObjectOptions{}
	if err := opts.SetMatchETag(o.info.ETag); err != nil {
		return nil, err
	}
	if err := opts.SetRange(off, end); err != nil {
		return nil, err
	}
	obj, err := o.b.c.GetObject(o.ctx, o.b.bucket, o.key, opts)
	if err != nil {
		return nil, o.b.wrap("read", o.info.Name, err)
	}
	return obj, nil
}

// ReadAt reads len(p) bytes at off with one ranged GET.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), o.info.Size) - 1
	rc, err := o.get(off, end)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	want := int(end - off + 1)
	n, err := io.ReadFull(rc, p[:want])
	if err != nil {
		return n, o.readErr(off, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Range returns the bytes [off, end] (inclusive) of the object, with one
// GET conditional on the ETag Open found: its body's errors name the
// object and the offset, and a replaced object fails with 412.
func (o *Object) Range(off, end int64) (io.ReadCloser, error) {
	rc, err := o.get(off, end)
	if err != nil {
		return nil, err
	}
	return &rangeBody{o: o, rc: rc, off: off}, nil
}

type rangeBody struct {
	o   *Object
	rc  io.ReadCloser
	off int64
}

func (r *rangeBody) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.off += int64(n)
	if err != nil && err != io.EOF {
		return n, r.o.readErr(r.off, err)
	}
	return n, err
}

func (r *rangeBody) Close() error { return r.rc.Close() }

// ErrChanged is wrapped by the error of a read of an object replaced after
// it was opened (its ETag differs).
var ErrChanged = errors.New("s3: object changed")

func (o *Object) readErr(off int64, err error) error {
	if errors.Is(err, ErrChanged) {
		return err
	}
	if r := minio.ToErrorResponse(err); r.StatusCode == http.StatusPreconditionFailed {
		return fmt.Errorf("s3: %s offset %d: the object changed after it was opened (ETag %s): %w: %w", o.b.URL(o.info.Name), off, o.info.ETag, ErrChanged, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || minio.ToErrorResponse(err).StatusCode == http.StatusRequestedRangeNotSatisfiable {
		return fmt.Errorf("s3: %s offset %d: the object is shorter than the %d bytes it had when opened: %w", o.b.URL(o.info.Name), off, o.info.Size, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("s3: %s offset %d: %w", o.b.URL(o.info.Name), off, err)
}

// Read reads the object in order, with one streaming GET from where the
// last Read stopped (ReadAt does not move it).
func (o *Object) Read(p []byte) (int, error) {
	if o.off >= o.info.Size {
		return 0, io.EOF
	}
	if o.body == nil {
		rc, err := o.get(o.off, o.info.Size-1)
		if err != nil {
			return 0, err
		}
		o.body = rc
	}
	n, err := o.body.Read(p)
	o.off += int64(n)
	if err == io.EOF && o.off < o.info.Size {
		return n, o.readErr(o.off, io.ErrUnexpectedEOF)
	}
	if err != nil && err != io.EOF {
		return n, o.readErr(o.off, err)
	}
	if o.off >= o.info.Size {
		return n, io.EOF
	}
	return n, nil
}

// Close ends the object's sequential read, if any.
func (o *Object) Close() error {
	if o.body != nil {
		err := o.body.Close()
		o.body = nil
		return err
	}
	return nil
}

// Upload is what Upload proved of a copy.
type Upload struct {
	URL    string
	Size   int64
	SHA256 string // hex
}

// Upload copies the local file at path to the object name and proves the
// copy: the object is read back whole and must have the local file's size
// and SHA-256 (computed from the file, not from what was sent). On any
// failure the object is removed (best effort) and an error returned.
func (b *Bucket) Upload(ctx context.Context, path, name string) (Upload, error) {
	k, err := b.key(name)
	if err != nil {
		return Upload{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Upload{}, fmt.Errorf("s3: upload: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Upload{}, fmt.Errorf("s3: upload: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Upload{}, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	sum := fmt.Sprintf("%x", h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Upload{}, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	up := Upload{URL: b.URL(name), Size: fi.Size(), SHA256: sum}
	if err := failpoint.Inject("s3.upload-before-put"); err != nil {
		return up, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	_, err = b.c.PutObject(ctx, b.bucket, k, io.NewSectionReader(f, 0, fi.Size()), fi.Size(), minio.PutObjectOptions{
		ContentType: "application/warc", UserMetadata: map[string]string{"sha256": sum}, SendContentMd5: true})
	if err != nil {
		return up, fmt.Errorf("s3: upload %s to %s: %w", path, up.URL, err)
	}
	if err := failpoint.Inject("s3.upload-after-put"); err != nil {
		return up, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	if err := b.Verify(ctx, name, fi.Size(), sum); err != nil {
		_ = b.c.RemoveObject(context.WithoutCancel(ctx), b.bucket, k, minio.RemoveObjectOptions{})
		return up, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	return up, nil
}

// Verify reads the object name back whole (ranged reads) and checks its
// size and SHA-256 (hex).
func (b *Bucket) Verify(ctx context.Context, name string, size int64, sha string) error {
	o, err := b.Open(ctx, name)
	if err != nil {
		return err
	}
	defer o.Close()
	if o.info.Size != size {
		return fmt.Errorf("s3: %s holds %d bytes, want %d", b.URL(name), o.info.Size, size)
	}
	h := sha256.New()
	buf := make([]byte, 8<<20)
	for off := int64(0); off < size; {
		n, err := o.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		h.Write(buf[:n])
		off += int64(n)
		if err != nil && !(err == io.EOF && off == size) {
			return err
		}
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != sha {
		return fmt.Errorf("s3: %s has SHA-256 %s, want %s", b.URL(name), got, sha)
	}
	return nil
}

// Remove removes the object name.
func (b *Bucket) Remove(ctx context.Context, name string) error {
	k, err := b.key(name)
	if err != nil {
		return err
	}
	if err := b.c.RemoveObject(ctx, b.bucket, k, minio.RemoveObjectOptions{}); err != nil {
		return b.wrap("remove", name, err)
	}
	return nil
}

// Put stores data as the object name (small files: CDXJ side files).
func (b *Bucket) Put(ctx context.Context, name string, data []byte) error {
	k, err := b.key(name)
	if err != nil {
		return err
	}
	if _, err := b.c.PutObject(ctx, b.bucket, k, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{SendContentMd5: true}); err != nil {
		return b.wrap("put", name, err)
	}
	return nil
}

// fileInfo is an Info as an fs.FileInfo.
type fileInfo struct{ i Info }

func (f fileInfo) Name() string       { return path.Base(f.i.Name) }
func (f fileInfo) Size() int64        { return f.i.Size }
func (f fileInfo) Mode() fs.FileMode  { return 0o444 }
func (f fileInfo) ModTime() time.Time { return f.i.ModTime }
func (f fileInfo) IsDir() bool        { return false }
func (f fileInfo) Sys() any           { return nil }
