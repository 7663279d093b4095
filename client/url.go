package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/wayside-archive/wayside/dedupindex"
)

// Linking this package registers the scheme sidecar: with
// dedupindex.OpenURL, sidecar:///SOCKET or sidecar://HOST:PORT (with
// OpenOptions.Token) opens the Index of a running `wayside serve`.
func init() { dedupindex.RegisterScheme("sidecar", openURL) }

func openURL(_ context.Context, u *url.URL, o dedupindex.OpenOptions) (dedupindex.Index, error) {
	c, err := fromURL(u, o)
	if err != nil {
		return nil, err
	}
	return c.Index(), nil
}

// FromURL returns a client of the daemon a sidecar:// index URL names
// (for what the daemon serves besides its dedup index, e.g. its capture
// index). The caller closes it.
func FromURL(raw string, o dedupindex.OpenOptions) (*Client, error) {
	u, err := dedupindex.ParseURL(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "sidecar" {
		return nil, fmt.Errorf("%w: %s is not a sidecar URL", dedupindex.ErrBadURL, dedupindex.Redact(u))
	}
	return fromURL(u, o)
}

func fromURL(u *url.URL, o dedupindex.OpenOptions) (*Client, error) {
	addr := u.Path
	var copts []Option
	if u.Host != "" {
		addr = "http://" + u.Host
		tok := o.Token
		if tok == "" {
			return nil, errors.New("a sidecar reached over TCP needs a token (WAYSIDE_TOKEN)")
		}
		copts = append(copts, WithToken(tok))
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: sidecar URL without a socket path or host", dedupindex.ErrBadURL)
	}
	return New(addr, copts...)
}
