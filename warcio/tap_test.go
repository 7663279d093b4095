package warcio

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// recordingTap keeps what Options.Tap reports.
type recordingTap struct {
	members []tappedMember
	open    bool
	bad     string
}

type tappedMember struct {
	off, n   int64
	complete bool
	data     []byte
}

func (t *recordingTap) Member(off int64) {
	if t.open {
		t.bad = "Member before the End of the member before"
	}
	t.open = true
	t.members = append(t.members, tappedMember{off: off, n: -1})
}

func (t *recordingTap) Write(p []byte) {
	if !t.open {
		t.bad = "Write outside a member"
		return
	}
	m := &t.members[len(t.members)-1]
	m.data = append(m.data, p...)
}

func (t *recordingTap) End(off, n int64, complete bool) {
	m := &t.members[len(t.members)-1]
	if !t.open || off != m.off {
		t.bad = "End of a member not open"
	}
	t.open = false
	m.n, m.complete = n, complete
}

// TestTapSeesEveryMember: on every gzip WARC and ARC of the shared corpus,
// read mapped and through the buffer, Options.Tap is told of every member
// in file order, the members tile the file, each is reported complete,
// and the bytes it received are exactly what Go's standard library
// inflater (not the one the reader uses) makes of that stretch of the
// file as one member.
func TestTapSeesEveryMember(t *testing.T) {
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	n := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b || strings.Contains(p, "damaged") {
			continue
		}
		for _, mapped := range []bool{true, false} {
			tap := &recordingTap{}
			r, err := Open(p, Options{Map: mapped, SkipPayloadDigest: true, Tap: tap})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 1_000_000; i++ {
				if _, err := r.Next(); err == io.EOF {
					break
				} else if err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			r.Close()
			name := filepath.Base(p)
			if tap.bad != "" {
				t.Errorf("%s (mapped %v): %s", name, mapped, tap.bad)
			}
			var at int64
			for _, m := range tap.members {
				if m.off != at || !m.complete || m.n <= 0 {
					t.Errorf("%s (mapped %v): member at %d (%d bytes, complete %v), want one complete at %d", name, mapped, m.off, m.n, m.complete, at)
					break
				}
				zr, err := gzip.NewReader(bytes.NewReader(data[m.off : m.off+m.n]))
				if err != nil {
					t.Fatalf("%s offset %d: %v", name, m.off, err)
				}
				zr.Multistream(false)
				want, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(m.data, want) {
					t.Errorf("%s (mapped %v) member at %d: tapped %d bytes, compress/gzip inflates %d (%v)", name, mapped, m.off, len(m.data), len(want), err)
					break
				}
				at += m.n
				n++
			}
			if at != int64(len(data)) {
				t.Errorf("%s (mapped %v): members cover %d of %d bytes", name, mapped, at, len(data))
			}
		}
	}
	if n == 0 {
		t.Fatal("no member tapped")
	}
}
