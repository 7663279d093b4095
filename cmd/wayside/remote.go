package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/warcfile/s3"
)

// isRemote reports whether an input names object storage.
func isRemote(p string) bool { return strings.HasPrefix(p, "s3://") }

// archiveName reports whether a file or object name is a WARC, ARC or WACZ
// file's by its extension (how a bucket prefix is listed: objects are not
// read to be listed).
func archiveName(name string) bool {
	n := strings.TrimSuffix(strings.ToLower(name), ".gz")
	return strings.HasSuffix(n, ".warc") || strings.HasSuffix(n, ".arc") || strings.HasSuffix(name, ".wacz")
}

// fetchRemote copies the objects an s3:// input names into dir, keeping
// their names (so index lines name the same files): an object URL
// (s3://BUCKET/PREFIX/NAME.warc.gz?endpoint=…) is one file; any other URL
// is a prefix, taken as a directory: its WARC, ARC and WACZ objects. Each
// copy is read with the ETag seen when the object was opened, so an object
// replaced meanwhile fails instead of mixing versions, and must have the
// object's size.
func fetchRemote(ctx context.Context, cmd, raw, dir string) ([]string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", cmd, raw, err)
	}
	var names []string
	loc := *u
	if base := path.Base(u.Path); u.Path != "" && !strings.HasSuffix(u.Path, "/") && archiveName(base) {
		loc.Path = path.Dir(u.Path)
		names = []string{base}
	}
	b, err := s3.Open(ctx, loc.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if names == nil {
		list, err := b.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		for _, o := range list {
			if archiveName(o.Name) {
				names = append(names, o.Name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: %s holds no WARC, ARC or WACZ object", cmd, b)
		}
	}
	var out []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("%s: %s: two inputs are named %s", cmd, b.URL(n), n)
		}
		if err := copyObject(ctx, b, n, p); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func copyObject(ctx context.Context, b *s3.Bucket, name, dst string) error {
	o, err := b.Open(ctx, name)
	if err != nil {
		return err
	}
	defer o.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != o.Info().Size {
		err = fmt.Errorf("%s: read %d of its %d bytes", b.URL(name), n, o.Info().Size)
	}
	return err
}
