//go:build !unix

package fsutil

import (
	"errors"
	"fmt"
)

// FreeBytes is not implemented here: free space is not checked, and a full
// disk is noticed by the write that fails.
func FreeBytes(dir string) (int64, error) {
	return 0, fmt.Errorf("fsutil: free space of %s: %w", dir, errors.ErrUnsupported)
}
