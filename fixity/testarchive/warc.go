package testarchive

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// writeWARC writes the records as a gzipped WARC/1.1 file (one gzip member
// per record), the way crawlers do, with Wayside's one record encoder
// (warcio.Draft through warcfile.FileWriter).
func writeWARC(w io.Writer, recs []siteRecord) error {
	fw, err := warcfile.NewFileWriter(w, 0)
	if err != nil {
		return err
	}
	info := &warcio.Draft{Type: "warcinfo", ID: "<urn:uuid:00000000-0000-4000-8000-000000000000>", DateText: "2020-01-01T00:00:00Z",
		Fields: []warcio.Field{{Name: "Content-Type", Value: "application/warc-fields"}},
		Block:  []byte("software: wayside testarchive\r\nformat: WARC File Format 1.1\r\n")}
	if _, err := fw.WriteDraft(info, warcio.Version11, ""); err != nil {
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
		d := &warcio.Draft{Type: "response", ID: fmt.Sprintf("<urn:uuid:00000000-0000-4000-8000-%012d>", i+1),
			DateText: ts.UTC().Format(time.RFC3339),
			Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: r.urir},
				{Name: "Content-Type", Value: "application/http; msgtype=response"}},
			Block: blk.Bytes()}
		if _, err := fw.WriteDraft(d, warcio.Version11, ""); err != nil {
			return err
		}
	}
	return nil
}
