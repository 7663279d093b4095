package mapfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mapped(t *testing.T, data []byte) (*File, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := Map(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, f
}

// sum reads every byte of b, under the guard of maps.
func sum(b []byte, maps ...*File) (s int, err error) {
	defer Recover(&err, Guard(), maps...)
	for _, c := range b {
		s += int(c)
	}
	return s, nil
}

// TestTruncatedUnderMapping: reading mapped pages that the file no longer
// has is an error wrapping ErrFault, not a crash; the pages it still has
// read as before.
func TestTruncatedUnderMapping(t *testing.T) {
	data := bytes.Repeat([]byte{1}, 1<<20)
	m, f := mapped(t, data)
	if s, err := sum(m.Bytes(), m); err != nil || s != len(data) {
		t.Fatalf("whole file: %d, %v", s, err)
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	if s, err := sum(m.Bytes()[:4096], m); err != nil || s != 4096 {
		t.Errorf("the part still in the file: %d, %v", s, err)
	}
	other, _ := mapped(t, []byte("other"))
	_, err := sum(m.Bytes()[8192:], other, m)
	if !errors.Is(err, ErrFault) || !strings.Contains(err.Error(), f.Name()+" offset 8192") {
		t.Fatalf("reading past the new end: %v, want ErrFault naming %s offset 8192", err, f.Name())
	}
	t.Log(err)
}

// TestOtherPanicsGoOn: a panic that is not a fault on the mapping is not
// swallowed.
func TestOtherPanicsGoOn(t *testing.T) {
	m, _ := mapped(t, []byte("abc"))
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want the original panic", r)
		}
	}()
	func() (err error) {
		defer Recover(&err, Guard(), m)
		panic("boom")
	}()
	t.Error("the panic did not go on")
}

// TestRelease: released pages read back unchanged.
func TestRelease(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	m, _ := mapped(t, data)
	m.step = 64 << 10
	if _, err := sum(m.Bytes(), m); err != nil {
		t.Fatal(err)
	}
	m.Release(32 << 10)
	if m.released != 0 {
		t.Fatalf("released %d bytes before reading moved a step on", m.released)
	}
	m.Release(int64(len(data)) - 100)
	if m.released != len(data)-4096 {
		t.Fatalf("released up to %d, want the last whole page before the offset (%d)", m.released, len(data)-4096)
	}
	if !bytes.Equal(m.Bytes(), data) {
		t.Error("released pages do not read back as the file")
	}
}

// TestEmpty: an empty file maps to no bytes and closes.
func TestEmpty(t *testing.T) {
	m, _ := mapped(t, nil)
	if len(m.Bytes()) != 0 || m.Close() != nil {
		t.Error("empty file")
	}
}
