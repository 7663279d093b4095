package wacz

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/internal/iox"
	"github.com/wayside-archive/wayside/warcio"
)

// Version is the WACZ version written.
const Version = "1.1.1"

// Member paths fixed by the WACZ specification.
const (
	DatapackagePath       = "datapackage.json"
	DatapackageDigestPath = "datapackage-digest.json"
	PagesPath             = "pages/pages.jsonl"
	ExtraPagesPath        = "pages/extraPages.jsonl"
	IndexCDXJPath         = "indexes/index.cdxj"
	IndexZipNumPath       = "indexes/index.cdx.gz"
	IndexIDXPath          = "indexes/index.idx"
	archiveDir            = "archive/"
	extrasDir             = "wayside/"
)

// Defaults of Options.
const (
	DefaultZipNumThreshold = 4 << 20
	DefaultZipNumLines     = 3000
	titleBytes             = 64 << 10
)

// Extra is a Wayside-only resource added under wayside/ in the WACZ.
type Extra struct {
	// Name is the member name under wayside/ ("mementomap.ukvs").
	Name string
	// File is the local file copied in.
	File string
}

// Options control Create.
type Options struct {
	Title       string
	Description string
	// Seeds are the crawl's seed URLs: their captures are pages, and so
	// are HTML pages on a seed's host; other HTML pages go to
	// extraPages.jsonl. Without seeds every HTML page is a page.
	Seeds []string
	// Key signs datapackage-digest.json; nil leaves the WACZ unsigned.
	Key *ecdsa.PrivateKey
	// Software names the writer in datapackage.json ("Wayside vX").
	Software string
	// Created is the creation time written (zero: now).
	Created time.Time
	// ZipNumThreshold is the size in bytes of the CDXJ index past which
	// it is written as a ZipNum index (0: DefaultZipNumThreshold; < 0:
	// never).
	ZipNumThreshold int64
	// ZipNumLines is the number of lines per ZipNum block (0: 3000).
	ZipNumLines int
	// TempDir holds temporary files ("": the output's directory).
	TempDir string
	// SortMemory bounds the index lines held in memory (0: 16 MiB; past
	// it sorted runs spill to TempDir).
	SortMemory int64
	// Extras are added under wayside/.
	Extras []Extra
	// Log receives progress (nil: none).
	Log *slog.Logger
}

// Resource is one entry of datapackage.json's resources.
type Resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

// Result says what Create wrote.
type Result struct {
	WARCs      int
	Records    int
	IndexLines int
	Pages      int
	ExtraPages int
	ZipNum     bool
	Signed     bool
	Bytes      int64 // size of the WACZ
	Resources  []Resource
	// Problems lists records that could not be read or indexed (their
	// bytes are in the WACZ all the same, as in the input).
	Problems []error
}

// Datapackage is datapackage.json.
type Datapackage struct {
	Profile      string     `json:"profile"`
	WACZVersion  string     `json:"wacz_version"`
	Title        string     `json:"title,omitempty"`
	Description  string     `json:"description,omitempty"`
	Created      string     `json:"created"`
	Software     string     `json:"software,omitempty"`
	MainPageURL  string     `json:"mainPageUrl,omitempty"`
	MainPageDate string     `json:"mainPageDate,omitempty"`
	Resources    []Resource `json:"resources"`
}

// DigestFile is datapackage-digest.json.
type DigestFile struct {
	Path       string      `json:"path"`
	Hash       string      `json:"hash"`
	SignedData *SignedData `json:"signedData,omitempty"`
}

// ExpandInputs turns the inputs given to Create into WARC files: a
// directory stands for its *.warc and *.warc.gz files (not ".open" ones,
// not recursively), in name order; a file is taken as it is.
func ExpandInputs(inputs []string) ([]string, error) {
	var out []string
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			return nil, fmt.Errorf("wacz: %w", err)
		}
		if !fi.IsDir() {
			out = append(out, in)
			continue
		}
		ents, err := os.ReadDir(in)
		if err != nil {
			return nil, fmt.Errorf("wacz: %w", err)
		}
		n := 0
		for _, e := range ents {
			name := e.Name()
			if !strings.HasSuffix(name, ".warc") && !strings.HasSuffix(name, ".warc.gz") {
				continue
			}
			if fi, err := os.Stat(filepath.Join(in, name)); err == nil && fi.Mode().IsRegular() { // a symlink to a file counts
				out = append(out, filepath.Join(in, name))
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("wacz: %s: no closed WARC files (*.warc, *.warc.gz) in the directory", in)
		}
	}
	return out, nil
}

