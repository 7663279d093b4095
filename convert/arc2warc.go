package convert

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// WARC versions ARCToWARC writes (warcio's).
const (
	Version10 = warcio.Version10
	Version11 = warcio.Version11
)

// Options tune ARCToWARC. The zero value writes WARC/1.1 at gzip level 6.
type Options struct {
	// Version is the WARC version written: Version11 (default) or
	// Version10.
	Version string
	// Software names the converting program in the warcinfo record
	// (default "Wayside").
	Software string
	// Hostname names the converting machine in the warcinfo record
	// (default os.Hostname).
	Hostname string
	// CompressionLevel is the gzip level, 1–9 (default 6).
	CompressionLevel int
	// Overwrite replaces an existing output file (atomically); by default
	// an existing output is an error.
	Overwrite bool
	// MaxMemoryBlock is the largest record block held in memory; larger
	// ones are buffered in a temporary file in the output directory
	// (default 32 MiB).
	MaxMemoryBlock int
	// Now is the clock for the warcinfo date (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	switch o.Version {
	case "":
		o.Version = Version11
	case Version10, Version11:
	default:
		return o, fmt.Errorf("convert: unsupported WARC version %q (want 1.0 or 1.1)", o.Version)
	}
	if o.Software == "" {
		o.Software = "Wayside"
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	if o.MaxMemoryBlock <= 0 {
		o.MaxMemoryBlock = 32 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// Result tells what ARCToWARC did.
type Result struct {
	ARC  string `json:"arc"`  // input path
	WARC string `json:"warc"` // output path
	// Records counts the ARC records converted (the filedesc record
	// included); Responses and Resources the WARC records they became
	// besides the filedesc's metadata record.
	Records   int `json:"records"`
	Responses int `json:"responses"`
	Resources int `json:"resources"`
	// Lenient counts records read despite a fault the reader forgave (a
	// wrong Archive-length, a short date; see warcio.Record.Anomalies).
	Lenient int `json:"lenient"`
	// Problems lists ARC records that could not be read, by file and
	// offset: they are not in the output.
	Problems []string `json:"problems,omitempty"`
	// RawBytes is the uncompressed size of the ARC data read; WARCBytes
	// the size of the WARC file written.
	RawBytes  int64 `json:"raw_bytes"`
	WARCBytes int64 `json:"warc_bytes"`
}

// OutputName returns the name of the WARC file an ARC file converts to:
// its base name with ".arc" or ".arc.gz" replaced by ".warc.gz".
func OutputName(arc string) string {
	base := filepath.Base(arc)
	for _, ext := range []string{".arc.gz", ".arc", ".ARC.GZ", ".ARC"} {
		if strings.HasSuffix(base, ext) {
			return strings.TrimSuffix(base, ext) + ".warc.gz"
		}
	}
	return base + ".warc.gz"
}

// ARCToWARC converts the ARC file at path into a WARC file in dir (named
// OutputName(path)), as the package documentation describes. Records that
// cannot be read are listed in Result.Problems and left out; the returned
// error is for failures that stop the conversion, which then leaves no
// output file.
func ARCToWARC(ctx context.Context, path, dir string, opts Options) (Result, error) {
	res := Result{ARC: path, WARC: filepath.Join(dir, OutputName(path))}
	opts, err := opts.withDefaults()
	if err != nil {
		return res, err
	}
	if !opts.Overwrite {
		if _, err := os.Lstat(res.WARC); err == nil {
			return res, fmt.Errorf("convert: %s already exists", res.WARC)
		}
	}
	sum, size, err := fileSHA1(path)
	if err != nil {
		return res, err
	}
	buf := &blockBuffer{max: opts.MaxMemoryBlock, dir: dir}
	defer buf.Close()
	var spans []warcio.Span
	r, err := warcio.Open(path, warcio.Options{BlockDigest: true, BlockSink: buf.sink, OnSpan: func(s warcio.Span) {
		if !s.Padding {
			spans = append(spans, s)
		}
	}})
	if err != nil {
		return res, err // warcio's error names the file
	}
	defer r.Close()
	c := &converter{spans: &spans,
		opts: opts, res: &res, r: r, buf: buf,
		arcName: filepath.Base(path), arcSHA1: sum, arcSize: size,
		warcName: filepath.Base(res.WARC),
	}
	err = warcfile.WriteFile(res.WARC, opts.CompressionLevel, func(fw *warcfile.FileWriter) error {
		c.out = fw
		err := c.run(ctx)
		res.WARCBytes = fw.Size()
		return err
	})
	res.RawBytes = r.DataOffset()
	if err != nil {
		return res, fmt.Errorf("convert: %s: %w", path, err)
	}
	return res, nil
}

type converter struct {
	opts     Options
	res      *Result
	r        *warcio.Reader
	buf      *blockBuffer
	out      *warcfile.FileWriter
	arcName  string
	arcSHA1  string
	arcSize  int64
	warcName string
	infoID   string
	filedesc string // the filedesc URL
	sources  bytes.Buffer
	spans    *[]warcio.Span // what the reader did not read as records
}

func (c *converter) run(ctx context.Context) error {
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := c.r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var we *warcio.Error
			if !errors.As(err, &we) {
				return err
			}
			c.res.Problems = append(c.res.Problems, err.Error())
			if errors.Is(err, warcio.ErrTruncated) {
				break
			}
			continue
		}
		if rec.ARC == nil {
			return fmt.Errorf("offset %d holds a WARC record: not an ARC file", rec.Offset)
		}
		if c.buf.n != rec.ContentLength {
			return fmt.Errorf("offset %d: read %d block bytes, the record has %d", rec.Offset, c.buf.n, rec.ContentLength)
		}
		if c.infoID == "" {
			if err := c.writeWarcinfo(rec); err != nil {
				return err
			}
		}
		if err := c.convert(rec); err != nil {
			return err
		}
	}
	if c.infoID == "" {
		return errors.New("no readable ARC record")
	}
	return c.writeSources()
}

