package client

import (
	"context"

	"github.com/wayside-archive/wayside/api"
)

// Backup asks the daemon for a consistent snapshot of every store in dir
// (on the daemon's machine; absolute, not existing yet).
func (c *Client) Backup(ctx context.Context, dir string) (api.BackupResult, error) {
	var res api.BackupResult
	err := c.call(ctx, "POST", "/v1/admin/backup", api.BackupRequest{Dir: dir}, &res)
	return res, err
}
