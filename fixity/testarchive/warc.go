package testarchive

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/wayside-archive/wayside/warcio"
)

// writeWARC writes the records as a gzipped WARC/1.1 file (one gzip member
// per record), the way crawlers do.
func writeWARC(w io.Writer, recs []siteRecord) error {
	mw, err := warcio.NewMemberWriter(0)
	if err != nil {
		return err
	}
	member := func(hdr string, block []byte) error {
		_, err := mw.WriteMember(w, slices.Concat([]byte(hdr), block, []byte(warcio.RecordEnd)))
		return err
	}
	info := []byte("software: wayside testarchive\r\nformat: WARC File Format 1.1\r\n")
	if err := member(fmt.Sprintf("WARC/1.1\r\nWARC-Type: warcinfo\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\nWARC-Date: 2020-01-01T00:00:00Z\r\nContent-Type: application/warc-fields\r\nContent-Length: %d\r\n\r\n", len(info)), info); err != nil {
		return err
	}
	for i, r := range recs {
		ts, err := time.Parse(tsLayout, r.ts)
		if err != nil {
			return err
		}
		var blk bytes.Buffer
		fmt.Fprintf(&blk, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nServer: ExampleServer/1.0\r\nLast-Modified: %s\r\n\r\n",
			r.status, http.StatusText(r.status), r.ctype, len(r.body), ts.Add(-24*time.Hour).Format(http.TimeFormat))
		blk.Write(r.body)
		hdr := "WARC/1.1\r\nWARC-Type: response\r\n" +
			fmt.Sprintf("WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-%012d>\r\n", i+1) +
			"WARC-Date: " + ts.UTC().Format(time.RFC3339) + "\r\n" +
			"WARC-Target-URI: " + r.urir + "\r\n" +
			"Content-Type: application/http; msgtype=response\r\n" +
			"Content-Length: " + strconv.Itoa(blk.Len()) + "\r\n\r\n"
		if err := member(hdr, blk.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
