package warcfile

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/warctest"
)

// RotateAfter starts a new file once the current one has been open that
// long (by the writer's clock), never leaves a file with only its
// warcinfo record, and InfoFields' operator, description and isPartOf
// are in every file's warcinfo record.
func TestRotateAfterAndInfoFields(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	w, err := OpenWriter(WriterOptions{Dir: dir, RotateAfter: time.Hour, Now: clock,
		Info: InfoFields("Example Library", "test crawl\r\nsecond line", "")})
	if err != nil {
		t.Fatal(err)
	}
	write := func(i int) {
		wr, err := w.Write(testRecord(fmt.Sprintf("http://example.org/%d", i), []byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WaitDurable(context.Background(), wr); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	advance(59 * time.Minute)
	write(1) // same file
	advance(time.Minute)
	write(2) // an hour since the first file opened: a new file
	advance(3 * time.Hour)
	write(3) // a new file again
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 3 {
		t.Fatalf("%d files, want 3: %v", len(files), files)
	}
	perFile := map[string]int{}
	for _, r := range readDir(t, dir) {
		if r.Type == "warcinfo" {
			continue
		}
		perFile[r.File]++
	}
	counts := []int{perFile[filepath.Base(files[0])], perFile[filepath.Base(files[1])], perFile[filepath.Base(files[2])]}
	if fmt.Sprint(counts) != "[2 1 1]" {
		t.Errorf("records per file %v, want [2 1 1]", counts)
	}
	for _, f := range files {
		block := warctest.WarcinfoBlock(t, f)
		for _, want := range []string{"operator: Example Library\r\n", "description: test crawl%0D%0Asecond line\r\n"} {
			if !strings.Contains(block, want) {
				t.Errorf("%s: warcinfo block lacks %q:\n%s", f, want, block)
			}
		}
		if strings.Contains(block, "isPartOf") {
			t.Errorf("%s: empty isPartOf written:\n%s", f, block)
		}
	}
}
