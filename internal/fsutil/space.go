package fsutil

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrLowSpace is wrapped by the errors of writers that stop before a file
// system is full (they keep a reserve free for the indexes and for closing
// files cleanly). IsDiskFull reports it as a full disk.
var ErrLowSpace = errors.New("disk nearly full")

// IsDiskFull reports whether err says a file system is out of space
// (ENOSPC), over quota (EDQUOT) or below a writer's reserve (ErrLowSpace).
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrLowSpace)
}

// CheckFree returns an error wrapping ErrLowSpace when the file system
// holding dir has fewer than reserve+need bytes available to this process,
// naming dir, what is free and the reserve; nil when there is room, when
// reserve is 0 or when the free space cannot be told.
func CheckFree(dir string, reserve, need int64) error {
	if reserve <= 0 {
		return nil
	}
	free, err := FreeBytes(dir)
	if err != nil {
		return nil // an unknown free space does not stop a writer: ENOSPC still would
	}
	if free < reserve+need {
		return fmt.Errorf("%w: %s has %s free, less than the %s kept free", ErrLowSpace, dir, HumanBytes(free), HumanBytes(reserve))
	}
	return nil
}

// HumanBytes spells a byte count with a binary unit (KiB, MiB, GiB).
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
