package migrate

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/wayside-archive/wayside/warcio"
)

// nestedZip migrates objects inside one record's payload (group: the
// targets of one record, each with a Path). The payload must be a zip;
// members are converted and validated like payloads, and members that are
// zips themselves are opened in turn (a PNG in a ZIP in a ZIP), down to
// Options.MaxDepth levels and within Options.MaxExpanded bytes unpacked
// per record. Each zip holding a migrated object is rebuilt with every
// other member copied as stored (compressed bytes unchanged) and the
// migrated or rebuilt members in place under their own names, and read
// back to check it. The first migrated object's outcome carries the
// rebuilt payload. Objects deeper than the limit, over the size budget,
// or inside containers other than zip are reported (StatusNested) and not
// migrated.
func (m *Migrator) nestedZip(ctx context.Context, rd *warcio.Reader, f io.ReaderAt, group []Target) []Outcome {
	out := make([]Outcome, len(group))
	idx := make([]int, len(group))
	for i, t := range group {
		out[i] = Outcome{Target: t}
		idx[i] = i
	}
	src, mime, err := m.payload(rd, f, group[0].File, group[0].Offset)
	if err != nil {
		for i := range out {
			out[i].Status, out[i].Reason = StatusFailed, "container: "+err.Error()
		}
		return out
	}
	budget := m.o.MaxExpanded
	rebuilt := m.rezip(ctx, src, out, idx, 0, &budget)
	for i := range out {
		if rebuilt != nil && out[i].Status == StatusMigrated {
			out[i].Result, out[i].ResultMIME, out[i].ResultSize = rebuilt, mime, len(rebuilt)
			break
		}
	}
	return out
}

// rezip migrates the objects out[i] (i in idx) inside the zip data, whose
// paths continue at Path[level], and returns the rebuilt zip, or nil when
// nothing in it was migrated. Every outcome of idx gets its status.
func (m *Migrator) rezip(ctx context.Context, data []byte, out []Outcome, idx []int, level int, budget *int64) []byte {
	set := func(is []int, status, format string, a ...any) {
		for _, i := range is {
			out[i].Status, out[i].Reason, out[i].Result = status, fmt.Sprintf(format, a...), nil
		}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		where := "the payload"
		if level > 0 {
			where = strings.Join(out[idx[0]].Path[:level], " → ")
		}
		set(idx, StatusNested, "inside %s, which is not a zip file (%v): located, not migrated", where, err)
		return nil
	}
	byMember := map[string][]int{}
	for _, i := range idx {
		byMember[out[i].Path[level]] = append(byMember[out[i].Path[level]], i)
	}
	members := map[string]*zip.File{}
	for _, zf := range zr.File {
		if _, ok := byMember[zf.Name]; ok && members[zf.Name] == nil {
			members[zf.Name] = zf
		}
	}
	results := map[string][]byte{}
	for _, zf := range zr.File {
		is, ok := byMember[zf.Name]
		if !ok || members[zf.Name] != zf {
			continue
		}
		delete(byMember, zf.Name)
		if err := ctx.Err(); err != nil {
			set(is, StatusFailed, "%v", err)
			continue
		}
		var direct, deeper []int
		for _, i := range is {
			if len(out[i].Path) == level+1 {
				direct = append(direct, i)
			} else {
				deeper = append(deeper, i)
			}
		}
		if len(deeper) > 0 && level+1 >= m.o.MaxDepth {
			for _, i := range deeper {
				out[i].Status, out[i].Reason = StatusNested, fmt.Sprintf("nested %d levels deep (%s): beyond the limit of %d container levels (--max-depth), located, not migrated",
					len(out[i].Path), strings.Join(out[i].Path, " → "), m.o.MaxDepth)
			}
			deeper = nil
		}
		for _, i := range direct {
			p, ok := m.o.Pathways.For(out[i].PUID)
			if !ok {
				out[i].Status, out[i].Reason = StatusNoPathway, "no pathway converts "+out[i].PUID
				continue
			}
			out[i].Pathway = p.Name
		}
		var need []int
		for _, i := range append(append([]int(nil), direct...), deeper...) {
			if out[i].Status == "" {
				need = append(need, i)
			}
		}
		if len(need) == 0 {
			continue
		}
		body, err := readMember(zf, min(m.o.MaxObject, max(*budget, 0)))
		if err != nil {
			set(need, StatusFailed, "zip member %s: %v (limit: %d bytes unpacked per record, %d per object)", zf.Name, err, m.o.MaxExpanded, m.o.MaxObject)
			continue
		}
		*budget -= int64(len(body))
		if len(deeper) > 0 {
			if nb := m.rezip(ctx, body, out, deeper, level+1, budget); nb != nil {
				results[zf.Name] = nb
			}
		}
		for _, i := range direct {
			oc := &out[i]
			if oc.Status != "" {
				continue
			}
			p, _ := m.o.Pathways.For(oc.PUID)
			m.convert(ctx, p, body, oc)
			if oc.Status == StatusMigrated {
				results[zf.Name] = oc.Result
				oc.Result = nil
			}
		}
	}
	for _, is := range byMember {
		for _, i := range is {
			out[i].Status, out[i].Reason = StatusFailed, "zip member "+strings.Join(out[i].Path[:level+1], " → ")+" not found"
		}
	}
	if len(results) == 0 {
		return nil
	}
	failMigrated := func(format string, a ...any) []byte {
		for _, i := range idx {
			if out[i].Status == StatusMigrated {
				out[i].Status, out[i].Reason, out[i].Result = StatusFailed, fmt.Sprintf(format, a...), nil
			}
		}
		return nil
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, zf := range zr.File {
		r, ok := results[zf.Name]
		if !ok || members[zf.Name] != zf {
			if err := zw.Copy(zf); err != nil {
				return failMigrated("rebuild zip: %v", err)
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
			return failMigrated("rebuild zip: %v", err)
		}
	}
	if err := zw.Close(); err != nil {
		return failMigrated("rebuild zip: %v", err)
	}
	// Read the rebuilt zip back: the same members in the same order, the
	// replaced ones holding exactly the results.
	back, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(back.File) != len(zr.File) {
		return failMigrated("rebuilt zip does not read back: %v", err)
	}
	for i, zf := range back.File {
		if zf.Name != zr.File[i].Name {
			return failMigrated("rebuilt zip: member %d is %s, was %s", i, zf.Name, zr.File[i].Name)
		}
		if r, ok := results[zf.Name]; ok && members[zf.Name] == zr.File[i] {
			got, err := readMember(zf, int64(len(r)))
			if err != nil || !bytes.Equal(got, r) {
				return failMigrated("rebuilt zip: member %s does not read back (%v)", zf.Name, err)
			}
		}
	}
	return buf.Bytes()
}

// readMember reads a zip member of at most max bytes.
func readMember(zf *zip.File, max int64) ([]byte, error) {
	if zf.UncompressedSize64 > uint64(max) {
		return nil, fmt.Errorf("declares %d bytes, over the limit of %d", zf.UncompressedSize64, max)
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
		return nil, fmt.Errorf("over the limit of %d bytes", max)
	}
	return b, nil
}
