package wacz

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/cdxj"
)

// ZipNumMeta is the first line of index.idx.
const ZipNumMeta = `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`

// writeZipNum writes the sorted CDXJ in f as a ZipNum index: index.cdx.gz
// holds one gzip member per block of ZipNumLines lines, index.idx one line
// per block: the block's first urlkey and timestamp and a JSON block with
// its offset, length, sha256 (of the compressed bytes, as wabac.js checks
// it) and file name.
func (c *creator) writeZipNum(f *os.File) error {
	idx, err := os.CreateTemp(c.work, "idx-")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer idx.Close()
	iw := bufio.NewWriter(idx)
	fmt.Fprintln(iw, ZipNumMeta)
	err = c.stage(IndexZipNumPath, func(w io.Writer) error {
		br := bufio.NewReaderSize(f, 1<<16)
		var block, gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
		var off int64
		var first []byte
		n := 0
		flush := func() error {
			if n == 0 {
				return nil
			}
			gz.Reset()
			zw.Reset(&gz)
			if _, err := zw.Write(block.Bytes()); err != nil {
				return err
			}
			if err := zw.Close(); err != nil {
				return err
			}
			sum := sha256.Sum256(gz.Bytes())
			key, ts := keyTS(first)
			fmt.Fprintf(iw, "%s %s {\"offset\": %d, \"length\": %d, \"digest\": \"sha256:%s\", \"filename\": \"index.cdx.gz\"}\n",
				key, ts, off, gz.Len(), hex.EncodeToString(sum[:]))
			if _, err := w.Write(gz.Bytes()); err != nil {
				return err
			}
			off += int64(gz.Len())
			block.Reset()
			n = 0
			return nil
		}
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if n == 0 {
					first = append(first[:0], line...)
				}
				block.Write(line)
				n++
				if n == c.opts.ZipNumLines {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if err == io.EOF {
				return flush()
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	if err := iw.Flush(); err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	if _, err := idx.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	return c.stage(IndexIDXPath, func(w io.Writer) error { _, err := io.Copy(w, idx); return err })
}

// keyTS returns the urlkey and timestamp of a CDXJ line.
func keyTS(line []byte) (string, string) {
	l, err := cdxj.Parse(string(bytes.TrimRight(line, "\r\n")))
	if err != nil {
		f := bytes.Fields(line)
		if len(f) >= 2 {
			return string(f[0]), string(f[1])
		}
		return string(bytes.TrimSpace(line)), "0"
	}
	return l.Key, l.Timestamp
}

// IDXBlock is one line of a ZipNum index.idx.
type IDXBlock struct {
	Prefix   string // urlkey and timestamp of the block's first line
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	Digest   string `json:"digest"`
	Filename string `json:"filename"`
}
