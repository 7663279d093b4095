package postdedup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcio"
)

// StateDir is the directory, inside the output directory, holding the
// pipeline's own files: manifest, plan, layouts, the validation stamp and
// the replace journal.
const StateDir = ".wayside-dedup"

// RewriteOptions configure Rewrite.
type RewriteOptions struct {
	// Jobs rewrites this many files in parallel (default 1).
	Jobs int
	// CompressionLevel is the gzip level of revisit records (default 6).
	CompressionLevel int
	// MaxMemory bounds the stage's buffers as ManifestOptions.MaxMemory
	// does: the manifests' re-sort holds a 32nd of it in memory, the
	// output CDXJ's sorts a 32nd shared by the jobs (sortMemory); a
	// file's manifest entries and plan copies are spooled to TempDir
	// (entryStream.of, planReader.copiesOf).
	MaxMemory int64
	TempDir   string
	// Progress, when set, is called after each file.
	Progress func(done, total int, l Layout)
}

// RewriteStats summarises Rewrite.
type RewriteStats struct {
	Files       int   `json:"files"`
	Revisits    int   `json:"revisits"`
	InputBytes  int64 `json:"input_bytes"`
	OutputBytes int64 `json:"output_bytes"`
	CDXJLines   int   `json:"cdxj_lines"`
}

// Segment is one piece of an output file: bytes copied from the input, or
// a revisit record replacing the copy at In.
type Segment struct {
	Revisit bool  `json:"revisit,omitempty"`
	In      int64 `json:"in"`
	InLen   int64 `json:"in_len"`
	Out     int64 `json:"out"`
	OutLen  int64 `json:"out_len"`
}

// Layout records how an output file was made from its input; validation
// checks every claim in it against the bytes.
type Layout struct {
	Input       string    `json:"input"`
	InputSize   int64     `json:"input_size"`
	InputMTime  time.Time `json:"input_mtime"`
	Output      string    `json:"output"` // base name in the output directory
	OutputSize  int64     `json:"output_size"`
	CDXJ        string    `json:"cdxj"`
	CDXJLines   int       `json:"cdxj_lines"`
	Revisits    int       `json:"revisits"`
	Segments    []Segment `json:"segments"`
	Compressed  bool      `json:"compressed"`
	SourceFiles int       `json:"-"`
}

func layoutPath(outDir, name string) string {
	return filepath.Join(outDir, StateDir, "layout", name+".json")
}

