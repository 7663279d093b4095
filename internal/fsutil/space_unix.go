//go:build unix

package fsutil

import (
	"fmt"
	"syscall"
)

// FreeBytes returns the bytes available to an unprivileged process on the
// file system holding dir (statfs f_bavail).
func FreeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("fsutil: statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