// Input is one WARC file to package from something other than a local
// file (CreateTo): Name is its name under archive/, Open gives its bytes
// from the start. Open is called twice, once to index and hash the file
// and once to copy it into the zip; the two reads must give the same
// bytes (a difference is an error naming the member).
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// fileInputs makes Inputs of local WARC files.
func fileInputs(warcs []string) []Input {
	in := make([]Input, len(warcs))
	for i, w := range warcs {
		in[i] = Input{Name: filepath.Base(w), Open: func() (io.ReadCloser, error) { return os.Open(w) }}
	}
	return in
}

// checkInputNames checks the names of the inputs and extras.
func checkInputNames(inputs []Input, opts Options) error {
	if len(inputs) == 0 {
		return errors.New("wacz: no WARC files given")
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		if seen[in.Name] {
			return fmt.Errorf("wacz: two WARC files are named %s; archive/ holds files by name", in.Name)
		}
		seen[in.Name] = true
		if err := safeName(archiveDir + in.Name); err != nil {
			return fmt.Errorf("wacz: %s: %w", in.Name, err)
		}
	}
	for _, x := range opts.Extras {
		if err := safeName(extrasDir + x.Name); err != nil {
			return fmt.Errorf("wacz: extra %s: %w", x.File, err)
		}
	}
	return nil
}

func (opts Options) withDefaults() Options {
	if opts.ZipNumThreshold == 0 {
		opts.ZipNumThreshold = DefaultZipNumThreshold
	}
	if opts.ZipNumLines <= 0 {
		opts.ZipNumLines = DefaultZipNumLines
	}
	if opts.SortMemory <= 0 {
		opts.SortMemory = 16 << 20
	}
	if opts.Created.IsZero() {
		opts.Created = time.Now()
	}
	opts.Created = opts.Created.UTC()
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return opts
}