// Rewrite writes, for every input file the manifests describe, a new file
// of the same name in outDir where the plan's copies are revisit records
// and every other byte is copied unchanged (gzip members as stored), and a
// sorted CDXJ index beside it. Output files are written to temporary
// names (".NAME.tmp-*"), fsynced and renamed: a crash leaves each output
// complete or absent. Inputs are only read; outDir must not hold any
// input.
func Rewrite(ctx context.Context, manifests, plans []string, outDir string, opts RewriteOptions) (RewriteStats, error) {
	var st RewriteStats
	if opts.Jobs <= 0 {
		opts.Jobs = 1
	}
	if opts.CompressionLevel == 0 {
		opts.CompressionLevel = 6
	}
	ms, err := readManifests(manifests)
	if err != nil {
		return st, err
	}
	files := unionFiles(ms)
	for _, m := range ms {
		m.Close()
	}
	if err := checkOutDir(outDir, files); err != nil {
		return st, err
	}
	if err := os.MkdirAll(filepath.Join(outDir, StateDir, "layout"), 0o755); err != nil {
		return st, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	removeTemps(outDir)
	var done int
	err = forEachFile(ctx, files, manifests, plans, true, opts.Jobs, opts.MaxMemory, opts.TempDir,
		func(ctx context.Context, f FileInfo, copies *fileCopies, entries *fileEntries) (any, error) {
			return rewriteFile(ctx, f, copies, entries, outDir, opts)
		},
		func(v any) {
			l := v.(Layout)
			done++
			st.Files++
			st.Revisits += l.Revisits
			st.InputBytes += l.InputSize
			st.OutputBytes += l.OutputSize
			st.CDXJLines += l.CDXJLines
			if opts.Progress != nil {
				opts.Progress(done, len(files), l)
			}
		})
	return st, err
}

// forEachFile runs work on every input file, jobs at a time, handing it
// the file's plan copies and (withEntries) manifest entries, both in
// offset order; collect receives each result, from one goroutine. The
// first error cancels the rest.
func forEachFile(ctx context.Context, files []FileInfo, manifests, plans []string, withEntries bool, jobs int, maxMem int64, tempDir string,
	work func(ctx context.Context, f FileInfo, copies *fileCopies, entries *fileEntries) (any, error), collect func(any)) error {
	if jobs <= 0 {
		jobs = 1
	}
	var ents *entryStream
	if withEntries {
		var err error
		if ents, err = entriesByFile(ctx, manifests, maxMem, tempDir); err != nil {
			return err
		}
		defer ents.close()
	}
	pr, err := openPlans(plans)
	if err != nil {
		return err
	}
	defer pr.close()
	type job struct {
		f       FileInfo
		copies  *fileCopies
		entries *fileEntries
	}
	type result struct {
		v   any
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobc := make(chan job)
	results := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobc {
				v, err := work(ctx, j.f, j.copies, j.entries)
				j.copies.close()
				j.entries.close()
				results <- result{v, err}
			}
		}()
	}
	var dispatchErr error
	go func() {
		defer close(jobc)
		for _, f := range files {
			copies, err := pr.copiesOf(f.Path, tempDir)
			var es *fileEntries
			if err == nil && ents != nil {
				es, err = ents.of(f.Path, tempDir)
			}
			if err != nil {
				copies.close()
				dispatchErr = err
				cancel()
				return
			}
			select {
			case jobc <- job{f, copies, es}:
			case <-ctx.Done():
				copies.close()
				es.close()
				return
			}
		}
		// Nothing may be left: a copy in no input file is a bad plan.
		if c, err := pr.next(); err != nil || c != nil {
			if err == nil {
				err = fmt.Errorf("postdedup: plan names %s offset %d, which is not an input of the manifest", c.Path, c.Offset)
			}
			dispatchErr = err
			cancel()
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var first error
	for r := range results {
		if r.err != nil {
			if first == nil {
				first = r.err
				cancel()
			}
			continue
		}
		collect(r.v)
	}
	if first == nil {
		first = dispatchErr
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// checkOutDir refuses to rewrite in place or into colliding names.
func checkOutDir(outDir string, files []FileInfo) error {
	if outDir == "" {
		return errors.New("postdedup: no output directory")
	}
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return fmt.Errorf("postdedup: %w", err)
	}
	outFI, outErr := os.Stat(outDir) // symlinks resolved: the same directory under another name
	names := map[string]string{}
	for _, f := range files {
		abs, err := filepath.Abs(f.Path)
		if err != nil {
			return fmt.Errorf("postdedup: %w", err)
		}
		inDir, inErr := os.Stat(filepath.Dir(abs))
		if filepath.Dir(abs) == absOut || outErr == nil && inErr == nil && os.SameFile(outFI, inDir) {
			return fmt.Errorf("postdedup: output directory %s holds the input %s: rewrite never writes in place (use --replace after validation)", outDir, f.Path)
		}
		n := filepath.Base(f.Path)
		if prev, ok := names[n]; ok {
			return fmt.Errorf("postdedup: inputs %s and %s have the same name: their outputs would collide", prev, f.Path)
		}
		names[n] = f.Path
	}
	return os.MkdirAll(outDir, 0o755)
}

// removeTemps removes temporary files a killed rewrite left behind.
func removeTemps(outDir string) {
	ents, _ := os.ReadDir(outDir)
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-") {
			os.Remove(filepath.Join(outDir, n))
		}
	}
}

// rewriteFile writes one output file, its layout and its CDXJ.
func rewriteFile(ctx context.Context, fi FileInfo, copies *fileCopies, entries *fileEntries, outDir string, opts RewriteOptions) (Layout, error) {
	name := filepath.Base(fi.Path)
	l := Layout{Input: fi.Path, Output: name, Compressed: fi.Compressed, CDXJ: cdxj.SideFileName(name)}
	in, err := os.Open(fi.Path)
	if err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	if st.Size() != fi.Size || !st.ModTime().UTC().Equal(fi.ModTime) {
		return l, fmt.Errorf("postdedup: rewrite: %s changed since the manifest was written (size %d, modified %s; manifest: %d, %s)",
			fi.Path, st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano), fi.Size, fi.ModTime.Format(time.RFC3339Nano))
	}
	l.InputSize, l.InputMTime = fi.Size, fi.ModTime
	tmp, err := os.CreateTemp(outDir, "."+name+".tmp-*")
	if err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	sorter := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(opts.MaxMemory, opts.Jobs), TempDir: opts.TempDir})
	defer sorter.Close()
	mw, err := warcio.NewMemberWriter(opts.CompressionLevel)
	if err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	enc := &revisitEncoder{mw: mw}
	var pos, out int64
	var buf []byte
	// indexEntries relocates the CDXJ lines of the input records in
	// [pos, end) by the shift out-pos.
	indexEntries := func(end int64) error {
		for e := entries.peek(); e != nil && e.Offset < end; e = entries.peek() {
			entries.next()
			if e.Length == 0 {
				continue // shares a gzip member: not addressable (as cdxj skips it)
			}
			c := e.Capture
			c.File, c.Offset, c.Dir = name, c.Offset-pos+out, ""
			line := cdxj.FromCapture(c)
			buf = line.Format(buf[:0])
			if err := sorter.Add(buf); err != nil {
				return err
			}
			l.CDXJLines++
		}
		return entries.failed()
	}
	copyTo := func(end int64) error {
		if end < pos || end > fi.Size {
			return fmt.Errorf("postdedup: rewrite: %s: plan copy at offset %d overlaps the previous one or lies past the end", fi.Path, end)
		}
		if end == pos {
			return nil
		}
		if err := indexEntries(end); err != nil {
			return err
		}
		if _, err := in.Seek(pos, io.SeekStart); err != nil {
			return fmt.Errorf("postdedup: rewrite: %w", err)
		}
		n, err := io.CopyN(tmp, in, end-pos)
		if err != nil {
			return fmt.Errorf("postdedup: rewrite %s: copy %d bytes at %d: %w", fi.Path, end-pos, pos, err)
		}
		l.Segments = append(l.Segments, Segment{In: pos, InLen: n, Out: out, OutLen: n})
		pos, out = end, out+n
		return failpoint.Inject("postdedup.rewrite-copy")
	}
	copies.rewind()
	for c := copies.next(); c != nil; c = copies.next() {
		if err := ctx.Err(); err != nil {
			return l, err
		}
		if err := copyTo(c.Offset); err != nil {
			return l, err
		}
		plain, member, err := enc.encode(c, fi.Compressed)
		if err != nil {
			return l, err
		}
		capt, err := enc.capture(plain, name, out, int64(len(member)), fi.Compressed)
		if err != nil {
			return l, fmt.Errorf("postdedup: rewrite %s offset %d: the revisit does not read back: %w", fi.Path, c.Offset, err)
		}
		if _, err := tmp.Write(member); err != nil {
			return l, fmt.Errorf("postdedup: rewrite: %w", err)
		}
		// The copy's own index line is replaced by the revisit's.
		for e := entries.peek(); e != nil && e.Offset <= c.Offset; e = entries.peek() {
			entries.next()
		}
		if err := entries.failed(); err != nil {
			return l, err
		}
		line := cdxj.FromCapture(capt)
		if err := sorter.Add(line.Format(buf[:0])); err != nil {
			return l, err
		}
		l.CDXJLines++
		l.Segments = append(l.Segments, Segment{Revisit: true, In: c.Offset, InLen: c.Length, Out: out, OutLen: int64(len(member))})
		l.Revisits++
		pos, out = c.Offset+c.Length, out+int64(len(member))
		if err := failpoint.Inject("postdedup.rewrite-revisit"); err != nil {
			return l, err
		}
	}
	if err := copies.failed(); err != nil {
		return l, err
	}
	if err := copyTo(fi.Size); err != nil {
		return l, err
	}
	l.OutputSize = out
	if err := failpoint.Inject("postdedup.rewrite-before-sync"); err != nil {
		return l, err
	}
	if err := tmp.Sync(); err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	lb, _ := json.MarshalIndent(l, "", " ")
	if err := fsutil.WriteFileAtomic(layoutPath(outDir, name), 0o644, func(w io.Writer) error { _, err := w.Write(lb); return err }); err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	if err := failpoint.Inject("postdedup.rewrite-before-rename"); err != nil {
		return l, err
	}
	final := filepath.Join(outDir, name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return l, fmt.Errorf("postdedup: rewrite: %w", err)
	}
	ok = true
	if err := fsutil.SyncDir(outDir); err != nil {
		return l, err
	}
	if err := failpoint.Inject("postdedup.rewrite-before-cdxj"); err != nil {
		return l, err
	}
	// The index is written once the WARC it points into is in place.
	err = fsutil.WriteFileAtomic(filepath.Join(outDir, l.CDXJ), 0o644, func(w io.Writer) error {
		_, err := sorter.WriteTo(w)
		return err
	})
	if err != nil {
		return l, fmt.Errorf("postdedup: rewrite: cdxj: %w", err)
	}
	return l, nil
}

