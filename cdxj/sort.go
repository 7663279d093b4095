package cdxj

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wayside-archive/wayside/internal/iox"
)

// SortOptions tune a Sorter.
type SortOptions struct {
	// MaxMemory is how many bytes of lines (and 8 bytes of index per line)
	// are held before a sorted run is written to a temporary file (default
	// 256 MiB, at most 4 GiB).
	MaxMemory int64
	// TempDir holds the runs ("" = os.TempDir()).
	TempDir string
	// Unique drops duplicate lines.
	Unique bool
}

// mergeFanIn is how many runs one merge reads at once: WriteTo first
// merges groups of this many runs into longer runs while there are more,
// so that open files and read buffers stay bounded however many runs a
// large input spills.
const mergeFanIn = 64

// runBuffer is the read and write buffer of a run file (a merge of
// mergeFanIn runs holds 2 MiB of them).
const runBuffer = 32 << 10

// Sorter sorts index lines in byte order with bounded memory: lines are
// kept in memory up to MaxMemory, then sorted and spilled to a temporary
// run file; WriteTo merges the runs. Not safe for concurrent use.
//
// The lines are held outside the garbage-collected heap (an anonymous
// memory mapping, reused from run to run): they cost their size in memory
// and nothing in collection, and they do not raise the heap's collection
// goal, which GOGC makes a multiple of the live heap — held lines in the
// heap made a process's peak memory grow with its input even below
// MaxMemory.
type Sorter struct {
	opts SortOptions
	// mem holds the lines from its start (used bytes) and their index
	// from its end: n entries, off<<32|len, in the order added. It is
	// mapped on the first Add.
	mem     []byte
	unmap   func()
	cleanup runtime.Cleanup // unmaps mem should the Sorter be dropped unclosed
	used, n int
	runs    []*os.File
	spilled int
	buf     []byte
}

// NewSorter returns an empty Sorter.
func NewSorter(opts SortOptions) *Sorter {
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = 256 << 20
	}
	opts.MaxMemory = min(opts.MaxMemory, math.MaxUint32)
	return &Sorter{opts: opts}
}

// AddLine adds the CDXJ form of l.
func (s *Sorter) AddLine(l *Line) error {
	s.buf = l.Format(s.buf[:0])
	return s.Add(s.buf)
}

// Add adds one line (a trailing newline is dropped).
func (s *Sorter) Add(line []byte) error {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return nil
	}
	if s.mem == nil {
		s.mem, s.unmap = mapMemory(int(s.opts.MaxMemory &^ 7))
		s.cleanup = runtime.AddCleanup(s, func(unmap func()) { unmap() }, s.unmap)
	}
	need := len(line) + 8
	if s.used+need > len(s.mem)-8*s.n {
		if err := s.spill(); err != nil {
			return err
		}
		if need > len(s.mem) {
			// Longer than the whole memory: a run of its own.
			s.spilled++
			return s.writeRun(func(yield func([]byte) bool) { yield(line) })
		}
	}
	copy(s.mem[s.used:], line)
	s.n++
	binary64(s.mem, len(s.mem)-8*s.n, uint64(s.used)<<32|uint64(len(line)))
	s.used += len(line)
	return nil
}

// binary64 stores v at mem[at:at+8] in the machine's byte order (at is a
// multiple of 8 from an aligned base).
func binary64(mem []byte, at int, v uint64) { *(*uint64)(unsafe.Pointer(&mem[at])) = v }

// Len returns the number of lines added.
func (s *Sorter) Len() int { return s.n + s.spilled }

// sorted sorts the lines in memory and returns their index entries in
// order (valid until the next Add or Close; line gives an entry's line).
func (s *Sorter) sorted() []uint64 {
	if s.n == 0 {
		return nil
	}
	idx := unsafe.Slice((*uint64)(unsafe.Pointer(&s.mem[len(s.mem)-8*s.n])), s.n)
	slices.SortFunc(idx, func(a, b uint64) int { return bytes.Compare(s.line(a), s.line(b)) })
	return idx
}