// Create writes a WACZ of the WARC files warcs to out (a temporary file
// renamed into place when complete).
func Create(ctx context.Context, out string, warcs []string, opts Options) (*Result, error) {
	seen := map[string]string{}
	for _, w := range warcs {
		b := filepath.Base(w)
		if o, dup := seen[b]; dup {
			return nil, fmt.Errorf("wacz: %s and %s have the same name; archive/ holds files by name", o, w)
		}
		seen[b] = w
	}
	inputs := fileInputs(warcs)
	if err := checkInputNames(inputs, opts); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(out, ".wacz") {
		return nil, fmt.Errorf("wacz: %s: the output's name must end in .wacz", out)
	}
	opts = opts.withDefaults()
	tmpBase := opts.TempDir
	if tmpBase == "" {
		tmpBase = filepath.Dir(out)
	}
	// What a writer of the same output killed earlier left behind (one
	// writer per output file).
	if err := fsutil.RemoveStaleTemps(out); err != nil {
		return nil, fmt.Errorf("wacz: %w", err)
	}
	workPrefix := "." + filepath.Base(out) + ".work-"
	if ents, err := os.ReadDir(tmpBase); err == nil {
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), workPrefix) {
				os.RemoveAll(filepath.Join(tmpBase, e.Name()))
			}
		}
	}
	var res *Result
	err := fsutil.WriteFileAtomic(out, 0o644, func(w io.Writer) error {
		var err error
		res, err = createIn(ctx, w, tmpBase, workPrefix, inputs, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// CreateTo writes a WACZ of inputs to w as it builds it, in one pass
// over the output: nothing of the zip is kept but what w keeps. Each
// input is read twice (Input), the index's sorted runs and the small
// generated members (index, pages, datapackage) are staged in a
// temporary directory under opts.TempDir ("": the system's), so memory
// stays flat as the input grows. An error after the first byte leaves w
// with an incomplete zip: the caller must discard it.
func CreateTo(ctx context.Context, w io.Writer, inputs []Input, opts Options) (*Result, error) {
	if err := checkInputNames(inputs, opts); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	tmpBase := opts.TempDir
	if tmpBase == "" {
		tmpBase = os.TempDir()
	}
	return createIn(ctx, w, tmpBase, "wayside-wacz-work-", inputs, opts)
}

// createIn writes the zip to w, with a work directory under tmpBase.
func createIn(ctx context.Context, w io.Writer, tmpBase, workPrefix string, inputs []Input, opts Options) (*Result, error) {
	work, err := os.MkdirTemp(tmpBase, workPrefix)
	if err != nil {
		return nil, fmt.Errorf("wacz: %w", err)
	}
	defer os.RemoveAll(work)
	c := &creator{opts: opts, work: work, res: &Result{}}
	c.pages, err = newPageSet(work, opts.Seeds)
	if err != nil {
		return nil, err
	}
	defer c.pages.close()
	c.sorter = cdxj.NewSorter(cdxj.SortOptions{MaxMemory: opts.SortMemory, TempDir: work, Unique: true})
	defer c.sorter.Close()
	cw := &iox.CountWriter{W: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	c.zw = zip.NewWriter(bw)
	if err := c.write(ctx, inputs); err != nil {
		return nil, err
	}
	if err := c.zw.Close(); err != nil {
		return nil, fmt.Errorf("wacz: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	c.res.Bytes = cw.N
	return c.res, nil
}

type creator struct {
	opts   Options
	work   string
	zw     *zip.Writer
	sorter *cdxj.Sorter
	pages  *pageSet
	res    *Result
	staged int
}

func (c *creator) write(ctx context.Context, inputs []Input) error {
	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.addWARC(ctx, in); err != nil {
			return err
		}
		c.res.WARCs++
		c.opts.Log.Debug("wacz: WARC added", "file", in.Name)
		// After each WARC member: crash tests kill the process here.
		if err := failpoint.Inject("wacz.warc-added"); err != nil {
			return err
		}
	}
	if err := c.writeIndex(); err != nil {
		return err
	}
	if err := c.writePages(); err != nil {
		return err
	}
	for _, x := range c.opts.Extras {
		if err := c.addFile(extrasDir+x.Name, x.File); err != nil {
			return err
		}
	}
	return c.writeDatapackage()
}

// addWARC indexes the WARC file in, finds its pages and hashes it in one
// read, then copies it into archive/ from a second read (which must give
// the same bytes).
func (c *creator) addWARC(ctx context.Context, in Input) error {
	f, err := in.Open()
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", in.Name, err)
	}
	defer f.Close()
	name, p := in.Name, in.Name
	if nf, ok := f.(*os.File); ok {
		p = nf.Name()
	}
	sum := newSums()
	tee := io.TeeReader(f, sum)
	r := warcio.NewReader(tee, p, warcio.Options{KeepPayload: titleBytes})
	var l cdxj.Line
	var buf []byte
	records, problems := c.res.Records, len(c.res.Problems)
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			c.res.Problems = append(c.res.Problems, err)
			if errors.Is(err, warcio.ErrTruncated) {
				break
			}
			continue
		}
		c.res.Records++
		if !cdxj.Indexed(rec, false) {
			continue
		}
		if rec.Length == 0 {
			c.res.Problems = append(c.res.Problems, fmt.Errorf("wacz: %s offset %d: record shares a gzip member with another record; it cannot be located by offset and is not indexed", p, rec.Offset))
			continue
		}
		l = cdxj.FromCapture(rec.Capture(name))
		if l.IsRevisit() && l.Status == 304 {
			// wabac.js (ReplayWeb.page) takes a revisit line with a 3xx
			// status for the revisit of a redirect and serves it as it
			// is, an empty 304, instead of the original: see the
			// package documentation.
			l.Status = 0
		}
		buf = l.Format(buf[:0])
		if err := c.sorter.Add(buf); err != nil {
			return fmt.Errorf("wacz: index: %w", err)
		}
		if err := c.pages.consider(rec, name); err != nil {
			return err
		}
	}
	if c.res.Records == records && len(c.res.Problems) > problems {
		return fmt.Errorf("wacz: no WARC record could be read: %w", c.res.Problems[problems])
	}
	// Hash what the reader left unread (nothing after a clean end).
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return fmt.Errorf("wacz: %s: %w", p, err)
	}
	if nf, ok := f.(*os.File); ok {
		if fi, err := nf.Stat(); err == nil && fi.Mode().IsRegular() && sum.n != fi.Size() {
			return fmt.Errorf("wacz: %s: read %d bytes of %d: the file changed while read", p, sum.n, fi.Size())
		}
	}
	f2, err := in.Open()
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", in.Name, err)
	}
	defer f2.Close()
	return c.addStored(archiveDir+name, f2, sum)
}

// sums hashes a member's bytes for the zip (CRC-32) and datapackage.json
// (SHA-256).
type sums struct {
	crc hash.Hash32
	sha hash.Hash
	n   int64
}

func newSums() *sums { return &sums{crc: crc32.NewIEEE(), sha: sha256.New()} }

func (s *sums) Write(p []byte) (int, error) {
	s.crc.Write(p)
	s.sha.Write(p)
	s.n += int64(len(p))
	return len(p), nil
}

func (s *sums) hash() string { return "sha256:" + hex.EncodeToString(s.sha.Sum(nil)) }

