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
	"github.com/wayside-archive/wayside/internal/iox"
	"github.com/wayside-archive/wayside/warcio"
)

// WriteOptions configure the output WARC files.
type WriteOptions struct {
	// Now stamps the records (default time.Now).
	Now func() time.Time
	// Pathways give each outcome's parameters for the provenance.
	Pathways *Pathways
	// Renames (replace workflow) are the new URIs of the objects migrated
	// in the whole run, from every input file: links to them are
	// rewritten in every copy.
	Renames Renames
	// Decode removes a Content-Encoding (characterize.Identifier.Decode);
	// without it, encoded HTML and CSS are copied as they are.
	Decode func(b []byte, encoding string) ([]byte, error)
	// Revisits (replace workflow) maps the offsets of revisit records of
	// the file whose originals were written anew (migrated, links
	// rewritten) to the new records.
	Revisits map[int64]MigratedRef
}

// MigratedRef is a record the replace workflow wrote anew (migrated, or
// links rewritten): what a revisit of the record it replaces must refer
// to instead.
type MigratedRef struct {
	URI           string `json:"uri"`
	RecordID      string `json:"record_id"`
	PayloadDigest string `json:"payload_digest"`
	MIME          string `json:"mime"`
	Size          int64  `json:"size"`
}

// replaceID is the record ID of the replace workflow's record for oc
// migrated by p with a result of payload digest pd.
func replaceID(oc *Outcome, p *Pathway, pd string) string {
	return recordID("replace", oc.RecordID, oc.File, strconv.FormatInt(oc.Offset, 10), p.Name, pd)
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
func putProvenance(mw *warcio.MemberWriter, w io.Writer, g []*Outcome, pws *Pathways, id, uri, date, infoID string, extra ...string) error {
	var b fields
	first := g[0]
	b.add("migrated-from", first.RecordID)
	b.add("source-file", first.File)
	b.add("source-offset", strconv.FormatInt(first.Offset, 10))
	b.add("source-date", warcio.FormatDate(first.Date, "1.1"))
	for i := 0; i+1 < len(extra); i += 2 {
		b.add(extra[i], extra[i+1])
	}
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

// ReplaceStats count what WriteReplace changed.
type ReplaceStats struct {
	// Replaced is the number of migrated records written; Rewritten the
	// HTML and CSS records whose links to renamed objects were updated.
	Replaced, Rewritten int
	// Revisits counts the revisits of migrated originals written anew.
	Revisits int
	// Links counts the references rewritten.
	Links int
	// Refs are the records written anew (migrated, links rewritten) by
	// the offset of the record they replace: what revisits of those
	// records must now refer to.
	Refs map[int64]MigratedRef
	// Unchecked names the HTML and CSS records whose links could not be
	// looked at (too large, truncated, an encoding that does not decode):
	// copied as they are.
	Unchecked []string
}

// Changed tells whether the copy differs from its input.
func (s ReplaceStats) Changed() bool { return s.Replaced+s.Rewritten+s.Revisits > 0 }

// maxDocument is the largest HTML or CSS payload whose links are rewritten
// (larger ones are copied as they are).
const maxDocument = 64 << 20

// WriteReplace writes, atomically at path, the pragmatic workflow's copy
// of the WARC or ARC file at inPath. Every record is copied byte for byte
// (gzip members as they are stored; records of an uncompressed file each
// compressed as one member), except:
//
//   - the records of migrated outcomes, written anew with the migrated
//     payload (Content-Type and digests of the result, the same date) at
//     the URI o.Renames gives them (the target format's extension); an
//     HTTP record's old URI then answers with a 301 redirect to the new
//     one (a response record of the same date), so links the rewriting
//     below cannot see (scripts, other collections, bookmarks) still
//     lead to the migrated object. A zip whose members were migrated
//     keeps its URI.
//   - HTML and CSS records that refer to a renamed URI (src, href,
//     srcset, poster, data, background, style and <style> url(), CSS url()
//     and @import; relative references resolved against the record's URI
//     or <base href>): the same record with those references updated and
//     every other byte of the document kept (Content-Encoding removed, as
//     the body is stored decoded).
//   - revisits named in o.Revisits (of records written anew, in this
//     file or another): at the new URI, referring to the new record and
//     its payload digest, with a 301 at the old URI when renamed.
//
// In a WARC file each migrated or rewritten record is followed by a
// metadata record with its provenance. An ARC file is copied into an ARC file (the
// same version): its new records are ARC records (v2 lines declaring their
// own offset; copied records keep their lines as they are), and it has no
// place for provenance, which the caller's report carries.
func WriteReplace(path, inPath string, outcomes []Outcome, o WriteOptions) (ReplaceStats, error) {
	st := ReplaceStats{Refs: map[int64]MigratedRef{}}
	by := map[int64]*Outcome{}
	for i := range outcomes {
		if outcomes[i].Status == StatusMigrated && outcomes[i].Result != nil {
			by[outcomes[i].Offset] = &outcomes[i]
		}
	}
	raw, err := os.Open(inPath)
	if err != nil {
		return st, fmt.Errorf("migrate: %w", err)
	}
	defer raw.Close()
	rd, err := warcio.Open(inPath, warcio.Options{SkipPayloadDigest: true})
	if err != nil {
		return st, fmt.Errorf("migrate: %w", err)
	}
	defer rd.Close()
	gz, err := isGzip(raw)
	if err != nil {
		return st, fmt.Errorf("migrate: %s: %w", inPath, err)
	}
	err = fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		mw, err := warcio.NewMemberWriter(outLevel)
		if err != nil {
			return err
		}
		cw := &iox.CountWriter{W: w}
		w = cw
		rw := &replacer{mw: mw, w: w, out: cw, f: raw, name: inPath, outName: baseName(path), outcomes: outcomes, o: o, st: &st}
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
			if oc := by[rec.Offset]; oc != nil {
				if err := failpoint.Inject("migrate.write-record"); err != nil {
					return err
				}
				if err := rw.migrated(rec, oc); err != nil {
					return err
				}
				st.Replaced++
				continue
			}
			if ref, ok := o.Revisits[rec.Offset]; ok && rec.Type == "revisit" {
				if err := rw.revisit(rec, ref); err != nil {
					return err
				}
				st.Revisits++
				continue
			}
			if done, err := rw.links(rec); err != nil || done {
				if done {
					st.Rewritten++
				}
				if err != nil {
					return err
				}
				continue
			}
			buf = grow(buf, rec.Length)
			if _, err := raw.ReadAt(buf, rec.Offset); err != nil {
				return fmt.Errorf("%s offset %d: %w", inPath, rec.Offset, err)
			}
			switch {
			case gz:
				_, err = w.Write(buf)
			case rec.ARC != nil:
				// An uncompressed ARC record's length leaves out the line
				// feed that ends it.
				_, err = mw.WriteMember(w, append(buf, '\n'))
			default:
				_, err = mw.WriteMember(w, buf)
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return ReplaceStats{}, fmt.Errorf("migrate: write %s: %w", path, err)
	}
	if st.Replaced != len(by) {
		return st, fmt.Errorf("migrate: write %s: %d of %d migrated records found in %s", path, st.Replaced, len(by), inPath)
	}
	return st, nil
}

// replacer writes the new records of one WriteReplace.
type replacer struct {
	mw       *warcio.MemberWriter
	w        io.Writer
	f        *os.File
	name     string // input path
	outName  string // output file name (ARC v2 lines)
	out      *iox.CountWriter
	outcomes []Outcome
	o        WriteOptions
	st       *ReplaceStats
}

// migrated writes the migrated record of oc (and its redirect and
// provenance).
func (rw *replacer) migrated(stub *warcio.Record, oc *Outcome) error {
	rec, err := warcio.ReadAt(rw.f, rw.name, oc.Offset, stub.Length, warcio.Options{SkipPayloadDigest: true, KeepHTTPHead: true})
	if err != nil {
		return err
	}
	p, _ := rw.o.Pathways.For(oc.PUID)
	mime := p.MIME
	if oc.ResultMIME != "" {
		mime = oc.ResultMIME
	}
	newURI := oc.URI
	if len(oc.Path) == 0 {
		if n, ok := rw.o.Renames.Lookup(oc.URI); ok {
			newURI = n
		}
	}
	hasHTTP := rec.HTTP != nil && len(rec.HTTP.Head) > 0
	var block []byte
	if hasHTTP {
		block = append(httpHead(rec.HTTP.Head, mime, len(oc.Result)), oc.Result...)
	} else {
		block = oc.Result
	}
	redirect := hasHTTP && newURI != oc.URI
	var redirectBlock []byte
	if redirect {
		redirectBlock = []byte(rec.HTTP.Proto + " 301 Moved Permanently\r\nLocation: " + newURI + "\r\nContent-Length: 0\r\n\r\n")
	}
	if rec.ARC != nil {
		if err := rw.arcRecord(rec, newURI, mime, block); err != nil {
			return err
		}
		if redirect {
			return rw.arcRecord(rec, oc.URI, "text/html", redirectBlock)
		}
		return nil
	}
	pd := digest.Of(digest.SHA1, oc.Result).String()
	id := replaceID(oc, p, pd)
	contentType := mime
	if hasHTTP {
		contentType = "application/http; msgtype=response"
	}
	h := rw.head(rec, id, newURI, pd, contentType)
	if err := put(rw.mw, rw.w, &h, block); err != nil {
		return err
	}
	rw.st.Refs[oc.Offset] = MigratedRef{URI: newURI, RecordID: id, PayloadDigest: pd, MIME: mime, Size: int64(len(oc.Result))}
	extra := []string{}
	if newURI != oc.URI {
		extra = append(extra, "renamed-from", oc.URI)
	}
	if redirect {
		rid := recordID("redirect", id)
		rh := rw.head(rec, rid, oc.URI, digest.Of(digest.SHA1, nil).String(), "application/http; msgtype=response")
		if err := put(rw.mw, rw.w, &rh, redirectBlock); err != nil {
			return err
		}
		extra = append(extra, "redirect", rid+" 301 at "+oc.URI)
	}
	return putProvenance(rw.mw, rw.w, group(rw.outcomes, oc, id), rw.o.Pathways, id, newURI, h.Date, h.WarcinfoID, extra...)
}

// revisit writes a revisit of a record written anew (migrated, or an HTML
// or CSS document whose links were rewritten): at the original's
// new URI when the revisit's own URI was renamed, referring to the
// migrated record (WARC-Refers-To, -Target-URI, its payload digest), its
// HTTP head telling the new media type; then, when renamed, a 301 at the
// old URI for the revisit's date, as for the original.
func (rw *replacer) revisit(stub *warcio.Record, ref MigratedRef) error {
	rec, err := warcio.ReadAt(rw.f, rw.name, stub.Offset, stub.Length, warcio.Options{SkipPayloadDigest: true, KeepHTTPHead: true})
	if err != nil {
		return err
	}
	newURI := rec.TargetURI
	if n, ok := rw.o.Renames.Lookup(rec.TargetURI); ok {
		newURI = n
	}
	hasHTTP := rec.HTTP != nil && len(rec.HTTP.Head) > 0
	var block []byte
	if hasHTTP {
		block = httpHead(rec.HTTP.Head, ref.MIME, int(ref.Size))
	}
	id := recordID("revisit", rec.RecordID, ref.RecordID)
	h := rw.head(rec, id, newURI, ref.PayloadDigest, rec.Headers.Get("Content-Type"))
	for _, name := range []string{"WARC-Profile", "WARC-Refers-To-Date", "WARC-Truncated"} {
		if v := rec.Headers.Get(name); v != "" {
			h.Fields = append(h.Fields, warcio.Field{Name: name, Value: v})
		}
	}
	h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Refers-To", Value: ref.RecordID}, warcio.Field{Name: "WARC-Refers-To-Target-URI", Value: ref.URI})
	if rec.ARC != nil {
		return fmt.Errorf("%s offset %d: a revisit in an ARC file", rw.name, rec.Offset)
	}
	if err := put(rw.mw, rw.w, &h, block); err != nil {
		return err
	}
	if hasHTTP && newURI != rec.TargetURI {
		rh := rw.head(rec, recordID("redirect", id), rec.TargetURI, digest.Of(digest.SHA1, nil).String(), "application/http; msgtype=response")
		rh.Type = "response"
		return put(rw.mw, rw.w, &rh, []byte(rec.HTTP.Proto+" 301 Moved Permanently\r\nLocation: "+newURI+"\r\nContent-Length: 0\r\n\r\n"))
	}
	return nil
}

// head is the WARC head of a record written in place of rec.
func (rw *replacer) head(rec *warcio.Record, id, uri, payloadDigest, contentType string) warcio.RecordHead {
	date := rec.Headers.Get("WARC-Date")
	if date == "" {
		date = warcio.FormatDate(rec.Date, "1.1")
	}
	h := warcio.RecordHead{Version: "1.1", Type: rec.Type, ID: id, Date: date, WarcinfoID: rec.Headers.Get("WARC-Warcinfo-ID"),
		Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: uri}}}
	if ip := rec.Headers.Get("WARC-IP-Address"); ip != "" {
		h.Fields = append(h.Fields, warcio.Field{Name: "WARC-IP-Address", Value: ip})
	}
	h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Payload-Digest", Value: payloadDigest}, warcio.Field{Name: "Content-Type", Value: contentType})
	return h
}

