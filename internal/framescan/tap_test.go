package framescan_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/mapfile"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warcgen"
	"github.com/wayside-archive/wayside/warcio"
)

// tapped frames the file at path in tap mode, from the members warcio's
// reader inflates while it reads the whole file (mapped or read through
// its buffer), passed through wrap; it returns the Result and the members
// proved and refused. With emit, the records are taken as the tap emits
// them (as the manifest scan stores them) and put in the Result. With
// shared, the tap and the reader read one mapping of the file, each
// through a handle of its own (as the manifest scan reads its inputs).
func tapped(t *testing.T, path string, mapped, emit, shared bool, wrap func(warcio.MemberTap) warcio.MemberTap) (*framescan.Result, int, int) {
	t.Helper()
	var emitted []framescan.Record
	var collect func(framescan.Record)
	if emit {
		collect = func(r framescan.Record) { emitted = append(emitted, r) }
	}
	var m, tm *mapfile.File
	if shared {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err = mapfile.Map(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		tm = m.Share()
	}
	tap, err := framescan.NewTapMapped(path, tm, collect)
	if err != nil {
		t.Fatal(err)
	}
	var mt warcio.MemberTap = tap
	if wrap != nil {
		mt = wrap(tap)
	}
	r, err := warcio.Open(path, warcio.Options{Map: mapped || shared, Mapping: m, SkipPayloadDigest: true, Tap: mt})
	if err != nil {
		tap.Close()
		t.Fatal(err)
	}
	for i := 0; i < 1_000_000; i++ {
		if _, err := r.Next(); err == io.EOF {
			break
		}
	}
	r.Close()
	res, err := tap.Finish()
	if err != nil {
		t.Fatal(err)
	}
	proved, refused := tap.Members()
	if emit {
		if len(res.Records) != 0 {
			t.Fatalf("%s: %d records in the Result as well as emitted", path, len(res.Records))
		}
		res.Records = emitted
	}
	return res, proved, refused
}

// sameAsFile checks that tap mode gives the Result File gives.
func sameAsFile(t *testing.T, name, path string, got *framescan.Result) {
	t.Helper()
	want, err := framescan.File(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: tap mode found %d records, %d members, %d gaps, %d data bytes; File %d, %d, %d, %d", name,
			len(got.Records), got.Members, len(got.Gaps), got.DataBytes, len(want.Records), want.Members, len(want.Gaps), want.DataBytes)
		for i := range min(len(got.Records), len(want.Records)) {
			if !reflect.DeepEqual(got.Records[i], want.Records[i]) {
				t.Errorf("%s record %d: tap %+v, File %+v", name, i, got.Records[i], want.Records[i])
				break
			}
		}
		if !reflect.DeepEqual(got.Gaps, want.Gaps) {
			t.Errorf("%s gaps: tap %+v, File %+v", name, got.Gaps, want.Gaps)
		}
	}
}

