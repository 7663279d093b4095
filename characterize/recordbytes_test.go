package characterize

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// corpusCaptures returns the captures of the gzip-compressed corpus WARCs
// (one record a gzip member) with their record bytes, as the crawl writer
// hands them to consumers.
func corpusCaptures(t *testing.T) (files []string, caps []wayside.Capture) {
	t.Helper()
	for _, path := range testenv.CorpusWARCs(t) {
		if !strings.HasSuffix(path, ".gz") {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := warcio.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil || rec.Length == 0 {
				continue
			}
			zr, err := gzip.NewReader(bytes.NewReader(raw[rec.Offset : rec.Offset+rec.Length]))
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false)
			c := rec.Capture(filepath.Base(path))
			if c.RecordBytes, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
			caps = append(caps, c)
			n++
		}
		r.Close()
		if n > 0 {
			files = append(files, path)
		}
	}
	if len(caps) < 100 {
		t.Fatalf("only %d corpus captures", len(caps))
	}
	return files, caps
}

// Captures that carry their record bytes are characterized from them —
// no record is read back, the WARC files need not even be reachable —
// exactly as a scan of the files characterizes them; without the bytes
// (RecordBudget spent) every capture is read back, with the same result.
func TestCharacterizeFromRecordBytes(t *testing.T) {
	files, caps := corpusCaptures(t)
	fresh := openStore(t, "", StoreOptions{})
	scanAll(t, newCharacterizer(t, fresh, Options{}), files...)
	want := render(fresh, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	captures := 0
	for _, c := range caps {
		if c.IsCapture() {
			captures++
		}
	}
	for _, tc := range []struct {
		name     string
		budget   int64
		dirs     []string
		readBack int
	}{
		{"with record bytes, files out of reach", 0, []string{t.TempDir()}, 0},
		{"budget of one byte: read back", 1, []string{filepath.Dir(files[0])}, captures - revisits(caps)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, "", StoreOptions{})
			c := newCharacterizer(t, st, Options{Dirs: tc.dirs, RecordBudget: tc.budget, Workers: 2})
			if !c.WantsRecordBytes() {
				t.Fatal("the characterizer does not ask for record bytes")
			}
			for _, cp := range caps {
				if err := c.OnCapture(ctx, cp); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			s := c.Stats()
			if s.Failed != 0 || s.ReadBack != int64(tc.readBack) {
				t.Fatalf("stats %+v: want no failure and %d records read back", s, tc.readBack)
			}
			if got := render(st, true); got != want {
				t.Fatalf("characterized:\n%s\nwant (scan of the files):\n%s", got, want)
			}
		})
	}
}

func revisits(caps []wayside.Capture) int {
	n := 0
	for _, c := range caps {
		if c.IsRevisit() {
			n++
		}
	}
	return n
}

// A revisit inherits from the original it names (WARC-Refers-To, else
// WARC-Refers-To-Target-URI and -Date), else from the first record with
// its digest, whatever order the captures arrive in: the corpus delivered
// backwards and shuffled is characterized exactly as a scan of the files
// in order. (pywb-dupes.warc.gz's revisit of http://example.com names its
// original by URI and date; pywb-example-wget-1-14.warc.gz holds another
// record with the same digest, which a revisit used to inherit from when
// it arrived first.)
func TestRevisitInheritanceIndependentOfOrder(t *testing.T) {
	files, caps := corpusCaptures(t)
	fresh := openStore(t, "", StoreOptions{})
	scanAll(t, newCharacterizer(t, fresh, Options{}), files...)
	want := render(fresh, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	backwards := slices.Clone(caps)
	slices.Reverse(backwards)
	shuffled := slices.Clone(caps)
	rand.New(rand.NewPCG(9, 2014)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for name, order := range map[string][]wayside.Capture{"backwards": backwards, "shuffled": shuffled} {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, "", StoreOptions{})
			c := newCharacterizer(t, st, Options{Dirs: []string{t.TempDir()}, Workers: 1})
			for _, cp := range order {
				if err := c.OnCapture(ctx, cp); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := st.Check(); err != nil {
				t.Fatal(err)
			}
			if got := render(st, true); got != want {
				t.Fatalf("characterized:\n%s\nwant (scan of the files in order):\n%s", got, want)
			}
		})
	}
}
