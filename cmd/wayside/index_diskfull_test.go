//go:build linux

package main

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestIndexImportDiskFull imports into an index on a real 1 MiB tmpfs
// until the disk is full (issue 21: Pebble's fatal commit error was a
// panic with a goroutine dump and exit 2, the usage code). The binary must
// exit 1 with one "wayside: " line naming the full disk, and no panic;
// after the tmpfs is enlarged the same import completes and the index
// holds every original and passes its check: nothing written before was
// lost or damaged.
func TestIndexImportDiskFull(t *testing.T) {
	bin := waysideBinary(t)
	dir := t.TempDir()
	resize := testenv.SmallDisk(t, filepath.Join(dir, "disk"), 1<<20)
	const n = 40000
	var b bytes.Buffer
	for i := range n {
		sum := sha1.Sum(fmt.Appendf(nil, "payload %d", i))
		fmt.Fprintf(&b, `com,example)/page%d 20200101000000 {"url": "http://example.com/page%d", "mime": "text/html", "status": "200", "digest": "sha1:%s", "length": "1000", "offset": "%d", "filename": "x.warc.gz"}`+"\n",
			i, i, base32.StdEncoding.EncodeToString(sum[:]), i*1000)
	}
	cdxjPath := filepath.Join(dir, "big.cdxj")
	if err := os.WriteFile(cdxjPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ix := filepath.Join(dir, "disk", "ix")
	runBin := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return ee.ExitCode(), stdout.String(), stderr.String()
		case err != nil:
			t.Fatal(err)
		}
		return 0, stdout.String(), stderr.String()
	}
	code, _, stderr := runBin("index", "import", "-q", "--index", ix, cdxjPath)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != exitFailure || len(lines) != 1 || !strings.HasPrefix(lines[0], "wayside: index import: ") || !strings.Contains(lines[0], "no space left on device") {
		t.Fatalf("import onto a full disk: exit %d, stderr:\n%.3000s\nwant exit 1 and one line naming the full disk", code, stderr)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
		t.Fatalf("a panic:\n%.3000s", stderr)
	}
	resize(256 << 20)
	if code, out, stderr := runBin("index", "import", "-q", "--index", ix, cdxjPath); code != 0 {
		t.Fatalf("import again with room: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := runBin("index", "stats", "--check", "--index", ix)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("originals:  %d\n", n)) || !strings.Contains(out, "check:      ok") {
		t.Fatalf("index after the full disk: exit %d\n%s\n%s", code, out, stderr)
	}
}
