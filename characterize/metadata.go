package characterize

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// MetadataSuffix ends the name of the file WriteMetadata writes beside a
// WARC file: NAME.characterization.warc.gz for NAME.warc.gz.
const MetadataSuffix = ".characterization.warc.gz"

// MetadataName returns the name of the metadata file of a WARC (or ARC)
// file: its name without ".warc.gz", ".warc", ".arc.gz" or ".arc", plus
// MetadataSuffix.
func MetadataName(file string) string {
	base := filepath.Base(file)
	for _, ext := range []string{".warc.gz", ".warc", ".arc.gz", ".arc"} {
		if b, ok := strings.CutSuffix(base, ext); ok {
			return b + MetadataSuffix
		}
	}
	return base + MetadataSuffix
}

// MetadataOptions configure WriteMetadata.
type MetadataOptions struct {
	// Identifier describes the identification tool and signatures, written
	// in the warcinfo record (e.g. Engine.Tool()).
	Identifier string
	// Now stamps the records (default time.Now).
	Now func() time.Time
}

// MetadataStats says what WriteMetadata wrote.
type MetadataStats struct {
	// Records is the number of metadata records written (one per
	// characterized response, resource or conversion record).
	Records int `json:"records"`
	// Revisits were left out (each inherits its original's
	// identification, which has its own metadata record); NoID counts
	// records without a WARC-Record-ID to refer to (ARC records); Empty
	// counts empty payloads (nothing to identify).
	Revisits int `json:"revisits,omitempty"`
	NoID     int `json:"no_id,omitempty"`
	Empty    int `json:"empty,omitempty"`
}

// WriteMetadata writes the identification of the records of file that st
// holds as WARC metadata records (WARC 1.1, Annex A: "identification of
// the format of a resource") into the WARC file at path, which replaces
// any earlier one atomically (a temporary file, fsynced, renamed): never a
// partial file. The file holds a warcinfo record, then, in the order of
// the records in file, one metadata record per characterized response,
// resource or conversion record, with WARC-Refers-To its WARC-Record-ID,
// WARC-Target-URI its URI and an application/warc-fields block:
//
//	puid: fmt/11
//	format: Portable Network Graphics
//	format-version: 1.1
//	mime: image/png
//	basis: byte match at 0, 16
//	warning: …
//	size: 27402
//	content-encoding: gzip              (removed before identification)
//	note: …
//	nested: x-fmt/263 5120 site/a.zip   (an object inside the payload: PUID, size, path)
//	nested-note: site/a.zip: …
//
// Fields without a value are left out; a nested object's path joins its
// container levels with " → ". Every record is one gzip member, written
// with the project's record encoder (warcio.RecordHead) through
// warcfile.WriteFile. Revisits, records
// without a WARC-Record-ID (ARC records) and empty payloads get no record
// (MetadataStats counts them).
func WriteMetadata(st *Store, file, path string, opts MetadataOptions) (MetadataStats, error) {
	var stats MetadataStats
	if opts.Now == nil {
		opts.Now = time.Now
	}
	recs := st.Records(file)
	err := warcfile.WriteFile(path, metadataLevel, func(w *warcfile.FileWriter) error {
		infoID := warcio.NewRecordID()
		info := warcio.RecordHead{Version: "1.1", Type: "warcinfo", ID: infoID, Date: warcio.FormatDate(opts.Now(), "1.1"),
			Fields: []warcio.Field{{Name: "WARC-Filename", Value: filepath.Base(path)}, {Name: "Content-Type", Value: "application/warc-fields"}}}
		var b fieldsBlock
		b.add("software", "Wayside (github.com/wayside-archive/wayside)")
		b.add("format", "WARC File Format 1.1")
		b.add("conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")
		b.add("description", "format identification of the payloads of "+file+" (one metadata record each, WARC-Refers-To the record identified)")
		b.add("identifier", opts.Identifier)
		if err := writeRecord(w, &info, b.Bytes()); err != nil {
			return err
		}
		for _, r := range recs {
			switch {
			case r.IsRevisit():
				stats.Revisits++
				continue
			case r.RecordID == "":
				stats.NoID++
				continue
			case r.PUID == "":
				stats.Empty++
				continue
			}
			h := warcio.RecordHead{Version: "1.1", Type: "metadata", ID: warcio.NewRecordID(), Date: warcio.FormatDate(opts.Now(), "1.1"), WarcinfoID: infoID}
			if r.URI != "" {
				h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Target-URI", Value: r.URI})
			}
			h.Fields = append(h.Fields, warcio.Field{Name: "WARC-Refers-To", Value: r.RecordID},
				warcio.Field{Name: "Content-Type", Value: "application/warc-fields"})
			if err := writeRecord(w, &h, identificationBlock(r)); err != nil {
				return err
			}
			stats.Records++
		}
		return nil
	})
	if err != nil {
		return stats, fmt.Errorf("characterize: metadata of %s: %w", file, err)
	}
	return stats, nil
}

// identificationBlock is the application/warc-fields block of r's
// metadata record.
func identificationBlock(r Record) []byte {
	var b fieldsBlock
	b.add("puid", r.PUID)
	b.add("format", r.Name)
	b.add("format-version", r.Version)
	b.add("mime", r.MIME)
	b.add("basis", r.Basis)
	b.add("warning", r.Warning)
	b.add("size", strconv.FormatInt(r.Size, 10))
	b.add("content-encoding", r.Encoding)
	b.add("note", r.Note)
	for _, n := range r.Nested {
		p := strings.Join(n.Path, " → ")
		puid := n.PUID
		if puid == "" {
			puid = "-"
		}
		b.add("nested", puid+" "+strconv.FormatInt(n.Size, 10)+" "+p)
		if n.Note != "" {
			b.add("nested-note", p+": "+n.Note)
		}
	}
	return b.Bytes()
}

// fieldsBlock builds an application/warc-fields block.
type fieldsBlock struct{ bytes.Buffer }

// add appends "name: value" unless value is empty; line breaks in value
// are percent-encoded (a field is one line).
func (b *fieldsBlock) add(name, value string) {
	if value == "" {
		return
	}
	if strings.ContainsAny(value, "\r\n") {
		value = strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(value)
	}
	b.WriteString(name)
	b.WriteString(": ")
	b.WriteString(value)
	b.WriteString("\r\n")
}

// metadataLevel is the gzip level metadata files are written at: the
// compressor's default (klauspost/compress maps gzip.DefaultCompression to
// 5), which they have always been written with.
const metadataLevel = 5

// writeRecord writes the record h with block (its digest and length set
// here) as one gzip member to w.
func writeRecord(w *warcfile.FileWriter, h *warcio.RecordHead, block []byte) error {
	h.BlockDigest = digest.Of(digest.SHA1, block).String()
	h.ContentLength = int64(len(block))
	_, err := w.WriteRecord(h, bytes.NewReader(block))
	return err
}