// revisitDrop lists the copy's WARC header fields a revisit replaces.
var revisitDrop = map[string]bool{
	"warc-type": true, "warc-record-id": true, "warc-date": true, "content-length": true,
	"warc-block-digest": true, "warc-payload-digest": true, "warc-truncated": true, "warc-profile": true,
	"warc-refers-to": true, "warc-refers-to-target-uri": true, "warc-refers-to-date": true,
}

// revisitRecord builds the identical-payload-digest revisit replacing c:
// the copy's WARC header fields (target URI, IP address, concurrent and
// warcinfo IDs, ...) and its WARC-Record-ID and WARC-Date as they were, so
// records that refer to it still do; its HTTP status line and headers as
// the block; the original's payload digest, record ID, target URI and date.
func revisitRecord(c *Copy) *warcio.Draft {
	r := &warcio.Draft{Type: "revisit", ID: c.RecordID, Block: c.Head}
	for _, h := range c.Headers {
		if strings.EqualFold(h[0], "WARC-Date") && r.DateText == "" {
			r.DateText = h[1]
		}
		if revisitDrop[strings.ToLower(h[0])] {
			continue
		}
		r.Fields = append(r.Fields, warcio.Field{Name: h[0], Value: h[1]})
	}
	o := c.Original
	r.Fields = append(r.Fields,
		warcio.Field{Name: "WARC-Profile", Value: warcio.IdenticalPayloadProfile(c.Version)},
		warcio.Field{Name: "WARC-Payload-Digest", Value: o.Digest},
		warcio.Field{Name: "WARC-Refers-To", Value: o.RecordID},
		warcio.Field{Name: "WARC-Refers-To-Target-URI", Value: o.URI},
		warcio.Field{Name: "WARC-Refers-To-Date", Value: o.DateText},
		warcio.Field{Name: "WARC-Truncated", Value: "length"},
	)
	return r
}

