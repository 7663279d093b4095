package ingest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wayside-archive/wayside/wacz"
	"github.com/wayside-archive/wayside/warcio"
)

// isWACZName reports whether a directory entry is a WACZ file to ingest.
func isWACZName(name string) bool {
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(strings.ToLower(name), ".wacz")
}

// waczFiles lists the WARC files stored in the WACZ file name in dir, to
// be read in place, by range through the zip: each is named in captures,
// CDXJ files and the checkpoint by warcio.MemberName ("coll.wacz#a.warc.gz",
// which warcfile.Locations resolves), and is finished, as a WACZ is
// written whole. The zip is checked first (wacz.Open: member names,
// counts, sizes); one still being copied in (no central directory yet)
// is skipped quietly until it has not changed for a few polls, then
// reported, once for as long as it does not change.
func (in *Ingester) waczFiles(dir, name string) ([]seenFile, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, nil // renamed or removed since ReadDir: seen next scan
	}
	id := waczListing{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	}
	if l, ok := in.wacz[p]; ok && l.same(id) {
		return l.files, nil // a problem with it was reported when it was listed
	}
	files, err := in.listWACZ(p, dir, name, fi)
	if files == nil && err == nil {
		return nil, nil // still being copied in: looked at again next poll
	}
	if in.wacz == nil {
		in.wacz = map[string]waczListing{}
	}
	id.files = files
	in.wacz[p] = id
	return files, err
}

// waczListing is a WACZ file's identity when listed, and its WARC files.
type waczListing struct {
	size     int64
	mtime    time.Time
	dev, ino uint64
	files    []seenFile
}

func (l waczListing) same(o waczListing) bool {
	return l.size == o.size && l.mtime.Equal(o.mtime) && l.dev == o.dev && l.ino == o.ino
}

// listWACZ opens the WACZ at p and lists its WARC files (waczFiles).
func (in *Ingester) listWACZ(p, dir, name string, fi os.FileInfo) ([]seenFile, error) {
	a, err := wacz.Open(p, wacz.Limits{})
	if err != nil {
		if errors.Is(err, wacz.ErrTruncated) && time.Since(fi.ModTime()) < 3*in.cfg.PollInterval {
			return nil, nil
		}
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer a.Close()
	var out []seenFile
	for _, m := range a.WARCs() {
		base := warcio.MemberName(name, m)
		if base == "" {
			return out, fmt.Errorf("ingest: %s: member %s: a WARC file in a subdirectory of archive/ is not read", p, m)
		}
		sec, err := a.Range(m)
		if err != nil {
			return out, fmt.Errorf("ingest: %w", err)
		}
		sf := seenFile{path: warcio.JoinMember(p, m), dir: dir, base: base, member: true, size: sec.Size(), mtime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			sf.dev, sf.ino = uint64(st.Dev), uint64(st.Ino)
		}
		out = append(out, sf)
	}
	return out, nil
}