// line returns the line of index entry e.
func (s *Sorter) line(e uint64) []byte {
	off := int(e >> 32)
	return s.mem[off : off+int(uint32(e))]
}

// spill writes the lines in memory as a sorted run and empties the memory.
func (s *Sorter) spill() error {
	if s.n == 0 {
		return nil
	}
	idx := s.sorted()
	err := s.writeRun(func(yield func([]byte) bool) {
		for _, e := range idx {
			if !yield(s.line(e)) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	s.spilled += s.n
	s.used, s.n = 0, 0
	return nil
}

// writeRun writes sorted lines to a new run file.
func (s *Sorter) writeRun(lines iter.Seq[[]byte]) error {
	f, err := os.CreateTemp(s.opts.TempDir, "wayside-cdxj-run-*")
	if err != nil {
		return fmt.Errorf("cdxj: sort: %w", err)
	}
	s.runs = append(s.runs, f)
	bw := bufio.NewWriterSize(f, runBuffer)
	for l := range lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cdxj: sort: write run: %w", err)
	}
	return nil
}

// WriteTo writes all lines in byte order to w and releases the runs.
func (s *Sorter) WriteTo(w io.Writer) (int64, error) {
	defer s.Close()
	for len(s.runs) > mergeFanIn {
		if err := s.mergeRuns(); err != nil {
			return 0, err
		}
	}
	cw := &iox.CountWriter{W: w}
	srcs := []lineSource{&memSource{s: s, idx: s.sorted()}}
	for _, f := range s.runs {
		src, err := runSource(f)
		if err != nil {
			return 0, err
		}
		srcs = append(srcs, src)
	}
	err := merge(cw, srcs, MergeOptions{Unique: s.opts.Unique})
	return cw.N, err
}

// mergeRuns merges the first mergeFanIn runs into one new run at the end.
func (s *Sorter) mergeRuns() error {
	group := s.runs[:mergeFanIn]
	srcs := make([]lineSource, 0, len(group))
	for _, f := range group {
		src, err := runSource(f)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
	}
	out, err := os.CreateTemp(s.opts.TempDir, "wayside-cdxj-run-*")
	if err != nil {
		return fmt.Errorf("cdxj: sort: %w", err)
	}
	s.runs = append(s.runs, out)
	if err := merge(out, srcs, MergeOptions{Unique: s.opts.Unique}); err != nil {
		return err
	}
	var first error
	for _, f := range group {
		f.Close()
		if err := os.Remove(f.Name()); err != nil && first == nil {
			first = fmt.Errorf("cdxj: sort: %w", err)
		}
	}
	s.runs = slices.Delete(s.runs, 0, mergeFanIn)
	return first
}

// runSource reads run file f from its start.
func runSource(f *os.File) (lineSource, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("cdxj: sort: %w", err)
	}
	return &readerSource{name: f.Name(), br: bufio.NewReaderSize(f, runBuffer)}, nil
}

// Close removes the temporary runs and releases the memory.
func (s *Sorter) Close() error {
	var first error
	for _, f := range s.runs {
		f.Close()
		if err := os.Remove(f.Name()); err != nil && first == nil {
			first = err
		}
	}
	s.runs = nil
	if s.unmap != nil {
		s.cleanup.Stop()
		s.unmap()
	}
	s.mem, s.unmap, s.used, s.n = nil, nil, 0, 0
	return first
}

// mapMemory returns size bytes of zeroed memory outside the collected heap
// (pages are only backed once touched) and what releases it. Should the
// mapping fail, the memory comes from the heap.
func mapMemory(size int) ([]byte, func()) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return make([]byte, size), func() {}
	}
	return mem, func() { unix.Munmap(mem) }
}

// memSource yields the lines in memory, sorted.
type memSource struct {
	s   *Sorter
	idx []uint64
	i   int
}

func (m *memSource) next() ([]byte, error) {
	if m.i >= len(m.idx) {
		return nil, io.EOF
	}
	m.i++
	return m.s.line(m.idx[m.i-1]), nil
}

func (m *memSource) pos() string { return fmt.Sprintf("memory line %d", m.i) }
