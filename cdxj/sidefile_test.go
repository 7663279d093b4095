package cdxj

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// A side file's appends are whole lines: a failed append (a full disk
// after k bytes) is cut back to the last whole line, AppendAt drops the
// lines after a checkpointed size, CutBack does the same at start-up, and
// a replay reads only complete lines within its limit.
func TestSideFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, SideFileName("x.warc.gz"))
	if filepath.Base(p) != "x.warc.gz.cdxj" {
		t.Fatalf("side file name %s", p)
	}
	s, err := OpenSideFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append([]byte("a 1 {}\nb 2 {}\n")); err != nil {
		t.Fatal(err)
	}
	off := failpoint.Enable("cdxj.side-append", failpoint.ShortWrite(3, syscall.ENOSPC))
	err = s.Append([]byte("c 3 {}\n"))
	off()
	if err == nil || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("append on a full disk: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "a 1 {}\nb 2 {}\n" || s.Size() != int64(len(b)) {
		t.Fatalf("after a failed append: %q (size %d)", b, s.Size())
	}
	if err := s.AppendAt(7, []byte("d 4 {}\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(s.Size()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "a 1 {}\nd 4 {}\n" {
		t.Fatalf("after AppendAt: %q", b)
	}
	// A partial last line (a producer appending) is not replayed.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("e 5")
	f.Close()
	var got []string
	if err := ReplaySideFile(p, -1, func(line string, n int) error { got = append(got, line); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "a 1 {}|d 4 {}" {
		t.Errorf("replayed %q", got)
	}
	got = nil
	ReplaySideFile(p, 8, func(line string, n int) error { got = append(got, line); return nil })
	if strings.Join(got, "|") != "a 1 {}" {
		t.Errorf("replayed within 8 bytes: %q", got)
	}
	if cut, err := CutBack(p, 7); err != nil || !cut {
		t.Fatalf("CutBack: %v %v", cut, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "a 1 {}\n" {
		t.Fatalf("after CutBack: %q", b)
	}
	// The legacy name is found when it is the only one, and listed.
	old := filepath.Join(dir, "y.cdxj")
	os.WriteFile(old, []byte("y 1 {}\n"), 0o644)
	if q, found, err := FindSideFile(dir, "y.warc.gz"); err != nil || !found || q != old {
		t.Errorf("FindSideFile(y.warc.gz) = %s %v %v, want %s", q, found, err, old)
	}
	if q, found, _ := FindSideFile(dir, "z.warc.gz"); found || filepath.Base(q) != "z.warc.gz.cdxj" {
		t.Errorf("FindSideFile(z.warc.gz) = %s %v", q, found)
	}
	if l, err := ListSideFiles(dir, filepath.Join(dir, "missing")); err != nil || len(l) != 2 {
		t.Errorf("ListSideFiles = %v %v", l, err)
	}
}
