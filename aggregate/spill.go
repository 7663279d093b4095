package aggregate

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Bounded merging. An upstream TimeMap can list millions of mementos (a
// 32 MiB page holds ~250,000; an archive may send MaxPages of them), so
// the aggregator never holds one whole in memory: each asked archive's
// mementos are parsed a chunk at a time (timeMapChunk) into a batch of at
// most spillBatch bytes, the batch is sorted and appended to that
// archive's spill file (unlinked at once: nothing is left behind, even
// after a crash) as part of a sorted run — an archive listing its
// mementos oldest first, as TimeMaps do, makes one run — and the runs of
// every archive are merged k-way (at most mergeFanIn at once, in passes
// when there are more) into one sorted, de-duplicated run the answer is
// then written from as it is read. Memory per request is therefore
// bounded by the number of archives asked, not by what they list:
// per archive the read buffer, one chunk and its parse, one batch and
// (for the cache) at most cacheEntryMax mementos; per merge mergeFanIn
// read buffers. Disk per request is at most twice what the archives sent
// (their mementos, then the merged run).
const (
	spillBatch  = 2 << 20 // bytes of mementos sorted in memory at once
	mergeFanIn  = 16      // runs merged at once
	runReadBuf  = 32 << 10
	spillWriteB = 64 << 10
)

// memento record on disk: int64 Unix seconds, uint16 archive index,
// uint32 URI length, the URI.
const recHeader = 8 + 2 + 4

// segment is a byte range of a spill file holding one sorted run.
type segment struct{ start, end int64 }

// spill is one archive's mementos of one lookup, on disk in sorted runs.
type spill struct {
	f     *os.File
	w     *bufio.Writer
	off   int64 // bytes written (flushed or buffered)
	runs  []segment
	open  bool // the last run may be extended
	last  Memento
	batch []Memento
	bsize int
	count int
	arch  uint16
	// keep holds the mementos for the cache while they are at most
	// keepMax; nil once there are more.
	keep    []Memento
	keepMax int
	err     error
}

func newSpill(dir string, arch uint16, keepMax int) (*spill, error) {
	f, err := os.CreateTemp(dir, ".spill-*")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	os.Remove(f.Name()) // the open file is all we need: nothing to clean up later
	s := &spill{f: f, w: bufio.NewWriterSize(f, spillWriteB), arch: arch, keepMax: keepMax}
	if keepMax > 0 {
		s.keep = []Memento{}
	}
	return s, nil
}

func (s *spill) close() {
	if s != nil && s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// add takes one memento (its Archive is implied by the spill).
func (s *spill) add(m Memento) {
	if s.err != nil {
		return
	}
	s.count++
	if s.keep != nil {
		if len(s.keep) < s.keepMax {
			s.keep = append(s.keep, m)
		} else {
			s.keep = nil
		}
	}
	s.batch = append(s.batch, m)
	s.bsize += len(m.URI) + 64
	if s.bsize >= spillBatch {
		s.flushBatch()
	}
}

// less orders mementos of one archive: by time, then URI-M.
func lessTU(x, y *Memento) bool {
	if !x.Datetime.Equal(y.Datetime) {
		return x.Datetime.Before(y.Datetime)
	}
	return x.URI < y.URI
}

func (s *spill) flushBatch() {
	if len(s.batch) == 0 || s.err != nil {
		return
	}
	slices.SortFunc(s.batch, func(x, y Memento) int {
		switch {
		case lessTU(&x, &y):
			return -1
		case lessTU(&y, &x):
			return 1
		}
		return 0
	})
	if !s.open || lessTU(&s.batch[0], &s.last) {
		s.endRun()
		s.runs = append(s.runs, segment{start: s.off, end: s.off})
		s.open = true
	}
	for i := range s.batch {
		if err := s.writeRecord(s.batch[i], s.arch); err != nil {
			s.err = err
			return
		}
	}
	s.last = Memento{URI: strings.Clone(s.batch[len(s.batch)-1].URI), Datetime: s.batch[len(s.batch)-1].Datetime}
	s.runs[len(s.runs)-1].end = s.off
	clear(s.batch)
	s.batch, s.bsize = s.batch[:0], 0
}

func (s *spill) endRun() { s.open = false }

// mark is a point an archive's answer can be rolled back to (a TimeMap
// page that failed half read is dropped whole, as before streaming).
type mark struct {
	off   int64
	runs  int
	count int
	keep  int
	open  bool
	last  Memento
}

func (s *spill) mark() mark {
	s.flushBatch()
	return mark{off: s.off, runs: len(s.runs), count: s.count, keep: len(s.keep), open: s.open, last: s.last}
}

func (s *spill) rollback(m mark) {
	if s.err != nil {
		return
	}
	if err := s.w.Flush(); err != nil {
		s.err = fmt.Errorf("spill: %w", err)
		return
	}
	if _, err := s.f.Seek(m.off, io.SeekStart); err != nil {
		s.err = fmt.Errorf("spill: %w", err)
		return
	}
	s.w.Reset(s.f)
	s.off, s.count, s.open, s.last = m.off, m.count, m.open, m.last
	s.runs = s.runs[:m.runs]
	if m.runs > 0 && s.runs[m.runs-1].end > m.off {
		s.runs[m.runs-1].end = m.off
	}
	if s.keep != nil && len(s.keep) >= m.keep {
		s.keep = s.keep[:m.keep]
	}
	clear(s.batch)
	s.batch, s.bsize = s.batch[:0], 0
}

// finish writes what is buffered; the runs are then readable.
func (s *spill) finish() error {
	s.flushBatch()
	if s.err == nil {
		if err := s.w.Flush(); err != nil {
			s.err = fmt.Errorf("spill: %w", err)
		}
	}
	s.batch = nil
	return s.err
}

// runReader reads one run's records in order.
type runReader struct {
	r    *bufio.Reader
	left int64
	cur  Memento
	arch uint16
	rank int
}

func (rr *runReader) next(names []string) (bool, error) {
	if rr.left <= 0 {
		return false, nil
	}
	var hdr [recHeader]byte
	if _, err := io.ReadFull(rr.r, hdr[:]); err != nil {
		return false, fmt.Errorf("spill: read: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[10:14])
	if int64(n) > rr.left {
		return false, errors.New("spill: corrupt record")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rr.r, b); err != nil {
		return false, fmt.Errorf("spill: read: %w", err)
	}
	rr.left -= int64(recHeader) + int64(n)
	rr.arch = binary.BigEndian.Uint16(hdr[8:10])
	rr.cur = Memento{URI: string(b), Datetime: time.Unix(int64(binary.BigEndian.Uint64(hdr[0:8])), 0).UTC(), Archive: names[rr.arch]}
	return true, nil
}

type runHeap struct {
	rs []*runReader
}

func (h *runHeap) Len() int { return len(h.rs) }
func (h *runHeap) Less(i, j int) bool {
	x, y := h.rs[i], h.rs[j]
	if !x.cur.Datetime.Equal(y.cur.Datetime) {
		return x.cur.Datetime.Before(y.cur.Datetime)
	}
	if x.rank != y.rank {
		return x.rank < y.rank
	}
	return x.cur.URI < y.cur.URI
}
func (h *runHeap) Swap(i, j int) { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *runHeap) Push(x any)    { h.rs = append(h.rs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	x := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return x
}

// run is a sorted run of some file.
type run struct {
	f   *os.File
	seg segment
}

// merger merges sorted runs by (time, archive rank, URI-M), dropping a
// URI-M repeated at the same datetime.
type merger struct {
	names []string
	ranks []int
	dir   string
	files []*os.File // temporary files it created
}

func (mg *merger) close() {
	for _, f := range mg.files {
		f.Close()
	}
	mg.files = nil
}

// each merges runs and calls fn with each memento in order.
func (mg *merger) each(runs []run, fn func(Memento) error) error {
	h := &runHeap{}
	for _, r := range runs {
		rr := &runReader{r: bufio.NewReaderSize(io.NewSectionReader(r.f, r.seg.start, r.seg.end-r.seg.start), runReadBuf), left: r.seg.end - r.seg.start}
		ok, err := rr.next(mg.names)
		if err != nil {
			return err
		}
		if ok {
			rr.rank = mg.ranks[rr.arch]
			h.rs = append(h.rs, rr)
		}
	}
	heap.Init(h)
	// The URI-Ms already given at the current datetime, hashed: a repeat
	// (two archives, or one archive twice, listing the same URI-M at the
	// same time) is given once.
	seed := maphash.MakeSeed()
	var groupAt time.Time
	group := map[uint64]struct{}{}
	for h.Len() > 0 {
		rr := h.rs[0]
		m := rr.cur
		if !m.Datetime.Equal(groupAt) {
			groupAt = m.Datetime
			clear(group)
		}
		k := maphash.String(seed, m.URI)
		if _, dup := group[k]; !dup {
			group[k] = struct{}{}
			if err := fn(m); err != nil {
				return err
			}
		}
		ok, err := rr.next(mg.names)
		if err != nil {
			return err
		}
		if ok {
			rr.rank = mg.ranks[rr.arch]
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// mergeAll merges runs into one run in a new file, in passes of at most
// mergeFanIn runs, and returns it with the number of mementos and the
// first and last.
func (mg *merger) mergeAll(runs []run) (out run, n int, first, last Memento, err error) {
	for {
		groups := [][]run{runs}
		final := len(runs) <= mergeFanIn
		if !final {
			groups = nil
			for i := 0; i < len(runs); i += mergeFanIn {
				groups = append(groups, runs[i:min(i+mergeFanIn, len(runs))])
			}
		}
		var next []run
		for _, g := range groups {
			sp, err := newSpill(mg.dir, 0, 0)
			if err != nil {
				return run{}, 0, Memento{}, Memento{}, err
			}
			mg.files = append(mg.files, sp.f)
			cnt := 0
			err = mg.each(g, func(m Memento) error {
				if cnt == 0 {
					first = m
				}
				last = m
				cnt++
				return sp.writeRecord(m, mg.index(m.Archive))
			})
			if err == nil {
				err = sp.w.Flush()
			}
			if err != nil {
				return run{}, 0, Memento{}, Memento{}, err
			}
			next = append(next, run{f: sp.f, seg: segment{0, sp.off}})
			n = cnt
		}
		runs = next
		if final {
			return runs[0], n, first, last, nil
		}
	}
}

func (mg *merger) index(name string) uint16 {
	for i, n := range mg.names {
		if n == name {
			return uint16(i)
		}
	}
	return 0
}

// writeRecord appends one record (merge output: already ordered).
func (s *spill) writeRecord(m Memento, arch uint16) error {
	var hdr [recHeader]byte
	binary.BigEndian.PutUint64(hdr[0:8], uint64(m.Datetime.Unix()))
	binary.BigEndian.PutUint16(hdr[8:10], arch)
	binary.BigEndian.PutUint32(hdr[10:14], uint32(len(m.URI)))
	s.w.Write(hdr[:])
	if _, err := s.w.WriteString(m.URI); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	s.off += int64(recHeader + len(m.URI))
	return nil
}