// writeWarcinfo writes the warcinfo record describing the conversion, with
// the fields of the ARC's filedesc record when rec is one.
func (c *converter) writeWarcinfo(rec *warcio.Record) error {
	v := c.opts.Version
	fields := [][2]string{
		{"software", c.opts.Software + " arc2warc (github.com/wayside-archive/wayside)"},
		{"format", "WARC File Format " + v},
		{"conformsTo", warcio.ConformsTo(v)},
		{"hostname", c.opts.Hostname},
		{"description", "Converted from the ARC file " + c.arcName + " following the IIPC WARC Implementation Guidelines (ARC to WARC conversion)"},
		{"arc-file", c.arcName},
		{"arc-file-length", strconv.FormatInt(c.arcSize, 10)},
		{"arc-file-sha1", c.arcSHA1},
	}
	if rec.Type == "warcinfo" {
		block, err := c.buf.Bytes(1 << 20)
		if err == nil {
			_, line := arcVersionLine(block)
			fields = append(fields, [2]string{"arc-version", line})
			fields = append(fields, filedescFields(block)...)
		}
	}
	var b bytes.Buffer
	for _, f := range fields {
		if f[1] == "" {
			continue
		}
		b.WriteString(f[0])
		b.WriteString(": ")
		b.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(f[1]))
		b.WriteString("\r\n")
	}
	c.infoID = warcio.NewRecordID()
	h := warcio.RecordHead{
		Version: v, Type: "warcinfo", ID: c.infoID,
		Date: warcio.FormatDate(c.opts.Now(), v),
		Fields: []warcio.Field{
			{Name: "WARC-Filename", Value: c.warcName},
			{Name: "Content-Type", Value: "application/warc-fields"},
		},
	}
	return c.write(&h, b.Bytes(), nil)
}