// links rewrites the record when it is an HTML or CSS document referring
// to a renamed object, and reports whether it wrote it.
func (rw *replacer) links(stub *warcio.Record) (bool, error) {
	kind := LinkKind(stub.MIME)
	if kind == "" || len(rw.o.Renames) == 0 || (stub.Type != "response" && stub.Type != "resource") || stub.TargetURI == "" {
		return false, nil
	}
	rec, err := warcio.ReadAt(rw.f, rw.name, stub.Offset, stub.Length, warcio.Options{SkipPayloadDigest: true, KeepHTTPHead: true, KeepPayload: maxDocument + 1})
	if err != nil {
		return false, err
	}
	unchecked := func(why string) (bool, error) {
		rw.st.Unchecked = append(rw.st.Unchecked, fmt.Sprintf("%s offset %d (%s): %s", baseName(rw.name), rec.Offset, rec.TargetURI, why))
		return false, nil
	}
	switch {
	case len(rec.Payload) > maxDocument:
		return unchecked(fmt.Sprintf("over %d bytes", maxDocument))
	case rec.Truncated != "" || rec.Headers.Get("WARC-Truncated") != "":
		return unchecked("truncated")
	}
	if rec.HTTP != nil && (rec.HTTP.Status < 200 || rec.HTTP.Status > 299) {
		return false, nil
	}
	body := rec.Payload
	enc := ""
	if rec.HTTP != nil {
		enc = strings.TrimSpace(rec.HTTP.Header.Get("Content-Encoding"))
	}
	if enc != "" && !strings.EqualFold(enc, "identity") {
		if rw.o.Decode == nil {
			return unchecked("Content-Encoding " + enc)
		}
		if body, err = rw.o.Decode(body, enc); err != nil {
			return unchecked(err.Error())
		}
	}
	out, changed := RewriteLinks(body, kind, rec.TargetURI, rw.o.Renames)
	if len(changed) == 0 {
		return false, nil
	}
	if err := failpoint.Inject("migrate.write-record"); err != nil {
		return true, err
	}
	rw.st.Links += len(changed)
	hasHTTP := rec.HTTP != nil && len(rec.HTTP.Head) > 0
	block := out
	if hasHTTP {
		block = append(httpHead(rec.HTTP.Head, rec.HTTP.Header.Get("Content-Type"), len(out)), out...)
	}
	if rec.ARC != nil {
		return true, rw.arcRecord(rec, rec.TargetURI, rec.ARC.ContentType, block)
	}
	pd := digest.Of(digest.SHA1, out).String()
	id := recordID("links", rec.RecordID, rw.name, strconv.FormatInt(rec.Offset, 10), pd)
	h := rw.head(rec, id, rec.TargetURI, pd, rec.Headers.Get("Content-Type"))
	if err := put(rw.mw, rw.w, &h, block); err != nil {
		return true, err
	}
	mime := rec.MIME
	if rec.HTTP != nil && rec.HTTP.Header.Get("Content-Type") != "" {
		mime = rec.HTTP.Header.Get("Content-Type")
	}
	rw.st.Refs[rec.Offset] = MigratedRef{URI: rec.TargetURI, RecordID: id, PayloadDigest: pd, MIME: mime, Size: int64(len(out))}
	var b fields
	b.add("links-rewritten-from", rec.RecordID)
	b.add("source-file", baseName(rw.name))
	b.add("source-offset", strconv.FormatInt(rec.Offset, 10))
	if enc != "" {
		b.add("content-encoding-removed", enc)
	}
	for _, c := range changed {
		b.add("link", c)
	}
	mh := warcio.RecordHead{Version: "1.1", Type: "metadata", ID: recordID("provenance", id), Date: h.Date, WarcinfoID: h.WarcinfoID,
		Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: rec.TargetURI}, {Name: "WARC-Refers-To", Value: id},
			{Name: "Content-Type", Value: "application/warc-fields"}}}
	return true, put(rw.mw, rw.w, &mh, b.Bytes())
}

