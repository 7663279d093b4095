package migrate

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcio"
)

// WriteOptions configure the output WARC files.
type WriteOptions struct {
	// Now stamps the records (default time.Now).
	Now func() time.Time
	// Pathways give each outcome's parameters for the provenance.
	Pathways *Pathways
}

func (o *WriteOptions) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// gzip level of the files migrate writes.
const outLevel = 6

// recordID derives a record ID from parts, so that a run repeated on the
// same input names its records the same.
func recordID(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	h[6] = h[6]&0x0f | 0x50 // UUID version 5 layout
	h[8] = h[8]&0x3f | 0x80
	s := hex.EncodeToString(h[:16])
	return "<urn:uuid:" + s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32] + ">"
}

// WriteConversion writes, atomically at path, the formally correct
// workflow's WARC file for the migrated outcomes of input: a warcinfo
// record, then per migration a conversion record (the same
// WARC-Target-URI, WARC-Refers-To the original, the result as its block)
// followed by a metadata record with the provenance. It sets each
// outcome's NewRecordID and returns the number of conversions written.
func WriteConversion(path, input string, outcomes []Outcome, o WriteOptions) (int, error) {
	n := 0
	err := fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		mw, err := warcio.NewMemberWriter(outLevel)
		if err != nil {
			return err
		}
		now := o.now()
		date := warcio.FormatDate(now, "1.1")
		infoID := recordID("warcinfo", path, input)
		var info fields
		info.add("software", "Wayside (github.com/wayside-archive/wayside) migrate")
		info.add("format", "WARC File Format 1.1")
		info.add("conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")
		info.add("description", "format migrations (conversion records) of "+input)
		if err := put(mw, w, &warcio.RecordHead{Version: "1.1", Type: "warcinfo", ID: infoID, Date: date,
			Fields: []warcio.Field{{Name: "WARC-Filename", Value: baseName(path)}, {Name: "Content-Type", Value: "application/warc-fields"}}}, info.Bytes()); err != nil {
			return err
		}
		for i := range outcomes {
			oc := &outcomes[i]
			if oc.Status != StatusMigrated || oc.Result == nil {
				continue
			}
			p, _ := o.Pathways.For(oc.PUID)
			mime := p.MIME
			if oc.ResultMIME != "" {
				mime = oc.ResultMIME
			}
			pd := digest.Of(digest.SHA1, oc.Result).String()
			id := recordID("conversion", oc.RecordID, oc.File, strconv.FormatInt(oc.Offset, 10), p.Name, pd)
			h := warcio.RecordHead{Version: "1.1", Type: "conversion", ID: id, Date: date, WarcinfoID: infoID,
				Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: oc.URI}}}
			if oc.RecordID != "" {
				h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Refers-To", Value: oc.RecordID})
			}
			h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Payload-Digest", Value: pd},
				warcio.Field{Name: "Content-Type", Value: mime})
			if err := failpoint.Inject("migrate.write-record"); err != nil {
				return err
			}
			if err := put(mw, w, &h, oc.Result); err != nil {
				return err
			}
			if err := putProvenance(mw, w, group(outcomes, oc, id), o.Pathways, id, oc.URI, date, infoID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("migrate: write %s: %w", path, err)
	}
	return n, nil
}

// group returns the migrated outcomes of lead's record (lead alone for a
// payload; every migrated member for a rebuilt zip), setting their
// NewRecordID to id.
func group(outcomes []Outcome, lead *Outcome, id string) []*Outcome {
	var g []*Outcome
	for i := range outcomes {
		oc := &outcomes[i]
		if oc.Status == StatusMigrated && oc.File == lead.File && oc.Offset == lead.Offset {
			oc.NewRecordID = id
			g = append(g, oc)
		}
	}
	return g
}

// putProvenance writes the metadata record describing the migrations g
// (of one record), written as record id. A zip's members are each named
// ("member:") before their source PUID, pathway and checks.
func putProvenance(mw *warcio.MemberWriter, w io.Writer, g []*Outcome, pws *Pathways, id, uri, date, infoID string) error {
	var b fields
	first := g[0]
	b.add("migrated-from", first.RecordID)
	b.add("source-file", first.File)
	b.add("source-offset", strconv.FormatInt(first.Offset, 10))
	b.add("source-date", warcio.FormatDate(first.Date, "1.1"))
	for _, oc := range g {
		p, _ := pws.For(oc.PUID)
		if len(oc.Path) > 0 {
			b.add("member", strings.Join(oc.Path, " → "))
		}
		b.add("source-puid", oc.PUID)
		b.add("target-puid", oc.Validation.ResultPUID)
		b.add("pathway", p.Name)
		b.add("tool", oc.Tool)
		b.add("parameters", strings.Join(p.Args, " "))
		for _, c := range oc.Validation.Checks {
			ok := "ok"
			if !c.OK {
				ok = "FAILED"
			}
			b.add("validation", c.Property+": "+c.Source+" → "+c.Result+" "+ok)
		}
	}
	h := warcio.RecordHead{Version: "1.1", Type: "metadata", ID: recordID("provenance", id), Date: date, WarcinfoID: infoID,
		Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: uri}, {Name: "WARC-Refers-To", Value: id},
			{Name: "Content-Type", Value: "application/warc-fields"}}}
	return put(mw, w, &h, b.Bytes())
}

