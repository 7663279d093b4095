package fsutil_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// entries lists dir's file names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	big := strings.Repeat("0123456789abcdef", 10000) // more than the buffer
	for _, tc := range []struct {
		content string
		perm    os.FileMode
	}{
		{"first\n", 0o600},
		{big, 0o644}, // replaces the file, mode included
		{"", 0o640},
	} {
		err := fsutil.WriteFileAtomic(path, tc.perm, func(w io.Writer) error {
			_, err := io.WriteString(w, tc.content)
			return err
		})
		if err != nil {
			t.Fatalf("WriteFileAtomic: %v", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.content {
			t.Fatalf("content = %d bytes, want %d", len(b), len(tc.content))
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.perm {
			t.Fatalf("mode = %v, want %v", fi.Mode().Perm(), tc.perm)
		}
		if got := entries(t, dir); len(got) != 1 || got[0] != "state.json" {
			t.Fatalf("directory holds %v, want only state.json", got)
		}
	}
}

func TestWriteFileAtomicFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	// The writer fails after writing more than the buffer holds, so part of
	// the new content already reached the temporary file.
	err := fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		if _, err := w.Write(make([]byte, 200<<10)); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("WriteFileAtomic = %v, want the writer's own error as it is (its layer names it)", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "old" {
		t.Fatalf("after a failed write: %q, %v; want the old content", b, err)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "checkpoint" {
		t.Fatalf("directory holds %v after a failed write, want no temporary file", got)
	}
}

func TestWriteFileAtomicMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	called := false
	err := fsutil.WriteFileAtomic(path, 0o644, func(io.Writer) error { called = true; return nil })
	if err == nil || called {
		t.Fatalf("WriteFileAtomic into a missing directory = %v (write called: %v), want an error before writing", err, called)
	}
}

func TestSyncDir(t *testing.T) {
	if err := fsutil.SyncDir(t.TempDir()); err != nil {
		t.Fatalf("SyncDir: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := fsutil.SyncDir(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("SyncDir(missing) = %v, want ErrNotExist naming the directory", err)
	}
}
