// Command dedupbench is benchmark tooling for scripts/bench-dedup.sh, not
// part of the product:
//
//	dedupbench floor [-inflater libdeflate|klauspost] IN.warc.gz   # gunzip + SHA-1 of every byte
//
// floor is the least work any deduplication of IN must do: inflate every
// gzip member and hash every uncompressed byte with SHA-1. By default
// (-inflater libdeflate) it inflates with the fastest inflater Wayside
// has: libdeflate (internal/libdeflate, one call per member, straight
// from the mapped file) when built with cgo, else klauspost/compress
// reading the file mapped; a member libdeflate cannot take (larger than
// maxOut inflated) is inflated by klauspost. -inflater klauspost inflates
// every member with klauspost/compress, the pure-Go floor issue 27 set
// its targets against. It prints the uncompressed size, the SHA-1 and
// the inflater used ("inflater=libdeflate-bmi2", "inflater=klauspost",
// ...); scripts read the first field.
package main

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/internal/libdeflate"
	"github.com/wayside-archive/wayside/internal/mapfile"
)

func main() {
	const usage = "usage: dedupbench floor [-inflater libdeflate|klauspost] IN.warc.gz"
	if len(os.Args) < 2 || os.Args[1] != "floor" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	inflater := fs.String("inflater", "libdeflate", "libdeflate (klauspost where cgo is off) or klauspost")
	if err := fs.Parse(os.Args[2:]); err != nil || fs.NArg() != 1 || (*inflater != "libdeflate" && *inflater != "klauspost") {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := floor(fs.Arg(0), *inflater == "klauspost"); err != nil {
		fmt.Fprintln(os.Stderr, "dedupbench:", err)
		os.Exit(1)
	}
}

// maxOut bounds libdeflate's output buffer.
const maxOut = 256 << 20

// floor inflates and hashes the file at path, with klauspost only when
// goOnly is set.
func floor(path string, goOnly bool) (err error) {
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
	h := sha1.New()
	var n int64
	inflater := "klauspost"
	if libdeflate.Available() && !goOnly {
		inflater = "libdeflate-" + libdeflate.Impl()
		var slow int
		n, slow, err = floorLibdeflate(m, h)
		if slow > 0 {
			inflater += fmt.Sprintf("+klauspost(%d members)", slow)
		}
	} else {
		n, err = inflateKlauspost(m, h)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%d %x inflater=%s\n", n, h.Sum(nil), inflater)
	return nil
}

// floorLibdeflate inflates each member of the mapped file in one call
// into a buffer (grown up to maxOut), hashing what it inflates; members
// it cannot take go to klauspost. libdeflate reads the mapping itself (a
// benchmark tool: no copy, and no guard against the file shrinking). It returns the bytes inflated and how
// many members klauspost inflated.
func floorLibdeflate(m *mapfile.File, h hash.Hash) (int64, int, error) {
	d := libdeflate.New()
	data := m.Bytes()
	out := make([]byte, 4<<20)
	var total int64
	slow := 0
	for off := 0; off < len(data); {
		inLen, outLen, err := d.Gzip(data[off:], out)
		for errors.Is(err, libdeflate.ErrInsufficientSpace) && len(out) < maxOut {
			out = make([]byte, 2*len(out))
			inLen, outLen, err = d.Gzip(data[off:], out)
		}
		if err != nil {
			// One member by klauspost, which reports a real error.
			slow++
			br := bytes.NewReader(data[off:])
			k, err := inflateKlauspostOne(br, h)
			if err != nil {
				return 0, 0, fmt.Errorf("member at %d: %w", off, err)
			}
			total += k
			off += len(data[off:]) - br.Len()
			continue
		}
		h.Write(out[:outLen])
		total += int64(outLen)
		off += inLen
		m.Release(int64(off)) // resident size bounded, as wayside's reader keeps it
	}
	return total, slow, nil
}

// inflateKlauspostOne inflates the one member br starts with.
func inflateKlauspostOne(br *bytes.Reader, h hash.Hash) (int64, error) {
	zr, err := gzip.NewReader(br)
	if err != nil {
		return 0, err
	}
	zr.Multistream(false)
	return io.Copy(h, zr)
}

// inflateKlauspost inflates every member of the mapped file with
// klauspost, hashing what it inflates.
func inflateKlauspost(m *mapfile.File, h hash.Hash) (int64, error) {
	br := bytes.NewReader(m.Bytes())
	zr, err := gzip.NewReader(br)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := zr.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		m.Release(br.Size() - int64(br.Len())) // resident size bounded, as wayside's reader keeps it
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