// addStored writes a member whose bytes (read from r) were hashed into s,
// stored, with its sizes and CRC in the local header; r is read again and
// must give the same bytes.
func (c *creator) addStored(name string, r io.Reader, s *sums) error {
	hdr := &zip.FileHeader{
		Name:               name,
		Method:             zip.Store,
		CRC32:              s.crc.Sum32(),
		CompressedSize64:   uint64(s.n),
		UncompressedSize64: uint64(s.n),
		Modified:           c.opts.Created,
	}
	// CreateRaw, unlike CreateHeader, does not fill in the MS-DOS time
	// fields from Modified.
	hdr.SetModTime(c.opts.Created) //nolint:staticcheck // the only setter of the MS-DOS fields
	w, err := c.zw.CreateRaw(hdr)
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", name, err)
	}
	crc := crc32.NewIEEE()
	n, err := io.Copy(io.MultiWriter(w, crc), io.LimitReader(r, s.n+1))
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", name, err)
	}
	if n != s.n || crc.Sum32() != hdr.CRC32 {
		return fmt.Errorf("wacz: %s: its source changed while it was copied", name)
	}
	c.res.Resources = append(c.res.Resources, Resource{Name: path.Base(name), Path: name, Hash: s.hash(), Bytes: s.n})
	return nil
}

// addFile copies the local file p into the member name.
func (c *creator) addFile(name, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer f.Close()
	s := newSums()
	if _, err := io.Copy(s, f); err != nil {
		return fmt.Errorf("wacz: %s: %w", p, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	return c.addStored(name, f, s)
}

// stage writes a generated member through write into a temporary file,
// hashing it, then adds it to the zip.
func (c *creator) stage(name string, write func(w io.Writer) error) error {
	c.staged++
	f, err := os.CreateTemp(c.work, "member-")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer f.Close()
	s := newSums()
	bw := bufio.NewWriterSize(io.MultiWriter(f, s), 1<<16)
	if err := write(bw); err != nil {
		return fmt.Errorf("wacz: %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("wacz: %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	return c.addStored(name, f, s)
}

func (c *creator) writeIndex() error {
	c.res.IndexLines = c.sorter.Len()
	f, err := os.CreateTemp(c.work, "index-")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<16)
	size, err := c.sorter.WriteTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("wacz: index: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	if c.opts.ZipNumThreshold < 0 || size <= c.opts.ZipNumThreshold {
		return c.stage(IndexCDXJPath, func(w io.Writer) error {
			_, err := io.Copy(w, f)
			return err
		})
	}
	c.res.ZipNum = true
	return c.writeZipNum(f)
}

func (c *creator) writePages() error {
	c.res.Pages, c.res.ExtraPages = c.pages.counts()
	if err := c.stage(PagesPath, func(w io.Writer) error { return c.pages.writeMain(w) }); err != nil {
		return err
	}
	if c.res.ExtraPages == 0 {
		return nil
	}
	return c.stage(ExtraPagesPath, func(w io.Writer) error { return c.pages.writeExtra(w) })
}

func (c *creator) writeDatapackage() error {
	res := append([]Resource(nil), c.res.Resources...)
	sort.SliceStable(res, func(i, j int) bool { return res[i].Path < res[j].Path })
	dp := Datapackage{
		Profile:     "data-package",
		WACZVersion: Version,
		Title:       c.opts.Title,
		Description: c.opts.Description,
		Created:     c.opts.Created.Format(time.RFC3339),
		Software:    c.opts.Software,
		Resources:   res,
	}
	if c.pages.main.url != "" {
		dp.MainPageURL, dp.MainPageDate = c.pages.main.url, c.pages.main.ts
	}
	b, err := json.MarshalIndent(dp, "", "  ")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	if err := c.stage(DatapackagePath, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	dg := DigestFile{Path: DatapackagePath, Hash: "sha256:" + hex.EncodeToString(sum[:])}
	if c.opts.Key != nil {
		sd, err := Sign(c.opts.Key, dg.Hash, c.opts.Created, c.opts.Software)
		if err != nil {
			return err
		}
		dg.SignedData = sd
		c.res.Signed = true
	}
	db, err := json.MarshalIndent(dg, "", "  ")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	// datapackage-digest.json is not a resource of datapackage.json (it
	// holds datapackage.json's hash): write it without listing it.
	n := len(c.res.Resources)
	if err := c.stage(DatapackageDigestPath, func(w io.Writer) error { _, err := w.Write(db); return err }); err != nil {
		return err
	}
	c.res.Resources = c.res.Resources[:n]
	return nil
}
