package mementomap

import (
	"io"
	"os"
)

// sink is the compaction output: an append-only byte stream that can be cut
// back to an earlier position when a sub-tree is replaced by its wildcard.
type sink interface {
	write(b []byte) error
	pos() (off, lines int64)
	truncate(off, lines int64) error
	flush() error
}

// memSink keeps the output in memory (partitions of tests, small maps).
type memSink struct {
	buf   []byte
	lines int64
}

func (s *memSink) write(b []byte) error {
	s.buf = append(s.buf, b...)
	s.lines++
	return nil
}
func (s *memSink) pos() (int64, int64) { return int64(len(s.buf)), s.lines }
func (s *memSink) truncate(off, lines int64) error {
	s.buf, s.lines = s.buf[:off], lines
	return nil
}
func (s *memSink) flush() error { return nil }

// fileSink writes through a buffer to a file; cutting back within the
// buffer costs nothing, cutting back further truncates the file. Memory is
// the buffer's size whatever the output's.
type fileSink struct {
	f       *os.File
	buf     []byte
	fileOff int64
	lines   int64
}

func newFileSink(f *os.File) *fileSink {
	return &fileSink{f: f, buf: make([]byte, 0, 1<<20)}
}

func (s *fileSink) write(b []byte) error {
	if len(s.buf)+len(b) > cap(s.buf) {
		if err := s.flush(); err != nil {
			return err
		}
		if len(b) > cap(s.buf) {
			n, err := s.f.Write(b)
			s.fileOff += int64(n)
			s.lines++
			return err
		}
	}
	s.buf = append(s.buf, b...)
	s.lines++
	return nil
}

func (s *fileSink) pos() (int64, int64) { return s.fileOff + int64(len(s.buf)), s.lines }

func (s *fileSink) truncate(off, lines int64) error {
	s.lines = lines
	if off >= s.fileOff {
		s.buf = s.buf[:off-s.fileOff]
		return nil
	}
	s.buf = s.buf[:0]
	if err := s.f.Truncate(off); err != nil {
		return err
	}
	if _, err := s.f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	s.fileOff = off
	return nil
}

func (s *fileSink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	n, err := s.f.Write(s.buf)
	s.fileOff += int64(n)
	s.buf = s.buf[:0]
	return err
}
