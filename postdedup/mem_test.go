package postdedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"
)

// liveHeap returns the bytes of heap objects live after a full collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// writePlan writes a plan file of copies (sorted by file and offset).
func writePlan(t *testing.T, path string, copies []*Copy) {
	t.Helper()
	hb, _ := json.Marshal(PlanHeader{Format: lineFormat})
	b := fmt.Appendf(nil, "%s\t%s\n", planFormat, hb)
	for _, c := range copies {
		b = append(append(b, c.appendLine(nil)...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlanCopiesStreamed: the plan copies of one file reach rewrite and
// validation one at a time (spooled per file), so memory does not grow
// with the number of copies of a file: 40 MB of one file's plan lines,
// walked twice as validation walks them, add less than 8 MB to the live
// heap (held as a slice, as before, they added over 40 MB), and every
// copy comes back as planned, in order, on every pass.
func TestPlanCopiesStreamed(t *testing.T) {
	dir := t.TempDir()
	const n, headLen = 600, 64 << 10
	head := append([]byte("HTTP/1.1 200 OK\r\nX-Pad: "), bytes.Repeat([]byte{'p'}, headLen)...)
	mk := func(path string, i int) *Copy {
		return &Copy{Path: path, Offset: int64(i) * 1000, Length: 900, RecordID: fmt.Sprintf("<urn:uuid:%d>", i), URI: "http://x/",
			Version: "1.1", PayloadLength: 4096, Key: "sha1:AAAA", Head: head, Headers: [][2]string{{"WARC-Date", "2024"}},
			Original: Original{RecordID: "<urn:uuid:o>", URI: "http://x/", DateText: "2024", Digest: "sha1:AAAA", PayloadLength: 4096,
				Path: path, File: filepath.Base(path), Offset: 0, Length: 900}}
	}
	var planned []*Copy
	for i := 1; i <= n; i++ {
		planned = append(planned, mk("a.warc.gz", i))
	}
	small := mk("b.warc.gz", 7)
	plan := filepath.Join(dir, "plan.tsv")
	writePlan(t, plan, append(append([]*Copy(nil), planned...), small))
	want := map[string][]*Copy{"a.warc.gz": planned, "b.warc.gz": {small}, "c.warc.gz": nil}
	planned = nil
	files := []FileInfo{{Path: "a.warc.gz"}, {Path: "b.warc.gz"}, {Path: "c.warc.gz"}}
	base := liveHeap()
	var grew int64
	taken := false
	err := forEachFile(context.Background(), files, nil, []string{plan}, false, 1, 64<<20, dir,
		func(ctx context.Context, f FileInfo, copies *fileCopies, _ *fileEntries) (any, error) {
			w := want[f.Path]
			if copies.len() != len(w) {
				return nil, fmt.Errorf("%s: %d copies, want %d", f.Path, copies.len(), len(w))
			}
			for pass := 0; pass < 2; pass++ {
				copies.rewind()
				i := 0
				for c := copies.next(); c != nil; c = copies.next() {
					if i >= len(w) || !reflect.DeepEqual(c, w[i]) {
						return nil, fmt.Errorf("%s pass %d: copy %d is not the one planned", f.Path, pass, i)
					}
					if i == len(w)/2 {
						grew, taken = max(grew, liveHeap()-base), true
					}
					i++
				}
				if err := copies.failed(); err != nil {
					return nil, err
				}
				if i != len(w) {
					return nil, fmt.Errorf("%s pass %d: %d copies read back, want %d", f.Path, pass, i, len(w))
				}
			}
			return nil, nil
		}, func(any) {})
	if err != nil {
		t.Fatal(err)
	}
	// want itself holds the copies (one head shared by all): ~64 KB.
	if grew > 8<<20 {
		t.Errorf("walking %d copies of one file (%d MB of plan lines) grew the live heap by %d MB; want them read one at a time", n, n*headLen>>20, grew>>20)
	}
	if !taken {
		t.Errorf("no heap figure taken")
	}
}
