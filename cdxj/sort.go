package cdxj

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/wayside-archive/wayside/internal/iox"
)

// SortOptions tune a Sorter.
type SortOptions struct {
	// MaxMemory is how many bytes of lines are held before a sorted run is
	// written to a temporary file (default 256 MiB).
	MaxMemory int64
	// TempDir holds the runs ("" = os.TempDir()).
	TempDir string
	// Unique drops duplicate lines.
	Unique bool
}

// Sorter sorts index lines in byte order with bounded memory: lines are
// kept in memory up to MaxMemory, then sorted and spilled to a temporary
// run file; WriteTo merges the runs. Not safe for concurrent use.
type Sorter struct {
	opts    SortOptions
	lines   [][]byte
	chunk   []byte
	mem     int64
	runs    []*os.File
	spilled int
	buf     []byte
}

// NewSorter returns an empty Sorter.
func NewSorter(opts SortOptions) *Sorter {
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = 256 << 20
	}
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
	if len(s.chunk)+len(line) > cap(s.chunk) {
		s.chunk = make([]byte, 0, max(1<<20, len(line)))
	}
	start := len(s.chunk)
	s.chunk = append(s.chunk, line...)
	s.lines = append(s.lines, s.chunk[start:len(s.chunk):len(s.chunk)])
	s.mem += int64(len(line)) + 24
	if s.mem >= s.opts.MaxMemory {
		return s.spill()
	}
	return nil
}

// Len returns the number of lines added.
func (s *Sorter) Len() int { return len(s.lines) + s.spilled }

func (s *Sorter) sortMem() {
	slices.SortFunc(s.lines, bytes.Compare)
}

func (s *Sorter) spill() error {
	s.sortMem()
	f, err := os.CreateTemp(s.opts.TempDir, "wayside-cdxj-run-*")
	if err != nil {
		return fmt.Errorf("cdxj: sort: %w", err)
	}
	s.runs = append(s.runs, f)
	bw := bufio.NewWriterSize(f, 1<<20)
	for _, l := range s.lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cdxj: sort: write run: %w", err)
	}
	s.spilled += len(s.lines)
	// Sorting scattered the spilled lines over the whole array: every
	// entry is cleared, or the entries the next run does not overwrite
	// would keep its chunks (and older runs') alive, several times
	// MaxMemory in all.
	clear(s.lines[:cap(s.lines)])
	s.lines, s.chunk, s.mem = s.lines[:0], nil, 0
	return nil
}

// WriteTo writes all lines in byte order to w and releases the runs.
func (s *Sorter) WriteTo(w io.Writer) (int64, error) {
	defer s.Close()
	s.sortMem()
	cw := &iox.CountWriter{W: w}
	srcs := []lineSource{&memSource{lines: s.lines}}
	for _, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, fmt.Errorf("cdxj: sort: %w", err)
		}
		srcs = append(srcs, &readerSource{name: f.Name(), br: bufio.NewReaderSize(f, runBuffer(s.opts.MaxMemory, len(s.runs)))})
	}
	err := merge(cw, srcs, MergeOptions{Unique: s.opts.Unique})
	return cw.N, err
}

// runBuffer is the read buffer of each of n runs merged: together about
// maxMem, so that merging many runs (a large input sorted in a small
// MaxMemory) does not hold 256 KiB per run; at least 16 KiB.
func runBuffer(maxMem int64, n int) int {
	return int(min(max(maxMem/int64(max(n, 1)), 16<<10), 256<<10))
}

// Close removes the temporary runs.
func (s *Sorter) Close() error {
	var first error
	for _, f := range s.runs {
		f.Close()
		if err := os.Remove(f.Name()); err != nil && first == nil {
			first = err
		}
	}
	s.runs = nil
	s.lines, s.chunk = nil, nil
	return first
}

type memSource struct {
	lines [][]byte
	i     int
}

func (m *memSource) next() ([]byte, error) {
	if m.i >= len(m.lines) {
		return nil, io.EOF
	}
	m.i++
	return m.lines[m.i-1], nil
}

func (m *memSource) pos() string { return fmt.Sprintf("memory line %d", m.i) }