// revisitEncoder serialises revisits and reads them back, one file's
// after the other: its buffers and reader are reused from one revisit to
// the next (the bytes it returns are valid until its next call).
type revisitEncoder struct {
	mw        *warcio.MemberWriter
	plain, gz bytes.Buffer
	br        bytes.Reader
	rd        *warcio.Reader
}

// encode serialises c's revisit with the one record encoder and returns
// it plain and as stored (one gzip member when the input is compressed).
func (e *revisitEncoder) encode(c *Copy, compressed bool) (plain, stored []byte, err error) {
	e.plain.Reset()
	revisitRecord(c).Marshal(&e.plain, c.Version)
	if !compressed {
		return e.plain.Bytes(), e.plain.Bytes(), nil
	}
	e.gz.Reset()
	if _, err := e.mw.WriteMember(&e.gz, e.plain.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("postdedup: gzip revisit: %w", err)
	}
	return e.plain.Bytes(), e.gz.Bytes(), nil
}

// capture reads an encoded revisit (plain) back with warcio, the one
// converter, as it will sit in the output at offset out with stored
// length n.
func (e *revisitEncoder) capture(plain []byte, name string, out, n int64, compressed bool) (capture, error) {
	e.br.Reset(plain)
	if e.rd == nil {
		e.rd = warcio.NewReader(&e.br, name)
	} else {
		e.rd.Reset(&e.br, name)
	}
	rec, err := e.rd.Next()
	if err != nil {
		return capture{}, err
	}
	if _, err := e.rd.Next(); err != io.EOF {
		return capture{}, errors.New("more than one record")
	}
	if rec.Type != "revisit" || len(rec.Anomalies) > 0 {
		return capture{}, fmt.Errorf("read back as %s with anomalies %v", rec.Type, rec.Anomalies)
	}
	rec.Relocate(out, n, compressed)
	return rec.Capture(name), nil
}

// capture is the wayside.Capture type (kept short in signatures here).
type capture = wayside.Capture

// entryStream yields manifest entries file by file, in (file, offset)
// order: the manifests re-sorted with bounded memory.
type entryStream struct {
	pr   *io.PipeReader
	br   *bufio.Reader
	done chan error
	peek *Entry
	// peekLine is peek's line without its sort prefix.
	peekLine []byte
}

