// Command arcbench is benchmark tooling for scripts/bench-arc.sh, not part of
// the product:
//
//	arcbench warc2arc IN.warc.gz OUT.arc.gz   # an ARC holding IN's HTTP responses
//	arcbench rewrite IN.warc.gz OUT.warc.gz   # the WARC peer of arc2warc
//
// warc2arc writes an ARC v1 file (filedesc record, then one record per
// response record of IN: its URL, IP, date, media type and HTTP block; one
// gzip member per record). rewrite reads IN with the same reader and
// options arc2warc uses and writes every record again with the same encoder
// (warcio.RecordHead, one gzip member per record, block digests from the
// read): what arc2warc costs when its input is already WARC.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/warcio"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: arcbench warc2arc|rewrite IN OUT")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "warc2arc":
		err = warc2arc(os.Args[2], os.Args[3])
	case "rewrite":
		err = rewrite(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcbench:", err)
		os.Exit(1)
	}
}

// each calls fn for every record of a WARC file with its block bytes.
func each(in string, fn func(rec *warcio.Record, block []byte) error) error {
	var block bytes.Buffer
	r, err := warcio.Open(in, warcio.Options{BlockDigest: true, BlockSink: func() io.Writer { block.Reset(); return &block }})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec, block.Bytes()); err != nil {
			return err
		}
	}
}

func create(out string) (*os.File, *bufio.Writer, *gzip.Writer, error) {
	f, err := os.Create(out)
	if err != nil {
		return nil, nil, nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	zw, _ := gzip.NewWriterLevel(bw, 6)
	return f, bw, zw, nil
}

func finish(f *os.File, bw *bufio.Writer, err error) error {
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func warc2arc(in, out string) error {
	f, bw, zw, err := create(out)
	if err != nil {
		return err
	}
	member := func(b ...[]byte) error {
		zw.Reset(bw)
		for _, p := range b {
			if _, err := zw.Write(p); err != nil {
				return err
			}
		}
		return zw.Close()
	}
	desc := "1 0 arcbench\nURL IP-address Archive-date Content-type Archive-length\n"
	err = member([]byte(fmt.Sprintf("filedesc://%s 0.0.0.0 20240301080000 text/plain %d\n%s\n", out, len(desc), desc)))
	if err == nil {
		err = each(in, func(rec *warcio.Record, block []byte) error {
			if rec.Type != "response" || rec.HTTP == nil {
				return nil
			}
			ip := rec.Header("WARC-IP-Address")
			if ip == "" {
				ip = "0.0.0.0"
			}
			mime := rec.MIME
			if mime == "" || strings.ContainsAny(mime, " \n") {
				mime = "no-type"
			}
			line := fmt.Sprintf("%s %s %s %s %d\n", strings.ReplaceAll(rec.TargetURI, " ", "%20"), ip, rec.Date.Format("20060102150405"), mime, len(block))
			return member([]byte(line), block, []byte("\n"))
		})
	}
	return finish(f, bw, err)
}

func rewrite(in, out string) error {
	f, bw, zw, err := create(out)
	if err != nil {
		return err
	}
	var head bytes.Buffer
	err = each(in, func(rec *warcio.Record, block []byte) error {
		h := warcio.RecordHead{Version: "1.1", Type: rec.Type, ID: warcio.NewRecordID(), Date: warcio.FormatDate(rec.Date, "1.1"),
			BlockDigest: rec.BlockDigest, ContentLength: int64(len(block))}
		for _, fl := range rec.Headers {
			switch strings.ToLower(fl.Name) {
			case "warc-type", "warc-record-id", "warc-date", "warc-block-digest", "content-length":
			default:
				h.Fields = append(h.Fields, fl)
			}
		}
		head.Reset()
		h.Write(&head)
		zw.Reset(bw)
		zw.Write(head.Bytes())
		zw.Write(block)
		zw.Write([]byte(warcio.RecordEnd))
		return zw.Close()
	})
	return finish(f, bw, err)
}
