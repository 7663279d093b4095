package dedupindex

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/iox"
	"github.com/wayside-archive/wayside/warcio"
)

// lines imports a CDX or CDXJ file (optionally gzip-compressed).
func (im *importer) lines(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dedupindex: import: %w", err)
	}
	defer f.Close()
	cr := &iox.CountReader{R: f}
	br := bufio.NewReaderSize(cr, 64<<10)
	var r io.Reader = br
	if b, _ := br.Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return im.bad(&ImportError{File: path, Line: 1, Err: fmt.Errorf("gzip: %w", err)})
		}
		defer zr.Close()
		r = zr
	}
	lr := bufio.NewReaderSize(r, 64<<10)
	layout := ""
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := im.ctx.Err(); err != nil {
				return err
			}
		}
		line, rerr := lr.ReadString('\n')
		im.cur.Bytes = cr.N
		if rerr != nil && rerr != io.EOF {
			// A corrupt or truncated gzip stream: nothing after this point
			// can be read reliably.
			return im.bad(&ImportError{File: path, Line: n, Err: fmt.Errorf("read: %w", rerr)})
		}
		if rerr == io.EOF && line == "" {
			return nil
		}
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "!") || strings.HasPrefix(trimmed, "#"):
		case im.cur.Format == FormatCDX && (strings.HasPrefix(line, " CDX ") || strings.HasPrefix(line, "CDX ")):
			layout = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "CDX"))
		default:
			im.cur.Records++
			if err := im.line(path, n, line, layout); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

func (im *importer) line(path string, n int, s, layout string) error {
	var l cdxj.Line
	var err error
	if im.cur.Format == FormatCDXJ {
		l, err = cdxj.Parse(s)
	} else {
		l, err = cdxj.ParseCDX(s, layout)
	}
	if err != nil {
		return im.bad(&ImportError{File: path, Line: n, Err: err})
	}
	if l.IsRevisit() {
		im.cur.Revisits++
		return nil
	}
	if l.Status == 0 || !isHTTPURI(l.URL) {
		im.cur.Skipped++ // warcinfo, metadata, dns: and other non-HTTP lines
		return nil
	}
	if !im.dedup.pol.statusOK(l.Status) {
		im.cur.Skipped++ // as for WARC records: status outside the policy
		return nil
	}
	if l.Digest == "" || l.Digest == "-" {
		return im.bad(&ImportError{File: path, Line: n, Err: fmt.Errorf("%w: no payload digest", ErrBadRecord)})
	}
	d, err := digest.Parse(l.Digest)
	if err != nil {
		return im.bad(&ImportError{File: path, Line: n, Err: fmt.Errorf("%w: %w", ErrBadRecord, err)})
	}
	if d.Equal(digest.Of(d.Alg, nil)) {
		im.cur.Skipped++ // empty payload
		return nil
	}
	date, err := parseTimestamp(l.Timestamp)
	if err != nil {
		return im.bad(&ImportError{File: path, Line: n, Err: fmt.Errorf("%w: %w", ErrBadRecord, err)})
	}
	o := Original{
		Digest:    d.String(),
		TargetURI: l.URL,
		Date:      date,
		File:      l.Filename,
		Offset:    max(l.Offset, 0),
		Length:    max(l.Length, 0),
		Status:    l.Status,
		MIME:      l.MIME,
	}
	if err := im.original(o); err != nil {
		return im.bad(&ImportError{File: path, Line: n, Err: fmt.Errorf("%w: %w", ErrBadRecord, err)})
	}
	return im.flushFull()
}

// ProbeImport checks, without any index, that Import can take path as
// format (FormatAuto: detected as Import detects it): the format is known
// and the first record (WARC, ARC) or index line (CDX, CDXJ) reads. Import
// reads on past bad records; a caller probes every input first to refuse a
// file that holds nothing importable before it creates an index.
func ProbeImport(path string, format Format) (Format, error) {
	if format == FormatAuto || format == "" {
		f, err := detectFormat(path)
		if err != nil {
			return "", err
		}
		format = f
	}
	switch format {
	case FormatWARC:
		r, err := warcio.Open(path)
		if err != nil {
			return "", err
		}
		defer r.Close()
		if _, err := r.Next(); err == io.EOF {
			return "", fmt.Errorf("dedupindex: import %s: holds no WARC or ARC record", path)
		} else if err != nil {
			return "", err // names file and offset
		}
		return format, nil
	case FormatCDX, FormatCDXJ:
		return format, probeLines(path, format)
	}
	return "", fmt.Errorf("dedupindex: import %s: unknown format %q", path, format)
}

// probeLines parses the first index line of a CDX or CDXJ file.
func probeLines(path string, format Format) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dedupindex: import: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	if b, _ := br.Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &ImportError{File: path, Line: 1, Err: fmt.Errorf("gzip: %w", err)}
		}
		defer zr.Close()
		r = zr
	}
	lr := bufio.NewReaderSize(r, 64<<10)
	layout := ""
	for n := 1; ; n++ {
		line, rerr := lr.ReadString('\n')
		if rerr != nil && rerr != io.EOF {
			return &ImportError{File: path, Line: n, Err: fmt.Errorf("read: %w", rerr)}
		}
		if rerr == io.EOF && line == "" {
			return fmt.Errorf("dedupindex: import %s: holds no %s line", path, strings.ToUpper(string(format)))
		}
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "!") || strings.HasPrefix(trimmed, "#"):
		case format == FormatCDX && (strings.HasPrefix(line, " CDX ") || strings.HasPrefix(line, "CDX ")):
			layout = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "CDX"))
		default:
			var err error
			if format == FormatCDXJ {
				_, err = cdxj.Parse(line)
			} else {
				_, err = cdxj.ParseCDX(line, layout)
			}
			if err != nil {
				return &ImportError{File: path, Line: n, Err: err}
			}
			return nil
		}
		if rerr == io.EOF {
			return fmt.Errorf("dedupindex: import %s: holds no %s line", path, strings.ToUpper(string(format)))
		}
	}
}
