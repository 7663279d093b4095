package wacz

import (
	"archive/zip"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Limits bound what Open accepts, so that a hostile WACZ cannot exhaust
// memory or disk (a zip bomb) or write outside a work area (a zip slip).
type Limits struct {
	// MaxMembers is the most zip members (default 100 000).
	MaxMembers int
	// MaxDepth is the most path components of a member name (default 8).
	MaxDepth int
	// MaxMetaBytes bounds the uncompressed size of the members read whole
	// into memory (datapackage.json, datapackage-digest.json; default
	// 64 MiB) and of one decompressed index block.
	MaxMetaBytes int64
	// MaxRatio is the most a deflated member may expand (uncompressed /
	// compressed size; default 200).
	MaxRatio int64
	// MaxTotalBytes bounds the sum of the members' uncompressed sizes
	// (default 4 TiB).
	MaxTotalBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxMembers <= 0 {
		l.MaxMembers = 100000
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 8
	}
	if l.MaxMetaBytes <= 0 {
		l.MaxMetaBytes = 64 << 20
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = 200
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = 4 << 40
	}
	return l
}

// ErrUnsafe is wrapped by errors about a member that Open refuses: an
// unsafe name, a zip bomb, a member outside the file.
var ErrUnsafe = errors.New("unsafe zip member")

// ErrTruncated is wrapped by the error of a file that is not a complete zip.
var ErrTruncated = errors.New("not a complete zip file")

// Archive is an open WACZ (or any zip) whose members passed Open's checks.
type Archive struct {
	path    string
	f       *os.File
	size    int64
	zr      *zip.Reader
	members map[string]*zip.File
	limits  Limits
}

// Open opens the zip file at p and checks every member against limits
// (zero fields take the defaults) before anything is read: safe names
// (relative, no "..", no backslash, no control characters, no duplicates,
// at most MaxDepth components), at most MaxMembers, each member's data
// inside the file, Store or Deflate only, a stored member's sizes equal,
// a deflated one expanding at most MaxRatio times, the total at most
// MaxTotalBytes. A file whose end (the central directory) is missing is an
// ErrTruncated error that names the member the file breaks off in.
func Open(p string, limits Limits) (*Archive, error) {
	limits = limits.withDefaults()
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("wacz: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wacz: %w", err)
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		where := truncatedAt(f, fi.Size())
		f.Close()
		return nil, fmt.Errorf("wacz: %s: %w (%v)%s", p, ErrTruncated, err, where)
	}
	a := &Archive{path: p, f: f, size: fi.Size(), zr: zr, members: map[string]*zip.File{}, limits: limits}
	if err := a.check(); err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

func (a *Archive) check() error {
	l := a.limits
	if len(a.zr.File) > l.MaxMembers {
		return fmt.Errorf("wacz: %s: %d members, more than the limit of %d: %w", a.path, len(a.zr.File), l.MaxMembers, ErrUnsafe)
	}
	var total uint64
	for _, zf := range a.zr.File {
		name := zf.Name
		if err := safeNameDepth(name, l.MaxDepth); err != nil {
			return fmt.Errorf("wacz: %s: member %q: %w: %w", a.path, name, ErrUnsafe, err)
		}
		if _, dup := a.members[name]; dup {
			return fmt.Errorf("wacz: %s: member %s appears twice: %w", a.path, name, ErrUnsafe)
		}
		a.members[name] = zf
		if strings.HasSuffix(name, "/") {
			continue // a directory entry
		}
		off, err := zf.DataOffset()
		if err != nil {
			return fmt.Errorf("wacz: %s: member %s: its local header is damaged: %w", a.path, name, err)
		}
		if off < 0 || zf.CompressedSize64 > uint64(a.size) || uint64(off)+zf.CompressedSize64 > uint64(a.size) {
			return fmt.Errorf("wacz: %s: member %s: its data (%d bytes at offset %d) runs past the end of the file (%d bytes): %w", a.path, name, zf.CompressedSize64, off, a.size, ErrTruncated)
		}
		switch zf.Method {
		case zip.Store:
			if zf.CompressedSize64 != zf.UncompressedSize64 {
				return fmt.Errorf("wacz: %s: member %s: stored, but its sizes differ (%d, %d)", a.path, name, zf.CompressedSize64, zf.UncompressedSize64)
			}
		case zip.Deflate:
			if zf.UncompressedSize64 > 1<<20 && zf.UncompressedSize64/max(zf.CompressedSize64, 1) > uint64(l.MaxRatio) {
				return fmt.Errorf("wacz: %s: member %s: %d bytes expand to %d (more than %d times): a zip bomb: %w", a.path, name, zf.CompressedSize64, zf.UncompressedSize64, l.MaxRatio, ErrUnsafe)
			}
		default:
			return fmt.Errorf("wacz: %s: member %s: compression method %d (only Store and Deflate are read)", a.path, name, zf.Method)
		}
		total += zf.UncompressedSize64
		if total > uint64(l.MaxTotalBytes) {
			return fmt.Errorf("wacz: %s: member %s: the members' total size passes the limit of %d bytes: %w", a.path, name, l.MaxTotalBytes, ErrUnsafe)
		}
	}
	return a.checkLocalHeaders()
}

// ErrMismatch is wrapped by the error of a zip whose local headers do not
// agree with its central directory (changed bytes, or bytes inserted
// between members).
var ErrMismatch = errors.New("local header does not match the central directory")

// checkLocalHeaders walks the members in file order: each local header
// must start where the previous member ends and carry the central
// directory's name, method and (without a data descriptor) CRC-32 and
// sizes.
func (a *Archive) checkLocalHeaders() error {
	files := make([]*zip.File, 0, len(a.zr.File))
	offs := map[*zip.File]int64{}
	for _, zf := range a.zr.File {
		off, err := zf.DataOffset()
		if err != nil {
			return fmt.Errorf("wacz: %s: member %s: %w", a.path, zf.Name, err)
		}
		offs[zf] = off
		files = append(files, zf)
	}
	slices.SortFunc(files, func(x, y *zip.File) int { return cmp.Compare(offs[x], offs[y]) })
	var pos int64
	hdr := make([]byte, 30)
	for _, zf := range files {
		bad := func(what string) error {
			return fmt.Errorf("wacz: %s: member %s: %w (%s)", a.path, zf.Name, ErrMismatch, what)
		}
		if _, err := a.f.ReadAt(hdr, pos); err != nil {
			return bad(fmt.Sprintf("no local header at offset %d", pos))
		}
		if binary.LittleEndian.Uint32(hdr) != 0x04034b50 {
			return bad(fmt.Sprintf("no local header signature at offset %d: bytes before or between members", pos))
		}
		flags := binary.LittleEndian.Uint16(hdr[6:])
		method := binary.LittleEndian.Uint16(hdr[8:])
		crc := binary.LittleEndian.Uint32(hdr[14:])
		csize := binary.LittleEndian.Uint32(hdr[18:])
		usize := binary.LittleEndian.Uint32(hdr[22:])
		nlen := int64(binary.LittleEndian.Uint16(hdr[26:]))
		elen := int64(binary.LittleEndian.Uint16(hdr[28:]))
		name := make([]byte, nlen)
		if _, err := a.f.ReadAt(name, pos+30); err != nil {
			return bad("name cut short")
		}
		switch {
		case string(name) != zf.Name:
			return bad(fmt.Sprintf("the local header names it %q", name))
		case pos+30+nlen+elen != offs[zf]:
			return bad("its data does not follow its local header")
		case method != zf.Method:
			return bad(fmt.Sprintf("method %d in the local header, %d in the central directory", method, zf.Method))
		case flags&0x8 == 0 && crc != zf.CRC32:
			return bad(fmt.Sprintf("CRC-32 %08x in the local header, %08x in the central directory", crc, zf.CRC32))
		case flags&0x8 == 0 && csize != 0xffffffff && (uint64(csize) != zf.CompressedSize64 || uint64(usize) != zf.UncompressedSize64):
			return bad("its sizes differ from the central directory's")
		}
		pos = offs[zf] + int64(zf.CompressedSize64)
		if flags&0x8 != 0 {
			// A data descriptor: [signature] CRC-32, sizes (4 or 8 bytes each).
			var sig [4]byte
			a.f.ReadAt(sig[:], pos)
			if binary.LittleEndian.Uint32(sig[:]) == 0x08074b50 {
				pos += 4
			}
			pos += 12
			if zf.CompressedSize64 >= 0xffffffff || zf.UncompressedSize64 >= 0xffffffff {
				pos += 8
			}
		}
	}
	return nil
}

// truncatedAt walks the local file headers from the start of a zip whose
// central directory is missing and names the member the file ends in.
func truncatedAt(r io.ReaderAt, size int64) string {
	var off int64
	var last string
	hdr := make([]byte, 30)
	for off < size {
		if _, err := r.ReadAt(hdr, off); err != nil {
			break
		}
		if binary.LittleEndian.Uint32(hdr) != 0x04034b50 {
			break
		}
		flags := binary.LittleEndian.Uint16(hdr[6:])
		csize := int64(binary.LittleEndian.Uint32(hdr[18:]))
		nlen := int64(binary.LittleEndian.Uint16(hdr[26:]))
		elen := int64(binary.LittleEndian.Uint16(hdr[28:]))
		name := make([]byte, min(nlen, 4096))
		if _, err := r.ReadAt(name, off+30); err != nil {
			return fmt.Sprintf("; the file ends in the header of a member at offset %d", off)
		}
		last = string(name)
		end := off + 30 + nlen + elen + csize
		if flags&0x8 != 0 {
			return fmt.Sprintf("; last member found: %s at offset %d (its size is not in its header)", last, off)
		}
		if end > size {
			return fmt.Sprintf("; the file ends inside member %s (%d of its %d bytes present)", last, max(size-(off+30+nlen+elen), 0), csize)
		}
		off = end
	}
	if last != "" {
		return fmt.Sprintf("; the members up to %s are whole, the central directory is missing", last)
	}
	return ""
}

// safeName checks a member name Create writes.
func safeName(name string) error { return safeNameDepth(name, 8) }

func safeNameDepth(name string, depth int) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > 1024:
		return errors.New("name longer than 1024 bytes")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	case strings.Contains(name, `\`):
		return errors.New("backslash in the name (a Windows path separator)")
	case len(name) >= 2 && name[1] == ':':
		return errors.New("drive letter in the name")
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("control character in the name")
	}
	parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
	if len(parts) > depth {
		return fmt.Errorf("%d path components, more than %d", len(parts), depth)
	}
	for _, p := range parts {
		switch p {
		case "":
			return errors.New("empty path component")
		case ".", "..":
			return fmt.Errorf("path component %q", p)
		}
	}
	return nil
}

// Path is the file Open opened.
func (a *Archive) Path() string { return a.path }

// Close closes the file.
func (a *Archive) Close() error { return a.f.Close() }

// Members lists the member names in the order of the central directory.
func (a *Archive) Members() []string {
	out := make([]string, 0, len(a.zr.File))
	for _, zf := range a.zr.File {
		out = append(out, zf.Name)
	}
	return out
}

// Has reports whether the archive holds member name.
func (a *Archive) Has(name string) bool { _, ok := a.members[name]; return ok }

// Size returns the uncompressed size of member name, -1 if missing.
func (a *Archive) Size(name string) int64 {
	zf, ok := a.members[name]
	if !ok {
		return -1
	}
	return int64(zf.UncompressedSize64)
}

// OpenMember opens member name for reading; reading yields at most its
// declared size (a member that inflates past it is an error) and checks
// its CRC-32 at the end.
func (a *Archive) OpenMember(name string) (io.ReadCloser, error) {
	zf, ok := a.members[name]
	if !ok {
		return nil, fmt.Errorf("wacz: %s: no member %s", a.path, name)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, fmt.Errorf("wacz: %s: member %s: %w", a.path, name, err)
	}
	return &memberReader{rc: rc, left: int64(zf.UncompressedSize64), name: name, path: a.path}, nil
}

type memberReader struct {
	rc         io.ReadCloser
	left       int64
	name, path string
}

func (m *memberReader) Read(p []byte) (int, error) {
	if m.left <= 0 {
		// One more read lets archive/zip check the CRC and the size.
		var one [1]byte
		n, err := m.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("wacz: %s: member %s: more data than its declared size: %w", m.path, m.name, ErrUnsafe)
		}
		if err != nil && err != io.EOF {
			return 0, fmt.Errorf("wacz: %s: member %s: %w", m.path, m.name, err)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > m.left {
		p = p[:m.left]
	}
	n, err := m.rc.Read(p)
	m.left -= int64(n)
	if err == io.EOF && m.left > 0 {
		return n, fmt.Errorf("wacz: %s: member %s: %d bytes short of its declared size: %w", m.path, m.name, m.left, io.ErrUnexpectedEOF)
	}
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("wacz: %s: member %s: %w", m.path, m.name, err)
	}
	if err == io.EOF && m.left == 0 {
		err = nil
	}
	return n, err
}

func (m *memberReader) Close() error { return m.rc.Close() }

// ReadSmall reads a whole member of at most Limits.MaxMetaBytes.
func (a *Archive) ReadSmall(name string) ([]byte, error) {
	if s := a.Size(name); s > a.limits.MaxMetaBytes {
		return nil, fmt.Errorf("wacz: %s: member %s: %d bytes, more than the limit of %d for a member read whole: %w", a.path, name, s, a.limits.MaxMetaBytes, ErrUnsafe)
	}
	rc, err := a.OpenMember(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Range returns a reader over the bytes of a stored member, read by range
// straight from the file (WARC records are fetched this way).
func (a *Archive) Range(name string) (*io.SectionReader, error) {
	zf, ok := a.members[name]
	if !ok {
		return nil, fmt.Errorf("wacz: %s: no member %s", a.path, name)
	}
	if zf.Method != zip.Store {
		return nil, fmt.Errorf("wacz: %s: member %s is compressed in the zip (method %d), so it cannot be read by range: WACZ stores WARC files", a.path, name, zf.Method)
	}
	off, err := zf.DataOffset()
	if err != nil {
		return nil, fmt.Errorf("wacz: %s: member %s: %w", a.path, name, err)
	}
	return io.NewSectionReader(a.f, off, int64(zf.UncompressedSize64)), nil
}

// WARCs lists the archive/ members that are WARC files.
func (a *Archive) WARCs() []string {
	var out []string
	for _, zf := range a.zr.File {
		n := zf.Name
		if strings.HasPrefix(n, archiveDir) && (strings.HasSuffix(n, ".warc") || strings.HasSuffix(n, ".warc.gz")) {
			out = append(out, n)
		}
	}
	return out
}

// ExtractWARCs copies the WARC files of the WACZ at p into dir (which must
// exist), under their base names, and returns their paths. Nothing is
// written outside dir: member names passed Open's checks, only base names
// are used, and an existing file is never replaced.
func ExtractWARCs(ctx context.Context, p, dir string, limits Limits) ([]string, error) {
	a, err := Open(p, limits)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("wacz: %w", err)
	}
	var out []string
	for _, m := range a.WARCs() {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		dst := filepath.Join(absDir, path.Base(m))
		if filepath.Dir(dst) != absDir {
			return out, fmt.Errorf("wacz: %s: member %s would be written outside %s: %w", p, m, dir, ErrUnsafe)
		}
		if err := a.extract(m, dst); err != nil {
			return out, err
		}
		out = append(out, dst)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("wacz: %s: no WARC files under archive/", p)
	}
	return out, nil
}

func (a *Archive) extract(m, dst string) error {
	rc, err := a.OpenMember(m)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("wacz: %s: member %s: %w", a.path, m, err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		os.Remove(dst)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(dst)
		return fmt.Errorf("wacz: %w", err)
	}
	return nil
}
