//go:build !cgo

package libdeflate

import (
	"errors"
	"testing"
)

// TestUnavailable: without cgo the package says so and Gzip fails, so
// callers keep their pure-Go path.
func TestUnavailable(t *testing.T) {
	if Available() || Impl() != "none" {
		t.Fatalf("Available() = %v, Impl() = %q without cgo", Available(), Impl())
	}
	if _, _, err := New().Gzip([]byte{0x1f, 0x8b}, make([]byte, 10)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Gzip: %v, want ErrUnavailable", err)
	}
}
