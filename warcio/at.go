package warcio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// OpenSuffix is the suffix of WARC files a writer still has open.
const OpenSuffix = ".open"

// CheckFileName returns an error unless name is a plain base name, the only
// kind of WARC file name an index entry, a CDX line or an API request may
// carry: not empty, not "." or "..", without '/' or '\\' (no path: the
// reader looks the name up in its own directories, never elsewhere), and
// without NUL or other control characters.
func CheckFileName(name string) error {
	switch {
	case name == "":
		return errors.New("empty WARC file name")
	case name == "." || name == "..":
		return fmt.Errorf("WARC file name %q is not a file name", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("WARC file name %q is a path: give a plain file name", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("WARC file name %q contains a control character", name)
	}
	return nil
}

// FindFile opens the WARC (or ARC) file named file in the first of dirs that
// holds it, under its final name or, while a writer still has it open, with
// the ".open" suffix. file must be a plain base name (CheckFileName).
func FindFile(dirs []string, file string) (*os.File, error) {
	if err := CheckFileName(file); err != nil {
		return nil, fmt.Errorf("warcio: %w", err)
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
