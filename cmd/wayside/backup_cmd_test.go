package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBackupCommandRefuses: `wayside backup` without a directory is a
// usage error (exit 2); into a directory that exists it fails naming it
// (exit 1), writing nothing there; into a new one it writes the snapshot
// (BACKUP.json) and leaves no partial directory beside it.
func TestBackupCommandRefuses(t *testing.T) {
	watch := t.TempDir()
	sock := serveInTest(t, "--watch", watch, "--poll", "50ms", "--log-level", "warn")
	ctx := context.Background()
	// The daemon answers once its socket is there (bounded wait).
	deadline := time.Now().Add(time.Minute)
	for {
		if _, _, err := runCLI(ctx, "status", "-addr", sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := runCLI(ctx, "backup", "-addr", sock); exitCode(err) != exitUsage {
		t.Errorf("backup without DIR: %v (exit %d)", err, exitCode(err))
	}
	parent := t.TempDir()
	exists := filepath.Join(parent, "exists")
	if err := os.Mkdir(exists, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(ctx, "backup", "-addr", sock, exists); exitCode(err) != exitFailure || !strings.Contains(err.Error(), exists+" already exists") {
		t.Errorf("backup into an existing directory: %v", err)
	}
	if ents, _ := os.ReadDir(exists); len(ents) != 0 {
		t.Errorf("written into the existing directory: %v", ents)
	}
	fresh := filepath.Join(parent, "fresh")
	out, stderr, err := runCLI(ctx, "backup", "-addr", sock, fresh)
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "snapshot "+fresh) {
		t.Errorf("summary: %s", out)
	}
	if _, err := os.Stat(filepath.Join(fresh, "BACKUP.json")); err != nil {
		t.Error(err)
	}
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if e.Name() != "exists" && e.Name() != "fresh" {
			t.Errorf("left beside the snapshot: %s", e.Name())
		}
	}
}
