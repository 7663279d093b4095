package migrate

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wayside-archive/wayside/warcio"
)

// nestedZip migrates objects inside one record's payload (group: the
// targets of one record, each with a Path). Members of a zip payload one
// level down are converted and validated like payloads; the zip is then
// rebuilt with every other member copied as stored (compressed bytes
// unchanged) and the migrated members in place under their own names, and
// read back to check it. The first migrated member's outcome carries the
// rebuilt zip. Deeper nesting, and containers other than zip, are
// reported (StatusNested) and not migrated.
func (m *Migrator) nestedZip(ctx context.Context, rd *warcio.Reader, f *os.File, group []Target) []Outcome {
	out := make([]Outcome, len(group))
	for i, t := range group {
		out[i] = Outcome{Target: t}
	}
	failAll := func(status, format string, a ...any) []Outcome {
		for i := range out {
			if out[i].Status == "" || out[i].Status == StatusMigrated {
				out[i].Status, out[i].Reason, out[i].Result = status, fmt.Sprintf(format, a...), nil
			}
		}
		return out
	}
	src, mime, err := m.payload(rd, f, group[0].File, group[0].Offset)
	if err != nil {
		return failAll(StatusFailed, "container: %v", err)
	}
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		return failAll(StatusNested, "inside a payload that is not a zip file (%v): located, not migrated", err)
	}
	results := map[string][]byte{}
	for i := range out {
		oc := &out[i]
		p, ok := m.o.Pathways.For(oc.PUID)
		if !ok {
			oc.Status, oc.Reason = StatusNoPathway, "no pathway converts "+oc.PUID
			continue
		}
		oc.Pathway = p.Name
		if len(oc.Path) != 1 {
			oc.Status, oc.Reason = StatusNested, "nested "+fmt.Sprint(len(oc.Path))+" levels deep ("+strings.Join(oc.Path, " → ")+"): located, not migrated (one zip level is)"
			continue
		}
		var member *zip.File
		for _, zf := range zr.File {
			if zf.Name == oc.Path[0] {
				member = zf
			}
		}
		if member == nil {
			oc.Status, oc.Reason = StatusFailed, "zip member "+oc.Path[0]+" not found"
			continue
		}
		data, err := readMember(member, m.o.MaxObject)
		if err != nil {
			oc.Status, oc.Reason = StatusFailed, "zip member "+oc.Path[0]+": "+err.Error()
			continue
		}
		m.convert(ctx, p, data, oc)
		if oc.Status == StatusMigrated {
			results[member.Name] = oc.Result
			oc.Result = nil
		}
		if err := ctx.Err(); err != nil {
			return out
		}
	}
	if len(results) == 0 {
		return out
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, zf := range zr.File {
		r, ok := results[zf.Name]
		if !ok {
			if err := zw.Copy(zf); err != nil {
				return failAll(StatusFailed, "rebuild zip: %v", err)
			}
			continue
		}
		h := zf.FileHeader
		h.Method = zip.Deflate
		h.CompressedSize64, h.UncompressedSize64, h.CRC32 = 0, 0, 0
		w, err := zw.CreateHeader(&h)
		if err == nil {
			_, err = w.Write(r)
		}
		if err != nil {
			return failAll(StatusFailed, "rebuild zip: %v", err)
		}
	}
	if err := zw.Close(); err != nil {
		return failAll(StatusFailed, "rebuild zip: %v", err)
	}
	// Read the rebuilt zip back: the same members in the same order, the
	// migrated ones holding exactly the results.
	back, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(back.File) != len(zr.File) {
		return failAll(StatusFailed, "rebuilt zip does not read back: %v", err)
	}
	for i, zf := range back.File {
		if zf.Name != zr.File[i].Name {
			return failAll(StatusFailed, "rebuilt zip: member %d is %s, was %s", i, zf.Name, zr.File[i].Name)
		}
		if r, ok := results[zf.Name]; ok {
			got, err := readMember(zf, m.o.MaxObject)
			if err != nil || !bytes.Equal(got, r) {
				return failAll(StatusFailed, "rebuilt zip: member %s does not read back (%v)", zf.Name, err)
			}
		}
	}
	for i := range out {
		if out[i].Status == StatusMigrated {
			out[i].Result, out[i].ResultMIME, out[i].ResultSize = buf.Bytes(), mime, buf.Len()
			break
		}
	}
	return out
}

// readMember reads a zip member of at most max bytes.
func readMember(zf *zip.File, max int64) ([]byte, error) {
	if zf.UncompressedSize64 > uint64(max) {
		return nil, fmt.Errorf("declares %d bytes, over the %d-byte limit", zf.UncompressedSize64, max)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("over the %d-byte limit", max)
	}
	return b, nil
}