// generated writes warcgen.Cases (every layout, sound and damaged, some
// with random stored damage on top) to dir.
func generated(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for _, c := range warcgen.Cases(27, 48) {
		p := filepath.Join(dir, c.Name)
		if err := os.WriteFile(p, c.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestTapSameAsFile: on every file of the shared corpus and on warcgen's
// damaged layouts, framing the members warcio's reader inflates (mapped
// and buffered; records held or emitted as they are decided; the tap and
// the reader on one shared mapping) gives
// exactly the Result File gives by inflating on its own, and on the compressed corpus most members are taken from the
// reader (proved), not inflated again.
func TestTapSameAsFile(t *testing.T) {
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	corpus := len(files)
	files = append(files, generated(t, t.TempDir())...)
	var proved, refused int
	for i, p := range files {
		for _, mode := range []struct{ mapped, emit, shared bool }{{true, false, false}, {false, false, false}, {true, true, false}, {true, true, true}} {
			res, pr, rf := tapped(t, p, mode.mapped, mode.emit, mode.shared, nil)
			sameAsFile(t, fmt.Sprintf("%s (%+v)", filepath.Base(p), mode), p, res)
			if i < corpus {
				proved, refused = proved+pr, refused+rf
			}
		}
	}
	if proved == 0 || refused > proved/10 {
		t.Errorf("corpus: %d members proved, %d refused: the reader's bytes were not used", proved, refused)
	}
}

// faultTap is the one fake: it passes what warcio's reader reports to the
// tap with one kind of fault injected into every third member.
type faultTap struct {
	next    warcio.MemberTap
	kind    string
	members int
	hit     bool // the current member is faulted
	writes  int
	// merge is 1 after a member's End was swallowed, 2 after the next
	// Member was too; mergeOff is the first member's offset.
	merge    int
	mergeOff int64
	// skip is 1 while a member is being swallowed, 2 after its End, 3
	// while the next member is passed under its offset (skipOff).
	skip     int
	skipOff  int64
	injected int
}

func (f *faultTap) Member(off int64) {
	f.members++
	f.hit = f.members%3 == 2
	f.writes = 0
	if f.kind == "merge" && f.merge == 1 {
		f.merge = 2 // swallowed: its data goes on as the member before's
		return
	}
	if f.kind == "skip" {
		switch {
		case f.skip == 2:
			// The next member's bytes under the skipped one's offset.
			f.skip, f.hit = 3, false
			f.next.Member(f.skipOff)
			return
		case f.hit:
			f.skip, f.skipOff = 1, off
			return
		}
	}
	if f.hit && f.kind == "shift" {
		off++
		f.injected++
	}
	f.next.Member(off)
}

func (f *faultTap) Write(p []byte) {
	if f.skip == 1 {
		return
	}
	f.writes++
	if f.hit && f.writes == 1 {
		switch f.kind {
		case "flip":
			q := append([]byte(nil), p...)
			q[len(q)/2] ^= 0x20
			f.injected++
			f.next.Write(q)
			return
		case "drop":
			f.injected++
			return
		case "extra":
			f.injected++
			f.next.Write(p)
			f.next.Write([]byte("\r\n"))
			return
		}
	}
	f.next.Write(p)
}

func (f *faultTap) End(off, n int64, complete bool) {
	switch {
	case f.skip == 1 && complete:
		f.skip = 2
		f.injected++
		return
	case f.skip == 1:
		// Not a member to skip after all (its data is dropped: refused).
		f.skip = 0
		f.next.Member(off)
		f.next.End(off, n, complete)
		return
	case f.skip == 3:
		f.skip = 0
		f.next.End(f.skipOff, off+n-f.skipOff, complete)
		return
	}
	if f.kind == "merge" {
		switch {
		case f.merge == 2:
			// Two members reported as one.
			n, off = off+n-f.mergeOff, f.mergeOff
			f.merge = 0
		case f.merge == 0 && f.hit && complete:
			f.merge, f.mergeOff = 1, off
			f.injected++
			return
		}
		f.next.End(off, n, complete)
		return
	}
	if f.hit {
		switch f.kind {
		case "long":
			n++
			f.injected++
		case "short":
			n -= 3
			f.injected++
		case "incomplete":
			complete = false
			f.injected++
		case "shift":
			off++
		}
	}
	f.next.End(off, n, complete)
}

// TestTapFaults: a tap that passes wrong bytes (one byte flipped, a chunk
// dropped, bytes added), reports a wrong member length (longer, shorter,
// two members as one), a wrong offset, or a complete member as
// incomplete, or skips a member and passes the next one's bytes under its
// offset with the two members' length (the trailer then matches: only the
// check of the first bytes against the member's own deflate data refuses
// it), never changes the Result: every such member is refused
// (its trailer does not match, or it is not reported complete) and framed
// by the scan's own walk, so the Result is still File's.
func TestTapFaults(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	files = append(files, generated(t, t.TempDir())...)
	for _, kind := range []string{"flip", "drop", "extra", "long", "short", "incomplete", "merge", "shift", "skip"} {
		var injected, refused int
		for _, p := range files {
			var ft *faultTap
			res, _, rf := tapped(t, p, true, true, true, func(next warcio.MemberTap) warcio.MemberTap {
				ft = &faultTap{next: next, kind: kind}
				return ft
			})
			sameAsFile(t, kind+" "+filepath.Base(p), p, res)
			injected += ft.injected
			refused += rf
		}
		if injected == 0 {
			t.Errorf("%s: no fault injected", kind)
		}
		if refused < injected/2 {
			t.Errorf("%s: %d faults injected, only %d members refused", kind, injected, refused)
		}
	}
}
