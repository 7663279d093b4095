package warcio

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MemberSep joins the path of a WACZ (zip) file and the name of a WARC
// file stored in it into one name that Open and OpenMember read: the
// record bytes are read by range straight from the zip, nothing is
// copied out. "coll.wacz#archive/a.warc.gz" is the member
// archive/a.warc.gz of coll.wacz.
const MemberSep = "#"

// JoinMember returns the name of member inside the zip file at zipPath.
func JoinMember(zipPath, member string) string { return zipPath + MemberSep + member }

// SplitMember splits a name JoinMember made: the zip file's path must end
// in ".wacz" (any case) and the member be a WARC file under archive/.
func SplitMember(name string) (zipPath, member string, ok bool) {
	i := strings.LastIndex(strings.ToLower(name), ".wacz"+MemberSep)
	if i < 0 {
		return "", "", false
	}
	zipPath, member = name[:i+len(".wacz")], name[i+len(".wacz"+MemberSep):]
	if !strings.HasPrefix(member, "archive/") || strings.Contains(member, "..") {
		return "", "", false
	}
	return zipPath, member, true
}

// OpenMember opens the member of a zip file that name (JoinMember) names
// and returns a reader over its bytes in the file and the open file
// (close it when done). The member must be stored, not compressed, as
// WACZ stores its WARC files, so its records can be read by range.
func OpenMember(name string) (*io.SectionReader, *os.File, error) {
	zipPath, member, ok := SplitMember(name)
	if !ok {
		return nil, nil, fmt.Errorf("warcio: %s: not a WARC file inside a WACZ (FILE.wacz%sarchive/NAME)", name, MemberSep)
	}
	f, err := os.Open(zipPath)
	if err != nil {
		return nil, nil, fmt.Errorf("warcio: %w", err)
	}
	sec, err := memberSection(f, zipPath, member)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return sec, f, nil
}

func memberSection(f *os.File, zipPath, member string) (*io.SectionReader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("warcio: %w", err)
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("warcio: %s: %w", zipPath, err)
	}
	for _, zf := range zr.File {
		if zf.Name != member {
			continue
		}
		if zf.Method != zip.Store || zf.CompressedSize64 != zf.UncompressedSize64 {
			return nil, fmt.Errorf("warcio: %s: member %s is compressed in the zip (method %d): WARC files in a WACZ are stored, to be read by range", zipPath, member, zf.Method)
		}
		off, err := zf.DataOffset()
		if err != nil {
			return nil, fmt.Errorf("warcio: %s: member %s: %w", zipPath, member, err)
		}
		if off < 0 || uint64(off)+zf.CompressedSize64 > uint64(fi.Size()) {
			return nil, fmt.Errorf("warcio: %s: member %s runs past the end of the file", zipPath, member)
		}
		return io.NewSectionReader(f, off, int64(zf.UncompressedSize64)), nil
	}
	return nil, fmt.Errorf("warcio: %s: no member %s: %w", zipPath, member, os.ErrNotExist)
}

// isMember reports whether path names a zip member (SplitMember) rather
// than a file that exists under that name.
func isMember(path string) bool {
	if _, _, ok := SplitMember(path); !ok {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

// openMemberReader is Open of a zip member.
func openMemberReader(path string, opts []Options) (*Reader, error) {
	sec, f, err := OpenMember(path)
	if err != nil {
		return nil, err
	}
	r := NewReader(sec, path, opts...)
	r.closer = f
	r.opts.Map = false // the section is read by range; a map would be of the whole zip
	return r, nil
}

// Size returns the size in bytes of the WARC file at path: a file, or a
// WARC file stored in a WACZ (JoinMember).
func Size(path string) (int64, error) {
	if isMember(path) {
		sec, f, err := OpenMember(path)
		if err != nil {
			return 0, err
		}
		f.Close()
		return sec.Size(), nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("warcio: %w", err)
	}
	return fi.Size(), nil
}
