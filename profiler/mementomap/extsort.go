package mementomap

import (
	"bufio"
	"bytes"
	"container/heap"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// extSorter sorts newline-free byte strings with bounded memory: it keeps
// up to limit bytes in memory, spills sorted runs to temporary files and
// merges the runs k-way at the end.
type extSorter struct {
	dir   string
	limit int64
	mem   int64
	lines []string
	runs  []*os.File
}

func newExtSorter(dir string, limit int64) *extSorter {
	if limit <= 0 {
		limit = 256 << 20
	}
	return &extSorter{dir: dir, limit: limit}
}

func (s *extSorter) add(line string) error {
	s.lines = append(s.lines, line)
	s.mem += int64(len(line)) + 32
	if s.mem >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *extSorter) spill() error {
	slices.Sort(s.lines)
	f, err := os.CreateTemp(s.dir, ".mementomap-run-*")
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	s.runs = append(s.runs, f)
	bw := bufio.NewWriterSize(f, 1<<20)
	for _, l := range s.lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	s.lines = s.lines[:0]
	s.mem = 0
	return nil
}

// spills returns the number of runs written to disk.
func (s *extSorter) spills() int { return len(s.runs) }

type runHead struct {
	line []byte
	br   *bufio.Reader
}

type runHeap []*runHead

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].line, h[j].line) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runHead)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func readRunLine(br *bufio.Reader) ([]byte, error) {
	l, err := br.ReadBytes('\n')
	if err != nil {
		if err == io.EOF && len(l) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return l[:len(l)-1], nil
}

// each calls f with every line in sorted order.
func (s *extSorter) each(f func(line []byte) error) error {
	if len(s.runs) == 0 {
		slices.Sort(s.lines)
		for _, l := range s.lines {
			if err := f([]byte(l)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.lines) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	h := make(runHeap, 0, len(s.runs))
	for _, r := range s.runs {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return err
		}
		br := bufio.NewReaderSize(r, 1<<16)
		l, err := readRunLine(br)
		if err == io.EOF {
			continue
		}
		if err != nil {
			return fmt.Errorf("read run %s: %w", r.Name(), err)
		}
		h = append(h, &runHead{line: l, br: br})
	}
	heap.Init(&h)
	for len(h) > 0 {
		top := h[0]
		if err := f(top.line); err != nil {
			return err
		}
		l, err := readRunLine(top.br)
		if err == io.EOF {
			heap.Pop(&h)
			continue
		}
		if err != nil {
			return fmt.Errorf("read run: %w", err)
		}
		top.line = l
		heap.Fix(&h, 0)
	}
	return nil
}

// close removes the spill files.
func (s *extSorter) close() error {
	var errs []string
	for _, r := range s.runs {
		r.Close()
		if err := os.Remove(r.Name()); err != nil {
			errs = append(errs, err.Error())
		}
	}
	s.runs = nil
	s.lines = nil
	if len(errs) > 0 {
		return fmt.Errorf("remove spill files: %s", strings.Join(errs, "; "))
	}
	return nil
}