// convert writes the WARC record of one ARC record.
func (c *converter) convert(rec *warcio.Record) error {
	if rec.Date.IsZero() {
		why := fmt.Sprintf("Archive-date %q is not a date: record not converted", rec.ARC.Date)
		c.res.Problems = append(c.res.Problems, fmt.Sprintf("convert: %s offset %d: %s", c.arcName, rec.Offset, why))
		*c.spans = append(*c.spans, warcio.Span{Offset: rec.Offset, Length: rec.Length, DataOffset: rec.DataOffset, DataLength: rec.DataLength, Reason: why})
		return nil
	}
	v := c.opts.Version
	h := warcio.RecordHead{Version: v, ID: warcio.NewRecordID(), Date: warcio.FormatDate(rec.Date, v), WarcinfoID: c.infoID}
	uri := TargetURI(rec)
	h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Target-URI", Value: uri})
	if ip := net.ParseIP(rec.ARC.IP); ip != nil && !ip.IsUnspecified() {
		h.Fields = append(h.Fields, warcio.Field{Name: "WARC-IP-Address", Value: ip.String()})
	}
	switch {
	case rec.Type == "warcinfo": // the filedesc (IIPC recommendation 14)
		h.Type = "metadata"
		c.filedesc = uri
		h.Fields = append(h.Fields,
			warcio.Field{Name: "WARC-Concurrent-To", Value: c.infoID},
			warcio.Field{Name: "Content-Type", Value: contentType(rec.ARC.ContentType)})
	case rec.HTTP != nil && rec.HTTP.IsResponse():
		h.Type = "response"
		c.res.Responses++
		h.Fields = append(h.Fields,
			warcio.Field{Name: "Content-Type", Value: "application/http;msgtype=response"},
			warcio.Field{Name: "WARC-Payload-Digest", Value: rec.PayloadDigest})
	default:
		h.Type = "resource"
		c.res.Resources++
		h.Fields = append(h.Fields,
			warcio.Field{Name: "Content-Type", Value: contentType(rec.ARC.ContentType)},
			warcio.Field{Name: "WARC-Payload-Digest", Value: rec.PayloadDigest})
	}
	if rec.BlockDigest == "" {
		return fmt.Errorf("offset %d: no block digest computed", rec.Offset)
	}
	h.BlockDigest = rec.BlockDigest
	if rec.Truncated != "" {
		h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Truncated", Value: rec.Truncated})
	}
	block, err := c.buf.Reader()
	if err != nil {
		return err
	}
	if err := c.write(&h, nil, block); err != nil {
		return err
	}
	c.res.Records++
	if len(rec.Anomalies) > 0 {
		c.res.Lenient++
	}
	fmt.Fprintf(&c.sources, "arc-record: %s %d %d %s\r\n", h.ID, rec.Offset, rec.Length, strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(rec.ARC.Line))
	return nil
}

// writeSources writes the metadata record linking every output record to
// the ARC record it came from.
func (c *converter) writeSources() error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "arc-file: %s\r\narc-file-length: %d\r\narc-file-sha1: %s\r\n", c.arcName, c.arcSize, c.arcSHA1)
	b.Write(c.sources.Bytes())
	for _, s := range *c.spans {
		fmt.Fprintf(&b, "%s %s\r\n", skippedField, formatSkipped(s))
	}
	v := c.opts.Version
	h := warcio.RecordHead{Version: v, Type: "metadata", ID: warcio.NewRecordID(), Date: warcio.FormatDate(c.opts.Now(), v), WarcinfoID: c.infoID}
	if c.filedesc != "" {
		h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Target-URI", Value: c.filedesc})
	}
	h.Fields = append(h.Fields,
		warcio.Field{Name: "WARC-Concurrent-To", Value: c.infoID},
		warcio.Field{Name: "Content-Type", Value: "application/warc-fields"})
	return c.write(&h, b.Bytes(), nil)
}

