//go:build !unix

package warcfile

import "os"

// lockDir is a no-op where flock is unavailable: do not point two
// processes at one WARC directory there.
func lockDir(dir string) (*os.File, error) { return nil, nil }
