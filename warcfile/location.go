package warcfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/warcio"
)

// A WARC location names where one WARC (or ARC) file lives:
//
//   - a plain base name ("NAME.warc.gz"), looked up in the local WARC
//     directories (final name, or ".open" while a writer has it);
//   - file:///ABS/PATH, a local file;
//   - s3://BUCKET/KEY?endpoint=http://HOST:PORT, an object in S3-compatible
//     storage (package warcfile/s3 registers the scheme);
//   - http(s)://HOST/PATH, a file on a web server that honours Range
//     requests (read only);
//   - a WARC file stored in a WACZ: any of the above naming the WACZ,
//     "#NAME" appended ("coll.wacz#a.warc.gz", warcio.MemberName, or
//     s3://B/coll.wacz?endpoint=E#a.warc.gz): the member archive/NAME,
//     read by range through the zip (stored, not compressed), nothing
//     copied out.
//
// Locations opens them; backends register their scheme (RegisterScheme),
// as dedupindex's do. Remote files are read by range: a record at an
// offset costs one ranged request, not a copy of the file.

// Backend opens the remote files of one scheme. A Locations makes one
// Backend per scheme, on first use, and keeps it (its clients and
// connections are reused); a Backend that is an io.Closer is closed by
// Locations.Close.
type Backend interface {
	// Open opens the file at u (a location URL of the backend's scheme)
	// for reading by range. A missing file is an error wrapping
	// fs.ErrNotExist.
	Open(ctx context.Context, u *url.URL) (ReadFile, error)
}

var (
	regMu    sync.RWMutex
	backends = map[string]func() Backend{}
)

// RegisterScheme makes the backends newBackend makes reachable through
// Locations under scheme. Backend packages call it from init (a program
// links only the backends it imports); registering a scheme twice or a nil
// constructor panics, as sql.Register does.
func RegisterScheme(scheme string, newBackend func() Backend) {
	scheme = strings.ToLower(scheme)
	regMu.Lock()
	defer regMu.Unlock()
	if newBackend == nil {
		panic("warcfile: RegisterScheme of a nil backend for " + scheme)
	}
	if _, dup := backends[scheme]; dup {
		panic("warcfile: RegisterScheme called twice for " + scheme)
	}
	backends[scheme] = newBackend
}