// write writes one record as one gzip member: the header, then block (or
// the bytes of blockR, whose digest and length the header already holds).
func (c *converter) write(h *warcio.RecordHead, block []byte, blockR io.Reader) error {
	if blockR == nil {
		h.BlockDigest = digest.Of(digest.SHA1, block).String()
		h.ContentLength = int64(len(block))
		blockR = bytes.NewReader(block)
	} else {
		h.ContentLength = c.buf.n
	}
	if _, err := c.out.WriteRecord(h, blockR); err != nil {
		return err
	}
	// After each record written: crash tests kill the process here, mid-file.
	return failpoint.Inject("convert.record-written")
}

// TargetURI is the WARC-Target-URI of the record converted from rec: the
// ARC URL (the filedesc URL for the filedesc record) with spaces, which a
// URI cannot hold, percent-encoded.
func TargetURI(rec *warcio.Record) string {
	u := rec.TargetURI
	if rec.ARC != nil && rec.Type == "warcinfo" {
		u = rec.ARC.URL
	}
	return strings.ReplaceAll(u, " ", "%20")
}

// contentType is the WARC Content-Type for an ARC Content-type field.
func contentType(ct string) string {
	ct = strings.TrimSpace(ct)
	if ct == "" || ct == "-" {
		return "application/octet-stream"
	}
	return ct
}

// arcVersionLine returns the first line of a filedesc block ("1 1
// InternetArchive").
func arcVersionLine(block []byte) (int, string) {
	line := block
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	s := strings.TrimSpace(string(line))
	v, _ := strconv.Atoi(strings.SplitN(s, " ", 2)[0])
	return v, s
}

// filedescFields returns the simple elements of a filedesc block's XML
// metadata (ARC 1.1, as Heritrix writes it) as "arc-NAME" warcinfo fields.
func filedescFields(block []byte) [][2]string {
	i := bytes.IndexByte(block, '<')
	if i < 0 {
		return nil
	}
	dec := xml.NewDecoder(bytes.NewReader(block[i:]))
	dec.Strict = false
	var out [][2]string
	depth := 0
	var name string
	var text strings.Builder
	for len(out) < 64 {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name = t.Name.Local
			text.Reset()
		case xml.CharData:
			if depth == 2 && text.Len() < 4096 {
				text.Write(t)
			}
		case xml.EndElement:
			if depth == 2 && name == t.Name.Local {
				if v := strings.TrimSpace(text.String()); v != "" {
					out = append(out, [2]string{"arc-" + name, v})
				}
			}
			depth--
		}
	}
	return out
}

// fileSHA1 returns the labelled SHA-1 and size of a file.
func fileSHA1(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("convert: %w", err)
	}
	defer f.Close()
	h := sha1.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("convert: %w", err) // "read PATH: ..."
	}
	return digest.FromHash(digest.SHA1, h).String(), n, nil
}

// skippedField names the source list's lines for input bytes not
// converted: "arc-skipped: OFFSET LENGTH DATA-OFFSET DATA-LENGTH REASON"
// (stored and uncompressed extents, as warcio.Span gives them).
const skippedField = "arc-skipped:"

func formatSkipped(s warcio.Span) string {
	return fmt.Sprintf("%d %d %d %d %s", s.Offset, s.Length, s.DataOffset, s.DataLength, strings.NewReplacer("\r", " ", "\n", " ").Replace(s.Reason))
}

// parseSkipped reads the value of an arc-skipped line.
func parseSkipped(v string) (warcio.Span, bool) {
	f := strings.SplitN(strings.TrimSpace(v), " ", 5)
	if len(f) < 4 {
		return warcio.Span{}, false
	}
	var n [4]int64
	for i := range n {
		x, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return warcio.Span{}, false
		}
		n[i] = x
	}
	s := warcio.Span{Offset: n[0], Length: n[1], DataOffset: n[2], DataLength: n[3]}
	if len(f) == 5 {
		s.Reason = f[4]
	}
	return s, true
}
