package postdedup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/internal/mapfile"
	"github.com/wayside-archive/wayside/warcio"
)

// Digest sources of a manifest.
const (
	// SourceHeader clusters records by the payload digest the documented
	// digest rule gives them (wayside.Capture.Digest): the declared
	// WARC-Payload-Digest, checked against the bytes, or the SHA-1 computed
	// over the payload when none is declared.
	SourceHeader = "header"
	// SourceCompute clusters records by a digest recomputed over every
	// payload with the manifest's algorithm (md5, sha1, sha256, sha512).
	SourceCompute = "compute"
)

// manifestFormat is the first header line of every manifest file.
const manifestFormat = "#wayside-dedup-manifest"

// noKey is the cluster key of a record without a usable payload digest.
const noKey = "-"

// Entry is one manifest line: a record a CDXJ index would list (response,
// resource, revisit, metadata, ...), described by the one converter
// (warcio.Record.Capture) plus what post-crawl deduplication needs.
type Entry struct {
	// Key is the cluster key: the payload digest in canonical form
	// ("sha1:BASE32"), "-" when the record has none.
	Key string
	// Path is the input file as named on the command line (cleaned).
	Path string
	wayside.Capture
	// Version is the record's WARC version ("1.0", "1.1", "0.17", ...).
	Version string
	// DateText is the WARC-Date exactly as written (a revisit's
	// WARC-Refers-To-Date repeats it at the same precision).
	DateText string
	// HeadLength is the length of the HTTP head (status line and headers).
	HeadLength int64
	// NotOriginal says why the record may not be an original ("" = it may).
	NotOriginal string
	// NotDuplicate says why the record may not be rewritten as a revisit
	// ("" = it may).
	NotDuplicate string
	// SameAs, when set, names (entryID) an earlier-read record of the same
	// cluster whose payload the scan compared with this one's, byte for
	// byte, and found equal; Headers (the WARC header fields) and Head (the
	// HTTP head) are then kept, so resolve can plan the revisit without
	// reading the record again.
	SameAs  string
	Headers [][2]string
	Head    []byte
}

// entryID names an entry in SameAs.
func entryID(path string, offset int64) string { return fmt.Sprintf("%s#%d", path, offset) }

// CanBeOriginal reports whether revisits may refer to e.
func (e *Entry) CanBeOriginal() bool { return e.NotOriginal == "" }

// CanBeDuplicate reports whether e may be rewritten as a revisit.
func (e *Entry) CanBeDuplicate() bool { return e.NotDuplicate == "" }

