// Command dedupbench is benchmark tooling for scripts/bench-dedup.sh, not
// part of the product:
//
//	dedupbench floor IN.warc.gz   # gunzip + SHA-1 of every byte, in Go
//
// floor is the least work any deduplication of IN must do: inflate every
// gzip member (klauspost/compress, the inflater Wayside uses, reading the
// file mapped, its fastest input) and hash every uncompressed byte with
// SHA-1. It prints the uncompressed size and the SHA-1.
package main

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/internal/mapfile"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "floor" {
		fmt.Fprintln(os.Stderr, "usage: dedupbench floor IN.warc.gz")
		os.Exit(2)
	}
	if err := floor(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "dedupbench:", err)
		os.Exit(1)
	}
}

func floor(path string) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := mapfile.Map(f)
	if err != nil {
		return err
	}
	defer m.Close()
	defer mapfile.Recover(&err, mapfile.Guard(), m)
	br := bytes.NewReader(m.Bytes())
	zr, err := gzip.NewReader(br)
	if err != nil {
		return err
	}
	h := sha1.New()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := zr.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		m.Release(br.Size() - int64(br.Len())) // resident size bounded, as wayside's reader keeps it
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	fmt.Printf("%d %x\n", n, h.Sum(nil))
	return nil
}
