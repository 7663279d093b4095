//go:build unix

package warcfile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir for this writer, so that
// recovery never finalises the ".open" file of another live process writing
// to the same directory.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".wayside-writer.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("warcfile: lock warc dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("warcfile: warc dir %s is in use by another wayside process: %w", dir, err)
	}
	return f, nil
}