// FileInfo describes one input file in a manifest.
type FileInfo struct {
	Path       string    `json:"-"`
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"mtime"`
	Records    int       `json:"records"`    // records read (all types)
	Entries    int       `json:"entries"`    // manifest lines
	Revisits   int       `json:"revisits"`   // revisit records among them
	Compressed bool      `json:"compressed"` // gzip per record
	Problems   int       `json:"problems"`   // unreadable records (#problem lines)
	RawBytes   int64     `json:"raw_bytes"`  // uncompressed bytes read
	// Framing names the framing record the scan wrote of this input
	// (framing.go): relative to the manifest's directory as written,
	// resolved against it when a manifest is read; "" when none was
	// written (ManifestOptions.NoFraming).
	Framing string `json:"framing,omitempty"`
	// Framed names the framed record (framing.go): the second framing of
	// the input, made during the scan from the members its reader
	// inflated (framescan.Tap); relative and resolved as Framing is; ""
	// when none was written (validation then frames the input on its
	// own).
	Framed string `json:"framed,omitempty"`
}

// Problem is a record that could not be read, located by file and offset.
type Problem struct {
	Path    string
	Offset  int64
	Message string
}

func (p Problem) Error() string { return fmt.Sprintf("%s offset %d: %s", p.Path, p.Offset, p.Message) }

// ManifestHeader is the first line of a manifest part.
type ManifestHeader struct {
	Format int    `json:"format"`
	Alg    string `json:"alg"`
	Source string `json:"source"`
	Part   int    `json:"part"`
	Parts  int    `json:"parts"`
	// Sample is the fraction of the digest space kept (assess --sample);
	// 0 or 1 means every record.
	Sample float64 `json:"sample,omitempty"`
}

// ManifestOptions configure WriteManifest.
type ManifestOptions struct {
	// Alg is the digest algorithm of SourceCompute (default sha1).
	Alg string
	// Source is SourceHeader (default) or SourceCompute.
	Source string
	// Parts splits the manifest by digest into this many files (default 1);
	// a digest cluster never spans two parts.
	Parts int
	// Jobs reads this many files in parallel (default 1).
	Jobs int
	// MaxMemory bounds the stage's buffers (default 256 MiB): a 32nd of
	// it holds lines sorted in memory before a run is spilled to TempDir
	// (sortMemory),
	// an eighth is the compare cache unless CompareCache says otherwise,
	// the rest is left for what neither counts (read buffers, entries on
	// their way to the sort, garbage not yet collected). A small cache
	// costs little: payloads it pushes out are read back from the input
	// for a later copy (scanCache), so an eighth was measured to compare
	// every copy of a 4× warcgen WARC during the scan.
	MaxMemory int64
	TempDir   string
	// Sample keeps only this fraction (0 < Sample < 1) of the digest space:
	// whole clusters, so duplicate ratios stay unbiased.
	Sample float64
	// CompareCache bounds the payload bytes kept in memory during the scan
	// so that later copies are compared with an earlier one as they are
	// read (default an eighth of MaxMemory; negative: none). Copies it misses
	// are compared by Resolve, which reads both records again.
	CompareCache int64
	// Progress, when set, is called after each file is read.
	Progress func(done, total int, f FileInfo)
	// NoFraming skips the framing record of each input (framing.go) that
	// Validate compares with a second framing: for a manifest that is
	// never validated (assess).
	NoFraming bool
}

func (o *ManifestOptions) defaults() error {
	if o.Source == "" {
		o.Source = SourceHeader
	}
	if o.Source != SourceHeader && o.Source != SourceCompute {
		return fmt.Errorf("postdedup: digest source %q (want %s or %s)", o.Source, SourceHeader, SourceCompute)
	}
	if o.Alg == "" {
		o.Alg = digest.SHA1
	}
	if a := digest.CanonicalAlg(o.Alg); a == "" {
		return fmt.Errorf("postdedup: digest algorithm %q (want md5, sha1, sha256 or sha512)", o.Alg)
	} else {
		o.Alg = a
	}
	if o.Source == SourceHeader && o.Alg != digest.SHA1 {
		return fmt.Errorf("postdedup: --alg %s needs the compute digest source (header digests are what the records declare)", o.Alg)
	}
	if o.Parts <= 0 {
		o.Parts = 1
	}
	if o.Parts > 256 {
		return fmt.Errorf("postdedup: %d parts (at most 256)", o.Parts)
	}
	if o.Jobs <= 0 {
		o.Jobs = 1
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = 256 << 20
	}
	if o.CompareCache == 0 {
		o.CompareCache = o.MaxMemory / 8
	}
	if o.Sample < 0 || o.Sample > 1 {
		return fmt.Errorf("postdedup: sample %v outside 0-1", o.Sample)
	}
	return nil
}

// ManifestStats summarises WriteManifest.
type ManifestStats struct {
	Files    []FileInfo
	Entries  int
	Problems []Problem
	RawBytes int64
}

// PartName returns the file name of part i of n of a manifest (or plan)
// named base: base itself when n is 1, else base.part-III-of-NNN.
func PartName(base string, i, n int) string {
	if n <= 1 {
		return base
	}
	return fmt.Sprintf("%s.part-%03d-of-%03d", base, i+1, n)
}

// CheckInputs cleans the input paths and refuses a file named twice or a
// directory.
func CheckInputs(paths []string) ([]string, error) {
	seen := map[string]string{}
	out := make([]string, 0, len(paths))
	for _, given := range paths {
		p := filepath.Clean(given)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("postdedup: input %w", err)
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("postdedup: input %s is a directory", p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("postdedup: input %s: %w", p, err)
		}
		if prev, ok := seen[abs]; ok {
			return nil, fmt.Errorf("postdedup: input %s named twice (also as %s)", given, prev)
		}
		seen[abs] = given
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("postdedup: no input files")
	}
	return out, nil
}

// WriteManifest reads the input WARC files (in parallel, opts.Jobs at a
// time) and writes the manifest, sorted by digest, to opts.Parts files
// named PartName(out, i, parts), each atomically. Memory is bounded by
// opts.MaxMemory (the sort's 32nd: sorted runs spill to disk) and
// opts.CompareCache.
func WriteManifest(ctx context.Context, inputs []string, out string, opts ManifestOptions) (st ManifestStats, err error) {
	if err := opts.defaults(); err != nil {
		return ManifestStats{}, err
	}
	sorters := make([]*cdxj.Sorter, opts.Parts)
	for i := range sorters {
		sorters[i] = cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(opts.MaxMemory, opts.Parts), TempDir: opts.TempDir})
		defer sorters[i].Close()
	}
	var buf []byte
	var addErr error
	var framing func(i int) (path, name string)
	if !opts.NoFraming {
		dir := FramingDir(out)
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			// Made by this run: a run that fails leaves nothing behind.
			defer func() {
				if err != nil {
					os.RemoveAll(dir)
				}
			}()
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return st, fmt.Errorf("postdedup: manifest: %w", err)
		}
		framing = func(i int) (string, string) {
			name := framingName(out, i)
			return filepath.Join(filepath.Dir(out), name), name
		}
	}
	err = scanInputs(ctx, inputs, opts, framing, func(e *Entry) {
		if addErr != nil {
			return
		}
		part := partOf(e.Key, opts.Parts)
		buf = e.appendLine(buf[:0])
		addErr = sorters[part].Add(buf)
		st.Entries++
	}, &st)
	if err == nil {
		err = addErr
	}
	if err != nil {
		return st, err
	}
	for i, s := range sorters {
		h := ManifestHeader{Format: lineFormat, Alg: opts.Alg, Source: opts.Source, Part: i, Parts: opts.Parts, Sample: opts.Sample}
		if opts.Source == SourceHeader {
			h.Alg = digest.SHA1
		}
		err := fsutil.WriteFileAtomic(PartName(out, i, opts.Parts), 0o644, func(w io.Writer) error {
			return writeManifestPart(w, h, st, s)
		})
		if err != nil {
			return st, fmt.Errorf("postdedup: manifest: %w", err)
		}
	}
	if !opts.NoFraming {
		removeStaleFraming(out, len(inputs))
	}
	return st, nil
}

// removeStaleFraming removes what the framing directory of the manifest
// out holds besides the framing records of its n inputs: those of an
// earlier manifest of more inputs, temporary files of a killed scan. Best
// effort: a file left behind is named by no manifest.
func removeStaleFraming(out string, n int) {
	dir := FramingDir(out)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	keep := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		keep[filepath.Base(framingName(out, i))] = true
		keep[filepath.Base(framedName(framingName(out, i)))] = true
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func writeManifestPart(w io.Writer, h ManifestHeader, st ManifestStats, s *cdxj.Sorter) error {
	hb, _ := json.Marshal(h)
	fmt.Fprintf(w, "%s\t%s\n", manifestFormat, hb)
	for _, f := range st.Files {
		fb, _ := json.Marshal(f)
		fmt.Fprintf(w, "#file\t%s\t%s\n", escapeField(f.Path), fb)
	}
	for _, p := range st.Problems {
		fmt.Fprintf(w, "#problem\t%s\t%d\t%s\n", escapeField(p.Path), p.Offset, escapeField(p.Message))
	}
	_, err := s.WriteTo(w)
	return err
}

// partOf returns the part a cluster key belongs to: parts split the digest
// space by its first byte.
func partOf(key string, parts int) int {
	if parts <= 1 {
		return 0
	}
	d, err := digest.Parse(key)
	if err != nil || len(d.Sum) == 0 {
		return 0
	}
	return int(d.Sum[0]) * parts / 256
}

// inSample reports whether a key falls in the sampled fraction of the
// digest space.
func inSample(key string, frac float64) bool {
	if frac <= 0 || frac >= 1 {
		return true
	}
	d, err := digest.Parse(key)
	if err != nil || len(d.Sum) < 2 {
		return false
	}
	v := int(d.Sum[0])<<8 | int(d.Sum[1])
	return float64(v) < frac*65536
}

// scanInputs reads every input file, opts.Jobs at a time, and calls emit
// (from one goroutine at a time) with each manifest entry. File
// information and problems are collected in st, in input order. When
// framing is set, the framing record of input i is written to the path
// framing(i) returns, and FileInfo.Framing is the name it returns.
func scanInputs(ctx context.Context, inputs []string, opts ManifestOptions, framing func(i int) (path, name string), emit func(*Entry), st *ManifestStats) error {
	type result struct {
		i        int
		info     FileInfo
		problems []Problem
		err      error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	cache := newScanCache(opts.CompareCache)
	defer cache.close()
	jobs := make(chan int)
	results := make(chan result, len(inputs))
	var wg sync.WaitGroup
	for w := 0; w < min(opts.Jobs, len(inputs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]*Entry, 0, 256)
			flush := func() {
				mu.Lock()
				for _, e := range batch {
					emit(e)
				}
				mu.Unlock()
				batch = batch[:0]
			}
			for i := range jobs {
				add := func(e *Entry) {
					batch = append(batch, e)
					if len(batch) == cap(batch) {
						flush()
					}
				}
				var info FileInfo
				var probs []Problem
				var err error
				if framing == nil {
					info, probs, err = scanFile(ctx, inputs[i], opts, cache, nil, add)
				} else {
					path, name := framing(i)
					fr := &framingRecorder{}
					// The framed record is committed after the framing
					// record, both once the scan succeeded.
					err = fsutil.WriteFileAtomic(framedName(path), 0o644, func(fw io.Writer) error {
						return fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
							var serr error
							fr.w, fr.fw = w, fw
							info, probs, serr = scanFile(ctx, inputs[i], opts, cache, fr, add)
							return serr
						})
					})
					info.Framing, info.Framed = name, framedName(name)
				}
				flush()
				results <- result{i, info, probs, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range inputs {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	files := make([]FileInfo, len(inputs))
	probs := make([][]Problem, len(inputs))
	var first error
	done := 0
	for r := range results {
		if r.err != nil && first == nil {
			first = r.err
			cancel()
		}
		files[r.i], probs[r.i] = r.info, r.problems
		done++
		if opts.Progress != nil && r.err == nil {
			opts.Progress(done, len(inputs), r.info)
		}
	}
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st.Files = files
	for i, f := range files {
		st.RawBytes += f.RawBytes
		st.Problems = append(st.Problems, probs[i]...)
	}
	return nil
}

// scanFile reads one WARC file and calls emit with its entries; with fr,
// it writes the file's framing record there as it reads.
func scanFile(ctx context.Context, path string, opts ManifestOptions, cache *scanCache, fr *framingRecorder, emit func(*Entry)) (FileInfo, []Problem, error) {
	info := FileInfo{Path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return info, nil, fmt.Errorf("postdedup: %w", err)
	}
	info.Size, info.ModTime = fi.Size(), fi.ModTime().UTC()
	var alt hash.Hash
	ropts := warcio.Options{Map: true} // inputs are complete files: inflate straight from the mapping
	var tap *payloadTap
	if cache != nil {
		tap = cache.tap(opts.Source == SourceHeader)
		ropts.Payload, ropts.OnHead, ropts.KeepHTTPHead = tap, tap.head, true
	}
	if opts.Source == SourceCompute && opts.Alg != digest.SHA1 {
		alt, _ = digest.New(opts.Alg)
		if tap != nil {
			ropts.Payload = io.MultiWriter(alt, tap)
		} else {
			ropts.Payload = alt
		}
	}
	var fw *framedWriter
	var ftap *framescan.Tap
	if fr != nil {
		fr.header(info)
		ropts.OnSpan = fr.span
		// The second framing is made as the input is read, from the
		// members the reader inflates (framescan proves each one), its
		// records written as it decides them.
		fw = newFramedWriter(fr.fw, info)
		// Both read one mapping of the input (each through a handle
		// of its own), so its pages are faulted in and released once;
		// the framing reads and frames the bytes on its own.
		m := mapInput(path)
		var tm *mapfile.File
		if m != nil {
			tm = m.Share()
		}
		ftap, err = framescan.NewTapMapped(path, tm, fw.record)
		if err != nil {
			if m != nil {
				m.Close()
			}
			return info, nil, fmt.Errorf("postdedup: %w", err)
		}
		defer ftap.Close()
		ropts.Tap, ropts.Mapping = ftap, m
	}
	r, err := warcio.Open(path, ropts)
	if err != nil {
		return info, nil, fmt.Errorf("postdedup: %w", err)
	}
	defer r.Close()
	info.Compressed = isGzip(path)
	name := cdxj.FileName(path)
	var probs []Problem
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return info, probs, err
			}
		}
		if alt != nil {
			alt.Reset()
		}
		if tap != nil {
			tap.reset()
		}
		rec, err := r.Next()
		info.RawBytes = r.DataOffset()
		if err == io.EOF {
			break
		}
		if err != nil {
			var we *warcio.Error
			if errors.As(err, &we) {
				probs = append(probs, Problem{Path: path, Offset: we.Offset, Message: we.Err.Error()})
				if errors.Is(err, warcio.ErrTruncated) {
					break
				}
				continue
			}
			return info, probs, fmt.Errorf("postdedup: %w", err)
		}
		info.Records++
		if fr != nil {
			fr.record(rec)
		}
		if !cdxj.Indexed(rec, false) {
			continue
		}
		e := newEntry(path, name, rec, opts, alt)
		if e.Key != noKey && !inSample(e.Key, opts.Sample) {
			continue
		}
		info.Entries++
		if e.IsRevisit() {
			info.Revisits++
		}
		if tap != nil {
			tap.finish(e, rec)
		}
		emit(e)
	}
	info.Problems = len(probs)
	if fr != nil {
		if err := fr.end(info.Records, info.Problems); err != nil {
			return info, probs, fmt.Errorf("postdedup: framing record of %s: %w", path, err)
		}
		r.Close() // no more members: the framing goes on alone
		res, err := ftap.Finish()
		if err != nil {
			return info, probs, fmt.Errorf("postdedup: second framing of %s: %w", path, err)
		}
		proved, walked := ftap.Members()
		if err := fw.finish(res, proved, walked); err != nil {
			return info, probs, fmt.Errorf("postdedup: framed record of %s: %w", path, err)
		}
	}
	return info, probs, nil
}

// mapInput maps the file at path, or returns nil when it cannot (its
// readers then map it, or read it, themselves).
func mapInput(path string) *mapfile.File {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close() // the mapping stays
	m, err := mapfile.Map(f)
	if err != nil {
		return nil
	}
	return m
}

func isGzip(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := io.ReadFull(f, b[:])
	return n == 2 && b[0] == 0x1f && b[1] == 0x8b
}

// newEntry describes rec with the one converter and decides what rec may
// be in a cluster.
func newEntry(path, name string, rec *warcio.Record, opts ManifestOptions, alt hash.Hash) *Entry {
	c := rec.Capture(name)
	c.Dir = filepath.Dir(path)
	e := &Entry{Path: path, Capture: c, Version: rec.Version, DateText: strings.TrimSpace(rec.Header("WARC-Date"))}
	if rec.HTTP != nil {
		e.HeadLength = rec.HTTP.HeadLength
	}
	switch {
	case opts.Source == SourceCompute && alt != nil:
		e.Key = digest.FromHash(opts.Alg, alt).String()
	case opts.Source == SourceCompute:
		e.Key = rec.PayloadDigest
	default:
		e.Key = noKey
		if k, err := digest.Normalize(c.Digest); err == nil {
			e.Key = k
		}
	}
	if e.Key == "" {
		e.Key = noKey
	}
	mismatch := c.DigestMismatch
	if !mismatch && c.Type != "revisit" && rec.DeclaredPayloadDigest != "" {
		// The reader checks SHA-1 declarations; others are checked here.
		if d, err := digest.Parse(rec.DeclaredPayloadDigest); err == nil && d.Alg != digest.SHA1 {
			mismatch = !declaredMatches(path, rec, d)
		}
	}
	e.NotOriginal = notOriginal(e, rec, mismatch)
	e.NotDuplicate = e.NotOriginal
	if e.NotDuplicate == "" && rec.Version != "1.0" && rec.Version != "1.1" {
		e.NotDuplicate = codeVersion + ": WARC/" + rec.Version + " record: revisit profiles exist for WARC 1.0 and 1.1 only"
	}
	return e
}

// Reason codes of Entry.NotOriginal and NotDuplicate ("code: detail").
// Codes marked bad input are reported per file and offset.
const (
	codeRevisit   = "revisit"   // already a revisit (bad input: reported)
	codeType      = "type"      // not a response record
	codeMismatch  = "mismatch"  // declared digest not borne out (bad input)
	codeTruncated = "truncated" // WARC-Truncated (bad input)
	codeNoDigest  = "nodigest"  // no usable payload digest (bad input)
	codeNoHTTP    = "nohttp"    // response without an HTTP message (bad input)
	codeShared    = "shared"    // shares a gzip member (bad input)
	codeNoDate    = "nodate"    // no usable WARC-Date (bad input)
	codeNoID      = "noid"      // no WARC-Record-ID (bad input)
	codeLenient   = "lenient"   // read leniently (bad input)
	codeVersion   = "version"   // WARC version without revisit profiles (bad input)
)

// ReasonCode returns the code of a NotOriginal/NotDuplicate reason.
func ReasonCode(reason string) string {
	code, _, _ := strings.Cut(reason, ":")
	return code
}

// IsBadInput reports whether a reason code marks damaged or unusual input,
// which reports list by file and offset.
func IsBadInput(code string) bool {
	switch code {
	case codeType, "":
		return false
	}
	return true
}

// notOriginal returns why a record may not be an original ("" if it may).
// Only complete, verified HTTP responses are originals (and duplicates).
func notOriginal(e *Entry, rec *warcio.Record, mismatch bool) string {
	c := &e.Capture
	switch {
	case c.Type == "revisit":
		return codeRevisit + ": already a revisit record"
	case c.Type != "response":
		return codeType + ": " + c.Type + " record (only HTTP responses are deduplicated)"
	case mismatch:
		return codeMismatch + ": declared payload digest " + rec.DeclaredPayloadDigest + " does not match the payload"
	case c.Truncated != "":
		return codeTruncated + ": WARC-Truncated: " + c.Truncated
	case e.Key == noKey:
		return codeNoDigest + ": no usable payload digest"
	case rec.HTTP == nil:
		return codeNoHTTP + ": response without an HTTP message"
	case rec.Length == 0:
		return codeShared + ": shares a gzip member with another record"
	case c.Date.IsZero() || e.DateText == "":
		return codeNoDate + ": no usable WARC-Date"
	case c.RecordID == "":
		return codeNoID + ": no WARC-Record-ID"
	case len(rec.Anomalies) > 0:
		return codeLenient + ": read leniently: " + rec.Anomalies[0]
	}
	return ""
}

// declaredMatches re-reads rec to check a declared digest in another
// algorithm than SHA-1 (rare: gowarc v3 writes sha256).
func declaredMatches(path string, rec *warcio.Record, d digest.Digest) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	h, err := digest.New(d.Alg)
	if err != nil {
		return false
	}
	if _, err := warcio.ReadAt(f, filepath.Base(path), rec.Offset, rec.Length, warcio.Options{Payload: h, SkipPayloadDigest: true}); err != nil {
		return false
	}
	return digest.FromHash(d.Alg, h).Equal(d)
}

// ManifestReader reads one manifest part: header lines first (Header,
// Files, Problems), then entries in order.
type ManifestReader struct {
	Name     string
	Header   ManifestHeader
	Files    []FileInfo
	Problems []Problem

	f    *os.File
	br   *bufio.Reader
	line int
	pos  int64 // byte offset of the next line
	peek []byte
	buf  []byte
}

// OpenManifest opens a manifest part and reads its header lines.
func OpenManifest(path string) (*ManifestReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("postdedup: manifest: %w", err)
	}
	m := &ManifestReader{Name: path, f: f, br: bufio.NewReaderSize(f, 256<<10)}
	if err := m.readHeader(); err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

// Close closes the file.
func (m *ManifestReader) Close() error { return m.f.Close() }

func (m *ManifestReader) errorf(format string, a ...any) error {
	return fmt.Errorf("postdedup: manifest %s line %d: %s", m.Name, m.line, fmt.Sprintf(format, a...))
}

// rawLine returns the next line without its newline (nil at EOF).
func (m *ManifestReader) rawLine() ([]byte, error) {
	if m.peek != nil {
		l := m.peek
		m.peek = nil
		return l, nil
	}
	line, err := m.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		m.buf = append(m.buf[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = m.br.ReadSlice('\n')
			m.buf = append(m.buf, line...)
		}
		line = m.buf
	}
	m.pos += int64(len(line))
	if len(line) == 0 && err == io.EOF {
		return nil, nil
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("postdedup: manifest %s: %w", m.Name, err)
	}
	if err == io.EOF {
		return nil, m.errorf("last line has no newline: the manifest is cut short")
	}
	m.line++
	return bytes.TrimRight(line, "\r\n"), nil
}

func (m *ManifestReader) readHeader() error {
	first, err := m.rawLine()
	if err != nil {
		return err
	}
	// The sort puts "#file" and "#problem" lines before the format line.
	sawFormat := false
	for line := first; line != nil; {
		if len(line) == 0 || line[0] != '#' {
			m.peek = append([]byte(nil), line...)
			break
		}
		f := strings.Split(string(line), "\t")
		switch f[0] {
		case manifestFormat:
			if len(f) != 2 || json.Unmarshal([]byte(f[1]), &m.Header) != nil {
				return m.errorf("unsupported manifest header %q", line)
			}
			if m.Header.Format != lineFormat {
				return m.errorf("%v", errOldFormat("manifest", m.Header.Format))
			}
			sawFormat = true
		case "#file":
			var fi FileInfo
			if len(f) != 3 || json.Unmarshal([]byte(f[2]), &fi) != nil {
				return m.errorf("bad #file line")
			}
			fi.Path = unescapeField(f[1])
			if fi.Framing != "" && !filepath.IsAbs(fi.Framing) {
				fi.Framing = filepath.Join(filepath.Dir(m.Name), fi.Framing)
			}
			if fi.Framed != "" && !filepath.IsAbs(fi.Framed) {
				fi.Framed = filepath.Join(filepath.Dir(m.Name), fi.Framed)
			}
			m.Files = append(m.Files, fi)
		case "#problem":
			if len(f) != 4 {
				return m.errorf("bad #problem line")
			}
			off, _ := strconv.ParseInt(f[2], 10, 64)
			m.Problems = append(m.Problems, Problem{Path: unescapeField(f[1]), Offset: off, Message: unescapeField(f[3])})
		default:
			return m.errorf("unknown header line %q", f[0])
		}
		if line, err = m.rawLine(); err != nil {
			return err
		}
	}
	if !sawFormat {
		return m.errorf("not a wayside dedup manifest (no %s line)", manifestFormat)
	}
	return nil
}

// Next returns the next entry, or nil at the end.
func (m *ManifestReader) Next() (*Entry, error) {
	line, err := m.rawLine()
	if err != nil || line == nil {
		return nil, err
	}
	e, err := parseEntry(line)
	if err != nil {
		return nil, m.errorf("%v", err)
	}
	return e, nil
}

// readManifests opens every part and checks they belong together (same
// algorithm and source).
func readManifests(paths []string) ([]*ManifestReader, error) {
	var ms []*ManifestReader
	for _, p := range paths {
		m, err := OpenManifest(p)
		if err != nil {
			for _, o := range ms {
				o.Close()
			}
			return nil, err
		}
		if len(ms) > 0 && (m.Header.Alg != ms[0].Header.Alg || m.Header.Source != ms[0].Header.Source) {
			m.Close()
			for _, o := range ms {
				o.Close()
			}
			return nil, fmt.Errorf("postdedup: manifests %s and %s use different digests (%s/%s, %s/%s)", ms[0].Name, p,
				ms[0].Header.Source, ms[0].Header.Alg, m.Header.Source, m.Header.Alg)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// unionFiles returns the input files the manifests describe, each once
// (every part repeats the list), in the order plans and re-sorted
// manifests list them (pathLess).
func unionFiles(ms []*ManifestReader) []FileInfo {
	seen := map[string]bool{}
	var out []FileInfo
	for _, m := range ms {
		for _, f := range m.Files {
			if !seen[f.Path] {
				seen[f.Path] = true
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return pathLess(out[i].Path, out[j].Path) })
	return out
}
