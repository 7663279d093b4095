package crawl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcio"
)

// RecoverOptions configures Recover.
type RecoverOptions struct {
	Logger *slog.Logger
	// NoCDXJ skips rebuilding the CDXJ file of a recovered WARC file.
	NoCDXJ bool
}

// RecoveryReport describes what Recover found.
type RecoveryReport struct {
	Files []RecoveredFile
	// PartialTails counts files that ended in an incomplete record.
	PartialTails int
}

// RecoveredFile describes one leftover ".open" file.
type RecoveredFile struct {
	Open      string // the ".open" file found
	Final     string // the name it was finalised under ("" if removed)
	Records   int    // complete records kept
	KeptBytes int64  // bytes kept (a record boundary)
	TailBytes int64  // bytes of the incomplete tail cut off
	TailFile  string // where the cut-off tail was saved ("" if none)
	Problem   string // why the tail is incomplete ("" if none)
}

// Recover finalises ".open" WARC files left in dir by a process that died
// while writing them.
//
// Each file is scanned member by member; a record counts as complete when
// its gzip member decompresses cleanly, it is a well-formed WARC record whose
// block has exactly Content-Length bytes followed by CRLF CRLF, and its
// WARC-Block-Digest matches. The file is cut at the end of the last complete
// record before the first incomplete one. Because records are appended in
// order and a record is reported durable only after an fsync that covers it,
// every record a capture event, index entry or revisit can refer to lies
// before that point: the cut never removes a durable record. The bytes cut
// off are not destroyed: they are saved beside the file as
// NAME.warc.gz.partial-tail for inspection, then the file is truncated,
// fsynced and renamed to its final name, and its CDXJ file is rebuilt from
// the records kept. A file with no complete record at all is removed (its
// bytes are in the tail file).
func Recover(dir string, opts RecoverOptions) (RecoveryReport, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep RecoveryReport
	ents, err := os.ReadDir(dir)
	if err != nil {
		return rep, fmt.Errorf("crawl: recover: read %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		switch {
		case e.IsDir():
		case strings.HasSuffix(n, warcGzSuffix+openSuffix):
			names = append(names, n)
		case strings.HasPrefix(n, ".") && strings.Contains(n, ".cdxj.tmp-"):
			// A CDXJ rewrite (sort at close, rebuild) cut short by a
			// crash: the file it was replacing is intact.
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return rep, fmt.Errorf("crawl: recover: remove stale %s: %w", n, err)
			}
		}
	}
	sort.Strings(names)
	for _, name := range names {
		rf, err := recoverFile(dir, name, opts.NoCDXJ)
		if err != nil {
			return rep, err
		}
		if rf.Problem != "" {
			rep.PartialTails++
			log.Warn("crawl: recovered WARC file with an incomplete last record",
				"file", name, "kept_records", rf.Records, "kept_bytes", rf.KeptBytes,
				"tail_bytes", rf.TailBytes, "tail_saved_as", rf.TailFile, "problem", rf.Problem)
		} else {
			log.Info("crawl: recovered WARC file", "file", name, "records", rf.Records)
		}
		rep.Files = append(rep.Files, rf)
	}
	return rep, nil
}

func recoverFile(dir, name string, noCDXJ bool) (RecoveredFile, error) {
	final := strings.TrimSuffix(name, openSuffix)
	rf := RecoveredFile{Open: name}
	path := filepath.Join(dir, name)
	records, end, size, problem, err := scanFile(path)
	if err != nil {
		return rf, err
	}
	rf.Records, rf.KeptBytes, rf.TailBytes = records, end, size-end
	if problem != nil {
		rf.Problem = problem.Error()
	}
	if end < size {
		rf.TailFile = final + ".partial-tail"
		if err := saveTail(path, filepath.Join(dir, rf.TailFile), end); err != nil {
			return rf, err
		}
	}
	if end == 0 {
		if err := os.Remove(path); err != nil {
			return rf, fmt.Errorf("crawl: recover: remove empty %s: %w", path, err)
		}
		if err := fsutil.SyncDir(dir); err != nil {
			return rf, fmt.Errorf("crawl: recover: %w", err)
		}
		return rf, nil
	}
	if _, err := os.Stat(filepath.Join(dir, final)); err == nil {
		return rf, fmt.Errorf("crawl: recover: %s and %s both exist; leaving both for an operator", name, final)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return rf, fmt.Errorf("crawl: recover: %w", err)
	}
	if end < size {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return rf, fmt.Errorf("crawl: recover: truncate %s at %d: %w", path, end, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return rf, fmt.Errorf("crawl: recover: fsync %s: %w", path, err)
	}
	f.Close()
	if !noCDXJ {
		if err := rebuildCDXJ(dir, path, final); err != nil {
			return rf, err
		}
	}
	if err := os.Rename(path, filepath.Join(dir, final)); err != nil {
		return rf, fmt.Errorf("crawl: recover: rename %s: %w", path, err)
	}
	rf.Final = final
	if err := fsutil.SyncDir(dir); err != nil {
		return rf, fmt.Errorf("crawl: recover: %w", err)
	}
	return rf, nil
}

func saveTail(src, dst string, from int64) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("crawl: recover: %w", err)
	}
	defer in.Close()
	if _, err := in.Seek(from, io.SeekStart); err != nil {
		return fmt.Errorf("crawl: recover: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("crawl: recover: save tail: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("crawl: recover: save tail to %s: %w", dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("crawl: recover: save tail to %s: %w", dst, err)
	}
	return out.Close()
}

// rebuildCDXJ writes the CDXJ file of the WARC file at path (to be named
// final), sorted, from its records (read with warcio and converted with
// warcio.Record.Capture, as everywhere), replacing any CDXJ file a crash
// left half-written.
func rebuildCDXJ(dir, path, final string) error {
	r, err := warcio.Open(path, warcio.Options{SkipPayloadDigest: true})
	if err != nil {
		return fmt.Errorf("crawl: recover: %w", err)
	}
	defer r.Close()
	s := cdxj.NewSorter(cdxj.SortOptions{})
	defer s.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The file was cut after its last verified record: nothing
			// unreadable is left in it.
			return fmt.Errorf("crawl: recover: %w", err)
		}
		if !cdxj.HasLine(rec) {
			continue
		}
		l := cdxj.FromCapture(rec.Capture(final))
		if err := s.AddLine(&l); err != nil {
			return fmt.Errorf("crawl: recover: %w", err)
		}
	}
	name := filepath.Join(dir, cdxjName(final))
	if err := fsutil.WriteFileAtomic(name, 0o644, func(w io.Writer) error {
		_, err := s.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("crawl: recover: %w", err)
	}
	return nil
}

