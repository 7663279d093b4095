package convert

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// blockBuffer holds the block of the record being converted: in memory up
// to max bytes, the rest in a temporary file in dir. The file's name is
// removed as soon as it is made: it lives only while open, so a process
// killed mid-conversion (SIGKILL) leaves nothing on disk to clean up.
type blockBuffer struct {
	max  int
	dir  string
	mem  bytes.Buffer
	f    *os.File
	flen int64
	n    int64 // bytes held
	err  error
}

// sink is the warcio.Options.BlockSink: it empties the buffer.
func (b *blockBuffer) sink() io.Writer {
	b.mem.Reset()
	b.n, b.flen, b.err = 0, 0, nil
	if b.f != nil {
		if err := b.f.Truncate(0); err != nil {
			b.err = err
		}
	}
	return b
}

func (b *blockBuffer) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.flen == 0 && b.mem.Len()+len(p) <= b.max {
		b.mem.Write(p)
		b.n += int64(len(p))
		return len(p), nil
	}
	if b.f == nil {
		f, err := os.CreateTemp(b.dir, ".arc2warc-block-*")
		if err != nil {
			b.err = err
			return 0, err
		}
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			b.err = err
			return 0, err
		}
		b.f = f
		if err := failpoint.Inject("convert.block-spilled"); err != nil {
			b.err = err
			return 0, err
		}
	}
	n, err := b.f.WriteAt(p, b.flen)
	b.flen += int64(n)
	b.n += int64(n)
	if err != nil {
		b.err = err
	}
	return n, err
}

// Reader returns the bytes held.
func (b *blockBuffer) Reader() (io.Reader, error) {
	if b.err != nil {
		return nil, fmt.Errorf("block buffer: %w", b.err)
	}
	if b.flen == 0 {
		return bytes.NewReader(b.mem.Bytes()), nil
	}
	return io.MultiReader(bytes.NewReader(b.mem.Bytes()), io.NewSectionReader(b.f, 0, b.flen)), nil
}

// Bytes returns the bytes held when they are at most limit bytes.
func (b *blockBuffer) Bytes(limit int64) ([]byte, error) {
	if b.n > limit {
		return nil, fmt.Errorf("block of %d bytes is larger than %d", b.n, limit)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// Close closes the temporary file (its name is gone already).
func (b *blockBuffer) Close() error {
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	return err
}