// WriteReplace writes, atomically at path, the pragmatic workflow's copy
// of the WARC file at inPath: every record copied byte for byte (gzip
// members as they are stored; records of an uncompressed file each
// compressed as one member), except the records of migrated outcomes,
// which are written anew with the migrated payload (the same URI and
// date, Content-Type and digests of the result) and followed by a
// metadata record with the provenance. It returns the records replaced.
func WriteReplace(path, inPath string, outcomes []Outcome, o WriteOptions) (int, error) {
	by := map[int64]*Outcome{}
	for i := range outcomes {
		if outcomes[i].Status == StatusMigrated && outcomes[i].Result != nil {
			by[outcomes[i].Offset] = &outcomes[i]
		}
	}
	raw, err := os.Open(inPath)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer raw.Close()
	rd, err := warcio.Open(inPath, warcio.Options{SkipPayloadDigest: true})
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer rd.Close()
	gz, err := isGzip(raw)
	if err != nil {
		return 0, fmt.Errorf("migrate: %s: %w", inPath, err)
	}
	n := 0
	err = fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		mw, err := warcio.NewMemberWriter(outLevel)
		if err != nil {
			return err
		}
		var buf []byte
		for {
			rec, err := rd.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if rec.Length <= 0 {
				return fmt.Errorf("%s offset %d: record shares a gzip member with another: the replace workflow needs one member per record (use --workflow conversion)", inPath, rec.Offset)
			}
			oc := by[rec.Offset]
			if oc == nil {
				buf = grow(buf, rec.Length)
				if _, err := raw.ReadAt(buf, rec.Offset); err != nil {
					return fmt.Errorf("%s offset %d: %w", inPath, rec.Offset, err)
				}
				if gz {
					_, err = w.Write(buf)
				} else {
					_, err = mw.WriteMember(w, buf)
				}
				if err != nil {
					return err
				}
				continue
			}
			if err := failpoint.Inject("migrate.write-record"); err != nil {
				return err
			}
			if err := replaceRecord(mw, w, raw, inPath, outcomes, oc, o); err != nil {
				return err
			}
			n++
		}
	})
	if err != nil {
		return 0, fmt.Errorf("migrate: write %s: %w", path, err)
	}
	if n != len(by) {
		return n, fmt.Errorf("migrate: write %s: %d of %d migrated records found in %s", path, n, len(by), inPath)
	}
	return n, nil
}

// replaceRecord writes the migrated record of oc (and its provenance).
func replaceRecord(mw *warcio.MemberWriter, w io.Writer, f *os.File, name string, outcomes []Outcome, oc *Outcome, o WriteOptions) error {
	rec, err := warcio.ReadAt(f, name, oc.Offset, 0, warcio.Options{SkipPayloadDigest: true, KeepHTTPHead: true})
	if err != nil {
		return err
	}
	p, _ := o.Pathways.For(oc.PUID)
	pd := digest.Of(digest.SHA1, oc.Result).String()
	var block []byte
	mime := p.MIME
	if oc.ResultMIME != "" {
		mime = oc.ResultMIME
	}
	contentType := mime
	if rec.HTTP != nil && len(rec.HTTP.Head) > 0 {
		block = append(httpHead(rec.HTTP.Head, mime, len(oc.Result)), oc.Result...)
		contentType = "application/http; msgtype=response"
	} else {
		block = oc.Result
	}
	id := recordID("replace", oc.RecordID, oc.File, strconv.FormatInt(oc.Offset, 10), p.Name, pd)
	date := rec.Headers.Get("WARC-Date")
	if date == "" {
		date = warcio.FormatDate(rec.Date, "1.1")
	}
	h := warcio.RecordHead{Version: "1.1", Type: rec.Type, ID: id, Date: date, WarcinfoID: rec.Headers.Get("WARC-Warcinfo-ID"),
		Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: oc.URI}}}
	if ip := rec.Headers.Get("WARC-IP-Address"); ip != "" {
		h.Fields = append(h.Fields, warcio.Field{Name: "WARC-IP-Address", Value: ip})
	}
	h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Payload-Digest", Value: pd}, warcio.Field{Name: "Content-Type", Value: contentType})
	if err := put(mw, w, &h, block); err != nil {
		return err
	}
	return putProvenance(mw, w, group(outcomes, oc, id), o.Pathways, id, oc.URI, date, h.WarcinfoID)
}

// httpHead rewrites an HTTP response head for a migrated body: the status
// line and headers kept, Content-Type set to mime, Content-Length to n,
// Content-Encoding and Transfer-Encoding dropped (the body is sent whole
// and unencoded).
func httpHead(head []byte, mime string, n int) []byte {
	lines := strings.Split(strings.TrimRight(string(head), "\r\n"), "\n")
	var b bytes.Buffer
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if i > 0 {
			name, _, _ := strings.Cut(l, ":")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "content-type", "content-length", "content-encoding", "transfer-encoding", "content-md5", "etag", "digest":
				continue
			}
		}
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	b.WriteString("Content-Type: " + mime + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(n) + "\r\n\r\n")
	return b.Bytes()
}

func put(mw *warcio.MemberWriter, w io.Writer, h *warcio.RecordHead, block []byte) error {
	h.BlockDigest = digest.Of(digest.SHA1, block).String()
	h.ContentLength = int64(len(block))
	_, err := mw.WriteRecord(w, h, bytes.NewReader(block))
	return err
}

func grow(b []byte, n int64) []byte {
	if int64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func isGzip(f *os.File) (bool, error) {
	var m [2]byte
	if _, err := f.ReadAt(m[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return m[0] == 0x1f && m[1] == 0x8b, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// fields builds an application/warc-fields block.
type fields struct{ bytes.Buffer }

func (b *fields) add(name, value string) {
	if value == "" {
		return
	}
	value = strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(value)
	b.WriteString(name + ": " + value + "\r\n")
}
