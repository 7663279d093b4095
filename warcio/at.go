package warcio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// OpenSuffix is the suffix of WARC files a writer still has open.
const OpenSuffix = ".open"

// FindFile opens the WARC (or ARC) file named file in the first of dirs that
// holds it, under its final name or, while a writer still has it open, with
// the ".open" suffix. file must be a plain base name.
func FindFile(dirs []string, file string) (*os.File, error) {
	if file == "" || filepath.Base(file) != file || file == "." || file == ".." {
		return nil, fmt.Errorf("warcio: bad WARC file name %q", file)
	}
	for _, d := range dirs {
		for _, name := range []string{file, file + OpenSuffix} {
			f, err := os.Open(filepath.Join(d, name))
			if err == nil {
				return f, nil
			}
			if !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("warcio: %w", err)
			}
		}
	}
	return nil, fmt.Errorf("warcio: WARC file %s not found in %v: %w", file, dirs, os.ErrNotExist)
}

// ReadAt reads the one record stored at offset in f (the start of its gzip
// member for compressed files), as Reader.Next would; length, when > 0,
// bounds the bytes read. The record's Offset is offset. Use
// Options.KeepPayload to get the payload bytes.
func ReadAt(f io.ReaderAt, name string, offset, length int64, opts Options) (*Record, error) {
	return new(Reader).ReadRecordAt(f, name, offset, length, opts)
}

// ReadRecordAt is ReadAt reusing r's buffers and decompressor (see Reset):
// a consumer reading many records back one at a time keeps one Reader.
func (r *Reader) ReadRecordAt(f io.ReaderAt, name string, offset, length int64, opts Options) (*Record, error) {
	n := int64(1<<62 - offset)
	if length > 0 {
		n = length
	}
	r.Reset(io.NewSectionReader(f, offset, n), name, opts)
	rec, err := r.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("warcio: %s offset %d: no record there", name, offset)
	}
	if err != nil {
		return nil, fmt.Errorf("warcio: %s offset %d: %w", name, offset, err)
	}
	rec.Offset += offset
	return rec, nil
}
