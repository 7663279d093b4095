package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestValidateWACZ: `wayside validate` checks a WACZ as `wacz verify` does
// and validates the WARC files inside; a flipped byte in a WARC member is
// an error naming the member, and the exit status is 1.
func TestValidateWACZ(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := testenv.CopyFiles(t, dir, filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz"))[0]
	out := filepath.Join(dir, "c.wacz")
	if _, stderr, err := runCLI(ctx, "wacz", "create", "-q", "--no-sign", "-o", out, in); err != nil {
		t.Fatalf("wacz create: %v\n%s", err, stderr)
	}
	stdout, stderr, err := runCLI(ctx, "validate", out)
	if err != nil {
		t.Fatalf("validate of a good WACZ: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "not signed") {
		t.Errorf("the unsigned package is not named as such:\n%s", stdout)
	}
	b, _ := os.ReadFile(out)
	i := strings.Index(string(b), "archive/pywb-iana.warc.gz") // its local header
	if i < 0 {
		t.Fatal("no WARC member in the WACZ")
	}
	b[i+2000] ^= 0x20 // inside the stored WARC
	os.WriteFile(out, b, 0o644)
	stdout, stderr, err = runCLI(ctx, "validate", out)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("validate of a damaged WACZ: %v\n%s", err, stdout)
	}
	if !strings.Contains(stdout+stderr, "archive/pywb-iana.warc.gz") {
		t.Errorf("the damaged member is not named:\n%s%s", stdout, stderr)
	}
}
