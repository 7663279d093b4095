package client

import (
	"context"
	"net/http"
)

// GetJSON sends a GET for path (with its query) and decodes the JSON answer
// into out. The characterization routes (api.PathChar*) answer with the
// JSON forms of package characterize's types; this package does
// not import it, so callers decode into those types themselves.
func (c *Client) GetJSON(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, nil, out)
}
