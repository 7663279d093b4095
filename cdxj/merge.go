package cdxj

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// ErrUnsorted is wrapped by the error Merge returns when an input is not in
// byte order.
var ErrUnsorted = errors.New("cdxj: input not sorted")

// MergeInput is one sorted input of Merge.
type MergeInput struct {
	Name string // used in errors
	R    io.Reader
}

// MergeOptions tune Merge.
type MergeOptions struct {
	// Unique drops lines equal to the line written before them.
	Unique bool
}

// Merge writes the byte-order merge of sorted inputs to w, one line per
// line, each ending in "\n" (like `LC_ALL=C sort -m`). Memory is bounded by
// one buffered line per input. Each input is checked as it is read: a line
// that sorts before the previous line of the same input is an error naming
// the input and line number (wrapping ErrUnsorted), returned before that
// line is written.
func Merge(w io.Writer, inputs []MergeInput, opts MergeOptions) error {
	srcs := make([]lineSource, len(inputs))
	for i, in := range inputs {
		srcs[i] = &readerSource{name: in.Name, br: bufio.NewReaderSize(in.R, 64<<10)}
	}
	return merge(w, srcs, opts)
}

// lineSource yields lines without their newline; io.EOF at the end.
type lineSource interface {
	next() ([]byte, error)
	pos() string
}

type readerSource struct {
	name string
	br   *bufio.Reader
	n    int
	buf  []byte
}

func (r *readerSource) next() ([]byte, error) {
	for {
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			r.buf = append(r.buf[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = r.br.ReadSlice('\n')
				r.buf = append(r.buf, line...)
			}
			line = r.buf
		}
		if len(line) == 0 && err != nil {
			return nil, err
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("cdxj: %s line %d: %w", r.name, r.n+1, err)
		}
		r.n++
		complete := err == nil // ends in "\n"
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue // blank lines carry nothing
		}
		if !complete && bytes.Contains(line, []byte(" {")) && !bytes.HasSuffix(bytes.TrimRight(line, " \t"), []byte("}")) {
			// A CDXJ line the file ends inside: the shard was cut.
			return nil, fmt.Errorf("cdxj: %s line %d: incomplete line at the end of the file (truncated?): %s", r.name, r.n, excerpt.Quote(line, 120))
		}
		return line, nil
	}
}

func (r *readerSource) pos() string { return fmt.Sprintf("%s line %d", r.name, r.n) }

type cursor struct {
	src  lineSource
	line []byte
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return bytes.Compare(h[i].line, h[j].line) < 0 }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// advance reads the cursor's next line, checking order.
func (c *cursor) advance() (bool, error) {
	line, err := c.src.next()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if c.line != nil && bytes.Compare(line, c.line) < 0 {
		return false, fmt.Errorf("%w: %s sorts before the line above it (%s < %s)", ErrUnsorted, c.src.pos(), excerpt.Quote(line, 120), excerpt.Quote(c.line, 120))
	}
	c.line = append(c.line[:0], line...)
	return true, nil
}

func merge(w io.Writer, srcs []lineSource, opts MergeOptions) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	h := make(cursorHeap, 0, len(srcs))
	for _, s := range srcs {
		c := &cursor{src: s}
		ok, err := c.advance()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	var last []byte
	wrote := false
	for len(h) > 0 {
		c := h[0]
		if !opts.Unique || !wrote || !bytes.Equal(c.line, last) {
			bw.Write(c.line)
			if err := bw.WriteByte('\n'); err != nil {
				return fmt.Errorf("cdxj: write: %w", err)
			}
			if opts.Unique {
				last = append(last[:0], c.line...)
			}
			wrote = true
		}
		ok, err := c.advance()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cdxj: write: %w", err)
	}
	return nil
}
