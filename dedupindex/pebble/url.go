package pebble

import (
	"context"
	"fmt"
	"net/url"

	"github.com/wayside-archive/wayside/dedupindex"
)

// Linking this package registers the scheme pebble: with
// dedupindex.OpenURL, pebble:///DIR (or a bare path) opens Open(DIR).
func init() { dedupindex.RegisterScheme("pebble", openURL) }

func openURL(_ context.Context, u *url.URL, o dedupindex.OpenOptions) (dedupindex.Index, error) {
	path := u.Path
	if u.Host != "" && u.Host != "localhost" {
		// pebble://relative/dir: host and path together.
		path = u.Host + u.Path
	}
	if path == "" {
		return nil, fmt.Errorf("%w: pebble URL without a path", dedupindex.ErrBadURL)
	}
	return Open(path, WithLogger(o.Logger))
}
