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
	m.m.step = 64 << 10
	if _, err := sum(m.Bytes(), m); err != nil {
		t.Fatal(err)
	}
	m.Release(32 << 10)
	if m.m.released != 0 {
		t.Fatalf("released %d bytes before reading moved a step on", m.m.released)
	}
	m.Release(int64(len(data)) - 100)
	if m.m.released != len(data)-4096 {
		t.Fatalf("released up to %d, want the last whole page before the offset (%d)", m.m.released, len(data)-4096)
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

// TestShare: handles Share gives read the same mapping; a page is
// released only once every open handle has released it; the mapping
// stays readable until its last handle is closed; a fault read through
// any handle is ErrFault naming the file.
func TestShare(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 13)
	}
	a, f := mapped(t, data)
	a.m.step = 64 << 10
	b := a.Share()
	if &b.Bytes()[0] != &a.Bytes()[0] {
		t.Fatal("a shared handle maps the file again")
	}
	a.Release(512 << 10)
	if a.m.released != 0 {
		t.Fatalf("released %d bytes that the other handle has not released", a.m.released)
	}
	b.Release(256 << 10)
	if a.m.released != 256<<10 {
		t.Fatalf("released up to %d, want %d (the lower of the two handles)", a.m.released, 256<<10)
	}
	if err := a.Close(); err != nil || a.Bytes() != nil {
		t.Fatalf("close: %v", err)
	}
	if a.Share() != nil {
		t.Error("a closed handle shared its mapping")
	}
	b.Release(1 << 20) // a closed: b alone decides
	if a.m.released != 1<<20 {
		t.Fatalf("released up to %d after the other handle closed, want %d", a.m.released, 1<<20)
	}
	if !bytes.Equal(b.Bytes(), data) {
		t.Fatal("the mapping does not read as the file after one handle closed")
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := sum(b.Bytes()[8192:], b); !errors.Is(err, ErrFault) || !strings.Contains(err.Error(), f.Name()+" offset 8192") {
		t.Fatalf("reading past the new end through a shared handle: %v", err)
	}
	if err := b.Close(); err != nil || b.m.data != nil {
		t.Fatalf("the last close did not unmap: %v", err)
	}
}
