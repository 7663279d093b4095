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
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

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
	base := testenv.LiveHeap()
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
						grew, taken = max(grew, testenv.LiveHeap()-base), true
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

// TestScanCacheFootprint: a location-only entry costs about locCost, as
// the budget counts it, not the record's whole WARC header: the key and
// record ID read from the header (parts of one ~1 KB string, as warcio
// reads them) are cloned when cached, so 20,000 locations of records with
// 4 KiB headers hold ~5 MB, not the 80 MB of their headers.
func TestScanCacheFootprint(t *testing.T) {
	const n, hdr = 20000, 4 << 10
	c := newScanCache(1 << 30) // nothing pushed out: every entry stays
	rec := &warcio.Record{HTTP: &warcio.HTTPInfo{}}
	payload := []byte("a payload")
	base := testenv.LiveHeap()
	for i := range n {
		// One string per record, as a WARC header block is read.
		h := fmt.Sprintf("WARC-Record-ID: <urn:uuid:%08d>\r\nWARC-Payload-Digest: sha1:%032d\r\n", i, i) + strings.Repeat("x", hdr)
		e := &Entry{Key: h[len("WARC-Record-ID: <urn:uuid:00000000>\r\nWARC-Payload-Digest: "):][:37], Path: "a.warc.gz"}
		e.RecordID = h[len("WARC-Record-ID: "):][:len("<urn:uuid:00000000>")]
		e.Offset, e.PayloadLength = int64(i), int64(len(payload))
		c.compare(e, rec, payload, true, nil)
	}
	if len(c.byKey) != n {
		t.Fatalf("%d entries cached, want %d", len(c.byKey), n)
	}
	// As pushed out: location only.
	for k, v := range c.byKey {
		loc := *v
		loc.payload = nil
		c.byKey[k] = &loc
	}
	grew := testenv.LiveHeap() - base
	if per := grew / n; per > 2*locCost {
		t.Errorf("%d cached locations hold %d KB live, %d bytes each; want about locCost (%d)", n, grew>>10, per, locCost)
	}
	runtime.KeepAlive(c)
}

// TestResolveLoadBounded: the reference payloads resolve holds for one
// cluster stay within loadMemory (a share of MaxMemory, 1 MiB here), not
// the fixed 256 MiB they could reach before: loading a fourth reference
// of 400 KiB drops the others.
func TestResolveLoadBounded(t *testing.T) {
	r := &resolver{opts: ResolveOptions{MaxMemory: 8 << 20}}
	limit := loadMemory(r.opts.MaxMemory)
	if limit != 1<<20 {
		t.Fatalf("loadMemory(8 MiB) = %d, want 1 MiB", limit)
	}
	var refs []*reference
	for i := range 6 {
		ref := &reference{payload: make([]byte, 400<<10), loaded: true}
		refs = append(refs, ref)
		r.track(ref)
		if r.loaded > limit {
			t.Fatalf("after reference %d: %d bytes loaded, limit %d", i, r.loaded, limit)
		}
		held := int64(0)
		for _, o := range refs {
			if o.loaded {
				held += int64(len(o.payload))
			}
		}
		if held != r.loaded {
			t.Fatalf("after reference %d: references hold %d bytes, %d counted", i, held, r.loaded)
		}
	}
	if !refs[5].loaded {
		t.Errorf("the reference just loaded was dropped")
	}
}

// TestPlanCopiesBadLine: a malformed plan line of a file, spooled
// unparsed, is refused when it is read back, by its merged line number,
// on the pass that reads only offsets and lengths as on the full one.
func TestPlanCopiesBadLine(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.tsv")
	good := &Copy{Path: "a.warc.gz", Offset: 10, Length: 90, RecordID: "<urn:uuid:1>", Version: "1.1", Key: "sha1:AAAA", Head: []byte("H"),
		Original: Original{RecordID: "<urn:uuid:o>", Path: "a.warc.gz", File: "a.warc.gz", Length: 90}}
	writePlan(t, plan, []*Copy{good})
	f, err := os.OpenFile(plan, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a.warc.gz\t000000000000200\tnot-a-length\n")
	f.Close()
	for _, span := range []bool{true, false} {
		err := forEachFile(context.Background(), []FileInfo{{Path: "a.warc.gz"}}, nil, []string{plan}, false, 1, 64<<20, dir,
			func(ctx context.Context, f FileInfo, copies *fileCopies, _ *fileEntries) (any, error) {
				copies.rewind()
				n := 0
				for {
					if span {
						if _, _, ok := copies.nextSpan(); !ok {
							break
						}
					} else if copies.next() == nil {
						break
					}
					n++
				}
				if n != 1 {
					return nil, fmt.Errorf("%d copies read before the bad line, want 1", n)
				}
				return nil, copies.failed()
			}, func(any) {})
		if err == nil || !strings.Contains(err.Error(), "line 2 (merged)") {
			t.Errorf("spans only %v: error %v, want one naming merged line 2", span, err)
		}
	}
}