// entriesByFile re-sorts the manifests' entries by input file and offset.
func entriesByFile(ctx context.Context, manifests []string, maxMem int64, tempDir string) (*entryStream, error) {
	s := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(maxMem, 1), TempDir: tempDir})
	var line []byte
	for _, name := range manifests {
		m, err := OpenManifest(name)
		if err != nil {
			s.Close()
			return nil, err
		}
		for n := 0; ; n++ {
			raw, err := m.rawLine()
			if err == nil && raw == nil {
				break
			}
			if err == nil && n%1024 == 0 {
				err = ctx.Err()
			}
			if err == nil {
				// KEY DATE PATH OFFSET JSON → PATH OFFSET KEY DATE PATH OFFSET JSON
				f := bytes.SplitN(raw, []byte{'\t'}, 5)
				if len(f) != 5 {
					err = m.errorf("not a manifest line")
				} else {
					line = append(append(append(append(line[:0], f[2]...), '\t'), f[3]...), '\t')
					line = append(line, raw...)
					err = s.Add(line)
				}
			}
			if err != nil {
				m.Close()
				s.Close()
				return nil, err
			}
		}
		m.Close()
	}
	pr, pw := io.Pipe()
	es := &entryStream{pr: pr, br: bufio.NewReaderSize(pr, 256<<10), done: make(chan error, 1)}
	go func() {
		_, err := s.WriteTo(pw)
		pw.CloseWithError(err)
		es.done <- err
	}()
	return es, nil
}

// of returns the entries of one input file (files in pathLess order),
// spooled to an unnamed temporary file in tempDir: a file's entries are
// read in offset order as its rewrite or validation walks it, so memory
// holds none of them per record whatever the size of the file.
func (s *entryStream) of(path, tempDir string) (*fileEntries, error) {
	spool, err := os.CreateTemp(tempDir, "wayside-entries-*")
	if err != nil {
		return nil, fmt.Errorf("postdedup: manifest re-sort: %w", err)
	}
	os.Remove(spool.Name()) // unnamed: nothing is left behind
	fe := &fileEntries{f: spool}
	bw := bufio.NewWriterSize(spool, 64<<10)
	err = s.spool(path, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		fe.close()
		return nil, fmt.Errorf("postdedup: manifest re-sort: %w", err)
	}
	fe.br = bufio.NewReaderSize(spool, 64<<10)
	return fe, nil
}

// spool writes the entry lines of path (without their sort prefix) to w.
func (s *entryStream) spool(path string, w *bufio.Writer) error {
	if s.peek != nil {
		if s.peek.Path != path {
			if pathLess(s.peek.Path, path) {
				return fmt.Errorf("manifest entry %s offset %d out of order", s.peek.Path, s.peek.Offset)
			}
			return nil
		}
		s.peek = nil
		w.Write(s.peekLine)
	}
	for {
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			big := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = s.br.ReadSlice('\n')
				big = append(big, line...)
			}
			line = big
		}
		if len(line) == 0 {
			if err == io.EOF {
				return nil
			}
			return err
		}
		rest := line
		var lpath string
		// The "path TAB offset TAB" sort prefix.
		for k := 0; k < 2; k++ {
			i := bytes.IndexByte(rest, '\t')
			if i < 0 {
				return errors.New("bad line")
			}
			if k == 0 {
				lpath = unescapeField(string(rest[:i]))
			}
			rest = rest[i+1:]
		}
		if lpath != path {
			e, err := parseEntry(bytes.TrimRight(rest, "\n"))
			if err != nil {
				return err
			}
			if pathLess(e.Path, path) {
				return fmt.Errorf("manifest entry %s offset %d out of order", e.Path, e.Offset)
			}
			s.peek, s.peekLine = e, append(s.peekLine[:0], rest...)
			return nil
		}
		if _, err := w.Write(rest); err != nil {
			return err
		}
	}
}

// fileEntries is one input file's manifest entries in offset order, read
// from their spool one at a time. A nil *fileEntries has none.
type fileEntries struct {
	f    *os.File
	br   *bufio.Reader
	cur  *Entry
	err  error
	done bool
}

// peek returns the next entry without passing it, nil at the end or
// after an error (see err).
func (fe *fileEntries) peek() *Entry {
	if fe == nil || fe.done || fe.err != nil {
		return nil
	}
	if fe.cur == nil {
		line, err := fe.br.ReadBytes('\n')
		if len(line) == 0 {
			if err != io.EOF {
				fe.err = fmt.Errorf("postdedup: manifest re-sort: %w", err)
			}
			fe.done = true
			return nil
		}
		if fe.cur, err = parseEntry(bytes.TrimRight(line, "\n")); err != nil {
			fe.err = fmt.Errorf("postdedup: manifest re-sort: %w", err)
			return nil
		}
	}
	return fe.cur
}

// next passes the entry peek returned.
func (fe *fileEntries) next() { fe.cur = nil }

// failed is the error met reading the entries, if any.
func (fe *fileEntries) failed() error {
	if fe == nil {
		return nil
	}
	return fe.err
}

func (fe *fileEntries) close() {
	if fe != nil {
		fe.f.Close()
	}
}

func (s *entryStream) close() {
	s.pr.Close()
	<-s.done
}