// Schemes lists the registered location schemes, sorted ("file" is always
// there).
func Schemes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	s := []string{"file"}
	for k := range backends {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

func init() {
	RegisterScheme("http", newHTTPBackend)
	RegisterScheme("https", newHTTPBackend)
}

// IsURL reports whether loc is a location URL (it has a scheme) rather
// than a base name resolved against the local WARC directories.
func IsURL(loc string) bool {
	i := strings.Index(loc, "://")
	if i <= 0 {
		return false
	}
	for _, r := range loc[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// CheckLocation returns an error unless loc is a plain base name
// (warcio.CheckFileName) or a URL of a registered scheme without
// credentials in it.
func CheckLocation(loc string) error {
	if !IsURL(loc) {
		return warcio.CheckFileName(loc)
	}
	_, err := parseLocation(loc)
	return err
}

func parseLocation(loc string) (*url.URL, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("WARC location %q: %w", loc, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.User != nil {
		return nil, fmt.Errorf("WARC location %s://%s: credentials in the URL are refused (use the environment or the shared config files)", u.Scheme, u.Host)
	}
	if u.Scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("WARC location %s: a file URL names a local file (file:///PATH)", loc)
		}
		if !path.IsAbs(u.Path) {
			return nil, fmt.Errorf("WARC location %s: not an absolute path", loc)
		}
		return u, nil
	}
	regMu.RLock()
	_, ok := backends[u.Scheme]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("WARC location %s: unknown scheme %q (known: %s)", loc, u.Scheme, strings.Join(Schemes(), ", "))
	}
	return u, nil
}

// Base returns the file name a location ends in: loc itself for a base
// name, the last path element of a URL.
func Base(loc string) string {
	if !IsURL(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	return path.Base(u.Path)
}

// Join returns the location of the file name in the "directory" location
// base: base's path with name appended, its query kept
// ("s3://b/p?endpoint=E" + "x.warc.gz" = "s3://b/p/x.warc.gz?endpoint=E").
// A base that is a local directory path gives a file:// URL.
func Join(base, name string) (string, error) {
	if err := warcio.CheckFileName(name); err != nil {
		return "", fmt.Errorf("warcfile: %w", err)
	}
	if !IsURL(base) {
		if !path.IsAbs(base) {
			return "", fmt.Errorf("warcfile: %q is not an absolute directory or a location URL", base)
		}
		return (&url.URL{Scheme: "file", Path: path.Join(base, name)}).String(), nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("warcfile: WARC location %q: %w", base, err)
	}
	if u.User != nil {
		return "", fmt.Errorf("warcfile: WARC location %s://%s: credentials in the URL are refused", u.Scheme, u.Host)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// Locations opens WARC files by location (see the package comment): base
// names in Dirs, URLs through the registered backends. It is safe for
// concurrent use; Close releases the backends it made.
type Locations struct {
	// Dirs are the local WARC directories base names are looked up in.
	Dirs []string
	// Allowed, when not nil, limits the location URLs Open and List
	// accept to files under one of these prefix locations (same scheme,
	// host and parameters; a path below the prefix's), so that a location
	// from outside (a CDX line loaded into an index) cannot name any file
	// or server the process can reach. Base names are always looked up in
	// Dirs.
	Allowed []string

	mu       sync.Mutex
	backends map[string]Backend
}

// NewLocations returns the Locations resolving base names in dirs.
func NewLocations(dirs []string) *Locations { return &Locations{Dirs: dirs} }

// Open opens the WARC file at loc for reading at any offset. A file that
// is not there is an error wrapping fs.ErrNotExist; errors name loc.
func (l *Locations) Open(ctx context.Context, loc string) (ReadFile, error) {
	if zipLoc, member, ok := SplitMember(loc); ok {
		return l.openMember(ctx, loc, zipLoc, member)
	}
	if !IsURL(loc) {
		f, err := warcio.FindFile(l.Dirs, loc)
		if err != nil {
			return nil, fmt.Errorf("warcfile: %w", err)
		}
		return f, nil
	}
	u, err := parseLocation(loc)
	if err != nil {
		return nil, fmt.Errorf("warcfile: %w", err)
	}
	if err := l.allowed(u, loc); err != nil {
		return nil, err
	}
	if u.Scheme == "file" {
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, fmt.Errorf("warcfile: %w", err)
		}
		return f, nil
	}
	b, err := l.backend(u.Scheme)
	if err != nil {
		return nil, err
	}
	f, err := b.Open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("warcfile: %w", err)
	}
	return f, nil
}

// SplitMember splits the location of a WARC file stored in a WACZ into
// the WACZ's location and the member's name in the zip (archive/NAME): a
// base name as warcio.SplitMember splits it, or a URL whose path ends in
// ".wacz" with the member's name as its fragment.
func SplitMember(loc string) (zipLoc, member string, ok bool) {
	if !IsURL(loc) {
		return warcio.SplitMember(loc)
	}
	u, err := url.Parse(loc)
	if err != nil || u.Fragment == "" || !strings.HasSuffix(strings.ToLower(u.Path), ".wacz") {
		return "", "", false
	}
	member = u.Fragment
	if !strings.HasPrefix(member, "archive/") {
		member = "archive/" + member
	}
	if member == "archive/" || strings.Contains(member, "..") || strings.HasSuffix(member, "/") {
		return "", "", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), member, true
}

// openMember opens member of the WACZ at zipLoc (Open of loc).
func (l *Locations) openMember(ctx context.Context, loc, zipLoc, member string) (ReadFile, error) {
	f, err := l.Open(ctx, zipLoc)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("warcfile: %s: %w", zipLoc, err)
	}
	sec, err := warcio.MemberSection(f, fi.Size(), zipLoc, member)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("warcfile: %w", err)
	}
	return &memberFile{SectionReader: sec, f: f, info: memberInfo{FileInfo: fi, name: path.Base(member), size: sec.Size()}}, nil
}