// countingReader counts the compressed bytes consumed; it implements
// io.ByteReader so the gzip reader never reads past a member's end.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// scanFile reads path member by member and returns the number of complete
// records, the offset just after the last of them, the file size and why
// scanning stopped early (nil if the whole file is complete).
func scanFile(path string) (records int, end, size int64, problem, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("crawl: recover: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("crawl: recover: %w", err)
	}
	size = fi.Size()
	err = scanMembers(f, func(off, length int64, _ http.Header, _ []byte) {
		records++
		end = off + length
	})
	if err != nil {
		problem = err
	}
	return records, end, size, problem, nil
}

// scanMembers calls fn for each complete, verified record of a .warc.gz
// stream in order and returns the reason scanning stopped before EOF.
// httpHead holds the first bytes of the block (enough for HTTP headers).
func scanMembers(r io.Reader, fn func(off, length int64, hdr http.Header, httpHead []byte)) error {
	cr := &countingReader{r: bufio.NewReaderSize(r, 64<<10)}
	var zr *gzip.Reader
	for {
		off := cr.n
		if _, err := cr.r.Peek(1); err == io.EOF {
			return nil
		}
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(cr)
		} else {
			err = zr.Reset(cr)
		}
		if err != nil {
			return fmt.Errorf("offset %d: gzip header: %w", off, err)
		}
		zr.Multistream(false)
		hdr, head, err := readRecord(bufio.NewReaderSize(zr, 32<<10))
		if err != nil {
			return fmt.Errorf("offset %d: %w", off, err)
		}
		fn(off, cr.n-off, hdr, head)
	}
}

// readRecord reads one whole WARC record from a gzip member and verifies its
// framing and block digest; it requires the member to end right after it.
func readRecord(br *bufio.Reader) (http.Header, []byte, error) {
	hdr, head, _, err := readRecordWith(br, false)
	return hdr, head, err
}

// readRecordBlock is readRecord returning the whole block.
func readRecordBlock(br *bufio.Reader) (http.Header, []byte, []byte, error) {
	return readRecordWith(br, true)
}

func readRecordWith(br *bufio.Reader, whole bool) (http.Header, []byte, []byte, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, nil, nil, fmt.Errorf("record truncated in version line: %w", err)
	}
	if !strings.HasPrefix(line, "WARC/") || !strings.HasSuffix(line, "\r\n") {
		return nil, nil, nil, fmt.Errorf("not a WARC record: %q", strings.TrimSpace(line))
	}
	hdr := http.Header{}
	hdr.Set("X-Warc-Version", strings.TrimSpace(strings.TrimPrefix(line, "WARC/")))
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, nil, nil, fmt.Errorf("record truncated in header: %w", err)
		}
		if l == "\r\n" {
			break
		}
		k, v, ok := strings.Cut(strings.TrimRight(l, "\r\n"), ":")
		if !ok {
			return nil, nil, nil, fmt.Errorf("malformed header line %q", strings.TrimSpace(l))
		}
		hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	cl, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64)
	if err != nil || cl < 0 {
		return nil, nil, nil, fmt.Errorf("bad Content-Length %q", hdr.Get("Content-Length"))
	}
	want, err := digest.Parse(hdr.Get("Warc-Block-Digest"))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bad WARC-Block-Digest: %w", err)
	}
	h, err := digest.New(want.Alg)
	if err != nil {
		return nil, nil, nil, err
	}
	headN := int64(16 << 10)
	if cl < headN || whole {
		headN = cl
	}
	head := make([]byte, headN)
	if _, err := io.ReadFull(br, head); err != nil {
		return nil, nil, nil, fmt.Errorf("block truncated: %w", err)
	}
	h.Write(head)
	if n, err := io.CopyN(h, br, cl-headN); err != nil {
		return nil, nil, nil, fmt.Errorf("block truncated after %d of %d bytes: %w", headN+n, cl, err)
	}
	if !digest.FromHash(want.Alg, h).Equal(want) {
		return nil, nil, nil, errors.New("block digest mismatch")
	}
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[:]) != "\r\n\r\n" {
		return nil, nil, nil, errors.New("record not terminated by CRLF CRLF")
	}
	if n, err := br.Read(tail[:1]); n != 0 || err != io.EOF {
		if err != nil && err != io.EOF {
			return nil, nil, nil, fmt.Errorf("gzip member: %w", err)
		}
		return nil, nil, nil, errors.New("extra bytes after record in its gzip member")
	}
	return hdr, head[:min(len(head), 16<<10)], head, nil
}