// arcRecord writes an ARC record like rec (its IP, date and, for ARC v2,
// result code) at uri with block, as one gzip member.
func (rw *replacer) arcRecord(rec *warcio.Record, uri, mime string, block []byte) error {
	a := rec.ARC
	ip, date := a.IP, a.Date
	if ip == "" {
		ip = "0.0.0.0"
	}
	uri = strings.ReplaceAll(uri, " ", "%20")
	if mime == "" || strings.ContainsAny(mime, " \t") {
		mime = strings.ReplaceAll(strings.ReplaceAll(mime, " ", ""), "\t", "")
	}
	if mime == "" {
		mime = "no-type"
	}
	var line string
	if a.Version == 2 {
		code := a.ResultCode
		if code == "" {
			code = "-"
		}
		if bytes.HasPrefix(block, []byte("HTTP/")) {
			if f := strings.Fields(string(block[:min(len(block), 64)])); len(f) > 1 {
				code = f[1]
			}
		}
		line = fmt.Sprintf("%s %s %s %s %s - - %d %s %d\n", uri, ip, date, mime, code, rw.out.N, rw.outName, len(block))
	} else {
		line = fmt.Sprintf("%s %s %s %s %d\n", uri, ip, date, mime, len(block))
	}
	member := make([]byte, 0, len(line)+len(block)+1)
	member = append(append(append(member, line...), block...), '\n')
	_, err := rw.mw.WriteMember(rw.w, member)
	return err
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