// memberFile is a WARC file stored in an open WACZ file: reads stay within
// the member; Stat gives the member's size; Sync (when the WACZ is a local
// file) makes the WACZ durable.
type memberFile struct {
	*io.SectionReader
	f    ReadFile
	info memberInfo
}

func (m *memberFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memberFile) Close() error               { return m.f.Close() }

// Sync syncs the WACZ file holding the member when it can be synced (a
// local file); a remote store holds it durably already.
func (m *memberFile) Sync() error {
	if s, ok := m.f.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}

type memberInfo struct {
	fs.FileInfo
	name string
	size int64
}

func (i memberInfo) Name() string { return i.name }
func (i memberInfo) Size() int64  { return i.size }

// allowed returns an error unless u (the location loc) is under one of
// l.Allowed (or l.Allowed is nil).
func (l *Locations) allowed(u *url.URL, loc string) error {
	if l.Allowed == nil {
		return nil
	}
	for _, a := range l.Allowed {
		au, err := url.Parse(a)
		if err != nil {
			continue
		}
		dir := strings.TrimSuffix(au.Path, "/") + "/"
		if strings.EqualFold(au.Scheme, u.Scheme) && au.Host == u.Host && au.RawQuery == u.RawQuery &&
			(u.Path == au.Path || strings.HasPrefix(path.Clean(u.Path), dir) || dir == "/") {
			return nil
		}
	}
	return fmt.Errorf("warcfile: %s: not under an allowed location (%s)", loc, strings.Join(l.Allowed, ", "))
}

func (l *Locations) backend(scheme string) (Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.backends[scheme]; b != nil {
		return b, nil
	}
	regMu.RLock()
	nb := backends[scheme]
	regMu.RUnlock()
	if nb == nil {
		return nil, fmt.Errorf("warcfile: unknown location scheme %q", scheme)
	}
	if l.backends == nil {
		l.backends = map[string]Backend{}
	}
	b := nb()
	l.backends[scheme] = b
	return b, nil
}

// Close closes the backends l made.
func (l *Locations) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, b := range l.backends {
		if c, ok := b.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	l.backends = nil
	return errors.Join(errs...)
}

// ReadRecord reads the one record stored at offset in the file at loc
// (warcio.ReadAt: length, when > 0, bounds the bytes read). Its errors name
// the location and the offset.
func (l *Locations) ReadRecord(ctx context.Context, loc string, offset, length int64, opts warcio.Options) (*warcio.Record, error) {
	f, err := l.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return warcio.ReadAt(f, loc, offset, length, opts)
}

// IsNotExist reports whether err says a location holds no file.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Stored describes one file under a prefix location (Locations.List).
type Stored struct {
	// Loc is the file's location (Join of the prefix and Name).
	Loc  string
	Name string
	Size int64
	// ModTime is when it was last written; Version identifies its content
	// (an S3 ETag): a file replaced under the same name has another.
	ModTime time.Time
	Version string
}

// Lister is implemented by a Backend that can list the files directly
// under a prefix (s3://BUCKET/PREFIX/): serve follows such a prefix as it
// follows a directory.
type Lister interface {
	List(ctx context.Context, prefix *url.URL) ([]Stored, error)
}

// List returns the files directly under the prefix location prefix, sorted
// by name; their Loc is Join(prefix, Name). A backend that cannot list is
// an error naming the scheme.
func (l *Locations) List(ctx context.Context, prefix string) ([]Stored, error) {
	u, err := parseLocation(prefix)
	if err != nil {
		return nil, fmt.Errorf("warcfile: %w", err)
	}
	if u.Scheme == "file" {
		return nil, fmt.Errorf("warcfile: %s: list a local directory as a directory, not a file URL", prefix)
	}
	if err := l.allowed(u, prefix); err != nil {
		return nil, err
	}
	b, err := l.backend(u.Scheme)
	if err != nil {
		return nil, err
	}
	ls, ok := b.(Lister)
	if !ok {
		return nil, fmt.Errorf("warcfile: %s: %s locations cannot be listed (name each file)", prefix, u.Scheme)
	}
	out, err := ls.List(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("warcfile: %w", err)
	}
	for i := range out {
		if out[i].Loc, err = Join(prefix, out[i].Name); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
