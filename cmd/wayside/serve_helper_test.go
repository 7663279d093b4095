package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// serveInTest runs `wayside serve` in this process on a Unix socket in a
// short temporary directory (socket paths are limited in length), with
// the data directory there and the given extra flags, until the test ends
// (a serve error fails the test then). It returns the socket's path.
func serveInTest(t *testing.T, extra ...string) string {
	t.Helper()
	data, err := os.MkdirTemp("", "wsd")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(data, "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, stderr, err := runCLI(ctx, append([]string{"serve", "--data-dir", data, "--unix", sock}, extra...)...)
		if errors.Is(err, errCleanStop) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, stderr)
		}
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		os.RemoveAll(data)
	})
	return sock
}
