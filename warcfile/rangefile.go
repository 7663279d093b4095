package warcfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"
)

// RangeGetter fetches the bytes [off, end] (inclusive) of one remote
// file: one ranged request. The body must yield exactly end-off+1 bytes;
// fewer is a short object, and the file reports it.
type RangeGetter func(off, end int64) (io.ReadCloser, error)

// Range windows: a read at a new offset asks for minWindow bytes (or what
// the read wants); each following read that continues where the last
// stopped doubles the next request, up to maxWindow. A record is so read
// with a few requests, and a request cut short (the record ended) wastes at
// most one window.
const (
	minWindow = 64 << 10
	maxWindow = 32 << 20
)

// RangeFile is a remote file read by range requests: a ReadFile for a
// Backend. Reads that continue one another share one streaming response;
// a read elsewhere starts a new one. Its errors name the location and the
// offset. It is safe for concurrent use (reads are serialised).
type RangeFile struct {
	loc  string
	info fs.FileInfo
	get  RangeGetter

	mu     sync.Mutex
	body   io.ReadCloser
	pos    int64 // offset of the next byte body yields
	end    int64 // offset after the last byte body yields
	window int64
	seq    int64 // Read's position
}

// NewRangeFile returns the file at loc (for messages) of the given size
// and modification time, read through get.
func NewRangeFile(loc string, size int64, mod time.Time, get RangeGetter) *RangeFile {
	return &RangeFile{loc: loc, info: remoteInfo{name: Base(loc), size: size, mod: mod}, get: get}
}

// Stat implements ReadFile: the size and time found when it was opened.
func (f *RangeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// ReadAt implements io.ReaderAt.
func (f *RangeFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readAt(p, off)
}

func (f *RangeFile) readAt(p []byte, off int64) (int, error) {
	size := f.info.Size()
	if off < 0 {
		return 0, fmt.Errorf("warcfile: %s: negative offset %d", f.loc, off)
	}
	if off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	n := 0
	for int64(n) < want {
		cur := off + int64(n)
		if f.body == nil || f.pos != cur || f.pos >= f.end {
			if err := f.start(cur, want-int64(n)); err != nil {
				return n, err
			}
		}
		m, err := f.body.Read(p[n : n+int(min(want-int64(n), f.end-f.pos))])
		n += m
		f.pos += int64(m)
		if err != nil && (err != io.EOF || f.pos < f.end) {
			f.drop()
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, f.readErr(f.pos, err)
		}
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// start opens a response at off for at least need bytes.
func (f *RangeFile) start(off, need int64) error {
	if f.body != nil && f.pos == off && f.pos >= f.end {
		f.window = min(f.window*2, maxWindow) // a continued read: ask for more
	} else {
		f.window = minWindow
	}
	f.drop()
	n := min(max(f.window, need), f.info.Size()-off)
	rc, err := f.get(off, off+n-1)
	if err != nil {
		return f.readErr(off, err)
	}
	f.body, f.pos, f.end = rc, off, off+n
	return nil
}

func (f *RangeFile) drop() {
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
}

func (f *RangeFile) readErr(off int64, err error) error {
	var ce *ChangedError
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ChangedError{Loc: f.loc, Offset: off, Reason: fmt.Sprintf("it ends before the %d bytes it had when opened", f.info.Size()), Err: err}
	}
	return fmt.Errorf("warcfile: %s offset %d: %w", f.loc, off, err)
}

// Read implements io.Reader: the file in order from its start.
func (f *RangeFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt(p, f.seq)
	f.seq += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// Close ends the response in flight, if any.
func (f *RangeFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop()
	return nil
}

// ChangedError reports a remote file that is no longer the one opened
// (replaced: its ETag or time changed; truncated: it ends early), found
// at a read at Offset. Reading never mixes two versions of a file.
type ChangedError struct {
	Loc    string
	Offset int64
	Reason string
	Err    error
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("warcfile: %s offset %d: the file changed after it was opened: %s", e.Loc, e.Offset, e.Reason)
}

func (e *ChangedError) Unwrap() error { return e.Err }

type remoteInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i remoteInfo) Name() string       { return i.name }
func (i remoteInfo) Size() int64        { return i.size }
func (i remoteInfo) Mode() fs.FileMode  { return 0o444 }
func (i remoteInfo) ModTime() time.Time { return i.mod }
func (i remoteInfo) IsDir() bool        { return false }
func (i remoteInfo) Sys() any           { return nil }
