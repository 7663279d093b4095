package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/wayside-archive/wayside/warcfile"
)

func init() { warcfile.RegisterScheme("s3", newBackend) }

// backend is the s3 scheme of warcfile.Locations: objects named by
// s3://BUCKET/KEY?endpoint=… read by range. One connection (Bucket) per
// bucket, endpoint and options is kept.
type backend struct {
	mu      sync.Mutex
	buckets map[string]*Bucket
}

func newBackend() warcfile.Backend { return &backend{buckets: map[string]*Bucket{}} }

func (b *backend) bucket(ctx context.Context, u *url.URL) (*Bucket, error) {
	root := url.URL{Scheme: "s3", Host: u.Host, Path: "/", RawQuery: u.RawQuery}
	k := root.String()
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk := b.buckets[k]; bk != nil {
		return bk, nil
	}
	bk, err := Open(ctx, k)
	if err != nil {
		return nil, err
	}
	b.buckets[k] = bk
	return bk, nil
}

// Open implements warcfile.Backend.
func (b *backend) Open(ctx context.Context, u *url.URL) (warcfile.ReadFile, error) {
	key := strings.TrimPrefix(u.Path, "/")
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, fmt.Errorf("s3: %s: not an object URL", u.Redacted())
	}
	bk, err := b.bucket(ctx, u)
	if err != nil {
		return nil, err
	}
	dir, name := path.Split(key)
	o, err := bk.Sub(dir).Open(ctx, name)
	if err != nil {
		return nil, err
	}
	loc := u.String()
	get := func(off, end int64) (io.ReadCloser, error) {
		rc, err := o.Range(off, end)
		if err != nil {
			return nil, changed(loc, off, err)
		}
		return &changedBody{rc: rc, loc: loc, off: off}, nil
	}
	return warcfile.NewRangeFile(loc, o.info.Size, o.info.ModTime, get), nil
}

// changed makes a read of a replaced object a warcfile.ChangedError.
func changed(loc string, off int64, err error) error {
	if errors.Is(err, ErrChanged) {
		return &warcfile.ChangedError{Loc: loc, Offset: off, Reason: "its ETag differs (replaced)", Err: err}
	}
	return err
}

type changedBody struct {
	rc  io.ReadCloser
	loc string
	off int64
}

func (c *changedBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.off += int64(n)
	if err != nil && err != io.EOF {
		err = changed(c.loc, c.off, err)
	}
	return n, err
}

func (c *changedBody) Close() error { return c.rc.Close() }

// List implements warcfile.Lister: the objects directly under the prefix.
func (b *backend) List(ctx context.Context, u *url.URL) ([]warcfile.Stored, error) {
	bk, err := b.bucket(ctx, u)
	if err != nil {
		return nil, err
	}
	infos, err := bk.Sub(u.Path).List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]warcfile.Stored, 0, len(infos))
	for _, i := range infos {
		out = append(out, warcfile.Stored{Name: i.Name, Size: i.Size, ModTime: i.ModTime, Version: i.ETag})
	}
	return out, nil
}
