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
// file stored in it into one name that Open, Size, OpenMember and
// warcfile.Locations read: the record bytes are read by range straight from the
// zip, nothing is copied out. "coll.wacz#archive/a.warc.gz" (JoinMember,
// for paths: its base name is the WARC file's) and "coll.wacz#a.warc.gz"
// (MemberName, a plain name for index locations) both name the member
// archive/a.warc.gz of coll.wacz.
const MemberSep = "#"

// JoinMember returns the path of member (under archive/) inside the zip
// file at zipPath.
func JoinMember(zipPath, member string) string { return zipPath + MemberSep + member }

// MemberName returns the plain file name (CheckFileName) by which an
// index location names member (archive/NAME) of the WACZ file named wacz;
// "" when the member is in a subdirectory of archive/.
func MemberName(wacz, member string) string {
	name, ok := strings.CutPrefix(member, "archive/")
	if !ok || strings.Contains(name, "/") || CheckFileName(wacz) != nil {
		return ""
	}
	return wacz + MemberSep + name
}

// SplitMember splits a name JoinMember or MemberName made: the zip file's
// path ends in ".wacz" (any case) and the member is a WARC file under
// archive/ (returned with that prefix).
func SplitMember(name string) (zipPath, member string, ok bool) {
	i := strings.LastIndex(strings.ToLower(name), ".wacz"+MemberSep)
	if i < 0 {
		return "", "", false
	}
	zipPath, member = name[:i+len(".wacz")], name[i+len(".wacz"+MemberSep):]
	if !strings.HasPrefix(member, "archive/") {
		member = "archive/" + member
	}
	if member == "archive/" || strings.Contains(member, "..") || strings.HasSuffix(member, "/") {
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
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("warcio: %w", err)
	}
	sec, err := MemberSection(f, fi.Size(), zipPath, member)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return sec, f, nil
}

// MemberSection returns the bytes of member (archive/NAME, as SplitMember
// returns it) of the zip file read through f (size bytes, named zipName in
// errors): the member must be stored, not compressed. A missing member is
// an error wrapping os.ErrNotExist. warcfile.Locations opens WACZ members
// of local and remote WACZ files through it.
func MemberSection(f io.ReaderAt, size int64, zipName, member string) (*io.SectionReader, error) {
	zipPath := zipName
	zr, err := zip.NewReader(f, size)
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
		if off < 0 || uint64(off)+zf.CompressedSize64 > uint64(size) {
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
