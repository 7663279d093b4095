package testenv

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// SmallDisk mounts a real tmpfs of size bytes (mode 0700) on dir, which it
// creates, and returns a function that resizes it (freeing space). It is
// unmounted at cleanup. Mounting needs root (CAP_SYS_ADMIN): scripts/test.sh
// and CI run as root; without it the test is reported as missing a tool
// (skipped, but failed under WAYSIDE_REQUIRE_TOOLS).
func SmallDisk(t *testing.T, dir string, size int64) func(int64) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		MissingTool(t, "cannot mount a tmpfs (run as root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return func(n int64) {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", n)); err != nil {
			t.Fatalf("resize tmpfs: %v", err)
		}
	}
}
