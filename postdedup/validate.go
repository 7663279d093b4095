package postdedup

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/internal/libdeflate"
	"github.com/wayside-archive/wayside/internal/mapfile"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// ErrInvalid is wrapped by the error Validate returns when an output does
// not hold everything its input held.
var ErrInvalid = errors.New("output not valid")

// ValidateOptions configure Validate.
type ValidateOptions struct {
	// Deep also re-reads every output file completely with warcio
	// (recomputing every payload digest) and compares each record with
	// the input manifest, instead of relying on byte equality of the
	// copied ranges alone.
	Deep bool
	// OriginalDirs are searched for originals in other collections.
	OriginalDirs []string
	Jobs         int
	// MaxMemory bounds the stage's buffers as ManifestOptions.MaxMemory
	// does: each sort holds a 32nd of it in memory (sortMemory).
	MaxMemory int64
	TempDir   string
	// IndependentInflate frames each input on its own for the framing
	// check (framescan.File, inflating it again) instead of using the
	// framed record the manifest scan made from the members it inflated.
	IndependentInflate bool
}

// ValidateStats summarises Validate.
type ValidateStats struct {
	Files int `json:"files"`
	// Revisits checked (each against its copy and its original).
	Revisits int `json:"revisits"`
	// CopiedBytes compared byte for byte between input and output.
	CopiedBytes int64 `json:"copied_bytes"`
	// Originals checked: full records, not rewritten, same digest.
	Originals int `json:"originals"`
	External  int `json:"external_originals"`
	// Clusters holding revisits (each keeps a full copy).
	Clusters int `json:"clusters"`
	// Records read back in deep mode, and the input's record count.
	Records      int   `json:"records,omitempty"`
	InputRecords int   `json:"input_records"`
	InputBytes   int64 `json:"input_bytes"`
	OutputBytes  int64 `json:"output_bytes"`
	Deep         bool  `json:"deep"`
	// Problems lists what failed (at most maxListed; Failed counts all).
	Problems []string `json:"problems,omitempty"`
	Failed   int      `json:"failed"`
}

func (s *ValidateStats) fail(format string, a ...any) {
	s.Failed++
	if len(s.Problems) < maxListed {
		s.Problems = append(s.Problems, fmt.Sprintf(format, a...))
	}
}

// Stamp is written by a successful Validate: what was validated, so
// Replace can check nothing changed since.
type Stamp struct {
	Format int           `json:"format"` // stampFormat
	Time   time.Time     `json:"time"`
	Deep   bool          `json:"deep"`
	Files  []StampedFile `json:"files"`
}

// StampedFile is one validated output and the input it replaces.
type StampedFile struct {
	Input      string    `json:"input"`
	InputSize  int64     `json:"input_size"`
	InputMTime time.Time `json:"input_mtime"`
	Output     string    `json:"output"`
	OutputSize int64     `json:"output_size"`
	// OutputXXH64 is the XXH64 checksum of the output (hex): it tells
	// Replace whether the output is still what was validated. It is no
	// fixity record (the bytes were compared with the input instead).
	OutputXXH64 string `json:"output_xxh64"`
	CDXJ        string `json:"cdxj"`
}

// stampFormat is the format of validation stamps written now (format 1
// checked outputs with SHA-256).
const stampFormat = 2

func stampPath(outDir string) string { return filepath.Join(outDir, StateDir, "validated.json") }

// fileCheck is the per-file result of Validate.
type fileCheck struct {
	stamp StampedFile
	st    ValidateStats
}

// Validate checks the outputs in outDir against the input manifest and
// the plan:
//   - every output file is exactly its layout: the input's bytes copied in
//     order (compared byte for byte with the input as it is now) with each
//     copy of the plan, and nothing else, replaced by one revisit record;
//   - every revisit reads back as a valid WARC record of its copy's
//     version: identical-payload-digest profile, the copy's record ID,
//     date, target URI and HTTP head, the original's payload digest,
//     record ID, URI and date, WARC-Truncated: length, correct block digest;
//   - every original a revisit refers to is in the output as a full,
//     verified record that was not rewritten, with the copy's digest (so
//     no cluster is left without a full copy);
//   - the CDXJ beside each output is sorted and complete;
//   - with Deep, every output record is read back and compared with the
//     input manifest, and record counts are equal.
//
// On success it writes the stamp Replace relies on.
func Validate(ctx context.Context, manifests, plans []string, outDir string, opts ValidateOptions) (ValidateStats, error) {
	st := ValidateStats{Deep: opts.Deep}
	ms, err := readManifests(manifests)
	if err != nil {
		return st, err
	}
	files := unionFiles(ms)
	for _, m := range ms {
		m.Close()
	}
	stamp := Stamp{Format: stampFormat, Time: time.Now().UTC(), Deep: opts.Deep}
	err = forEachFile(ctx, files, manifests, plans, opts.Deep, opts.Jobs, opts.MaxMemory, opts.TempDir,
		func(ctx context.Context, f FileInfo, copies *fileCopies, entries *fileEntries) (any, error) {
			return validateFile(ctx, f, copies, entries, outDir, opts)
		},
		func(v any) {
			fc := v.(fileCheck)
			st.Files++
			st.Revisits += fc.st.Revisits
			st.CopiedBytes += fc.st.CopiedBytes
			st.Records += fc.st.Records
			st.InputRecords += fc.st.InputRecords
			st.InputBytes += fc.st.InputBytes
			st.OutputBytes += fc.st.OutputBytes
			st.Failed += fc.st.Failed
			for _, p := range fc.st.Problems {
				if len(st.Problems) < maxListed {
					st.Problems = append(st.Problems, p)
				}
			}
			stamp.Files = append(stamp.Files, fc.stamp)
		})
	if err != nil {
		return st, err
	}
	if err := checkOriginals(ctx, manifests, plans, opts, &st); err != nil {
		return st, err
	}
	if st.Failed > 0 {
		return st, fmt.Errorf("postdedup: validate: %w: %d problems, first: %s", ErrInvalid, st.Failed, st.Problems[0])
	}
	sb, _ := json.MarshalIndent(stamp, "", " ")
	if err := fsutil.WriteFileAtomic(stampPath(outDir), 0o644, func(w io.Writer) error { _, err := w.Write(sb); return err }); err != nil {
		return st, fmt.Errorf("postdedup: validate: %w", err)
	}
	return st, nil
}

func readLayout(outDir, name string) (Layout, error) {
	var l Layout
	b, err := os.ReadFile(layoutPath(outDir, name))
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("layout %s: %v", layoutPath(outDir, name), err)
	}
	return l, nil
}

// validateFile checks one output file against its input and layout.
func validateFile(ctx context.Context, f FileInfo, copies *fileCopies, entries *fileEntries, outDir string, opts ValidateOptions) (fileCheck, error) {
	name := filepath.Base(f.Path)
	fc := fileCheck{}
	st := &fc.st
	st.InputRecords, st.InputBytes = f.Records, f.Size
	outPath := filepath.Join(outDir, name)
	l, err := readLayout(outDir, name)
	if err != nil {
		st.fail("%s: no layout: %v", outPath, err)
		return fc, nil
	}
	in, err := os.Open(f.Path)
	if err != nil {
		st.fail("input %v", err)
		return fc, nil
	}
	defer in.Close()
	out, err := os.Open(outPath)
	if err != nil {
		st.fail("output %v", err)
		return fc, nil
	}
	defer out.Close()
	ist, _ := in.Stat()
	ost, _ := out.Stat()
	if ist.Size() != f.Size || !ist.ModTime().UTC().Equal(f.ModTime) || l.InputSize != f.Size || l.Input != f.Path {
		st.fail("%s: the input changed since the manifest was written (or the layout is for another input)", f.Path)
		return fc, nil
	}
	if ost.Size() != l.OutputSize {
		st.fail("%s: %d bytes, its layout says %d", outPath, ost.Size(), l.OutputSize)
		return fc, nil
	}
	st.OutputBytes = ost.Size()
	// The segments tile the output and the input, in order.
	var inPos, outPos int64
	ci := 0
	copies.rewind()
	for i, s := range l.Segments {
		if s.In != inPos || s.Out != outPos || s.InLen < 0 || s.OutLen < 0 || !s.Revisit && s.InLen != s.OutLen {
			st.fail("%s: layout segment %d does not continue the previous one", outPath, i)
			return fc, nil
		}
		if s.Revisit {
			if off, n, ok := copies.nextSpan(); !ok || off != s.In || n != s.InLen {
				if err := copies.failed(); err != nil {
					return fc, err
				}
				st.fail("%s: revisit at %d replaces input offset %d, which the plan does not rewrite", outPath, s.Out, s.In)
				return fc, nil
			}
			ci++
		}
		inPos, outPos = inPos+s.InLen, outPos+s.OutLen
	}
	if inPos != f.Size || outPos != ost.Size() || ci != copies.len() {
		st.fail("%s: layout covers %d of %d input and %d of %d output bytes, %d of %d planned copies", outPath, inPos, f.Size, outPos, ost.Size(), ci, copies.len())
		return fc, nil
	}
	// Byte comparison of copied ranges and revisit checks, hashing the
	// output as it is read.
	sum, err := compareMapped(ctx, in, out, l, copies, f, outPath, st)
	if err != nil {
		if errors.Is(err, mapfile.ErrFault) {
			st.fail("%s: changed while it was validated: %v", outPath, err)
			return fc, nil
		}
		return fc, err
	}
	checkCDXJ(filepath.Join(outDir, l.CDXJ), l.CDXJLines, st)
	checkFraming(ctx, f, copies, opts.IndependentInflate, st)
	if err := copies.failed(); err != nil {
		return fc, err
	}
	if opts.Deep {
		deepCheck(ctx, f, l, copies, entries, outPath, st)
		if err := entries.failed(); err != nil {
			return fc, err
		}
	}
	fc.stamp = StampedFile{Input: f.Path, InputSize: f.Size, InputMTime: f.ModTime, Output: name, OutputSize: ost.Size(),
		OutputXXH64: sum, CDXJ: l.CDXJ}
	return fc, nil
}

// compareMapped compares every copied range of the output with the input
// and checks every revisit, reading both files mapped (no copies), and
// returns the output's checksum. Problems go to st; a file truncated
// while it is read is an error wrapping mapfile.ErrFault.
func compareMapped(ctx context.Context, in, out *os.File, l Layout, copies *fileCopies, f FileInfo, outPath string, st *ValidateStats) (sum string, err error) {
	im, err := mapfile.Map(in)
	if err != nil {
		return "", fmt.Errorf("postdedup: validate: %w", err)
	}
	defer im.Close()
	om, err := mapfile.Map(out)
	if err != nil {
		return "", fmt.Errorf("postdedup: validate: %w", err)
	}
	defer om.Close()
	defer mapfile.Recover(&err, mapfile.Guard(), im, om)
	ib, ob := im.Bytes(), om.Bytes()
	if int64(len(ib)) != f.Size || int64(len(ob)) != l.OutputSize {
		st.fail("%s or %s changed size while it was validated", f.Path, outPath)
		return "", nil
	}
	name := filepath.Base(f.Path)
	h := xxhash.New()
	var rc revisitChecker
	copies.rewind()
	for _, s := range l.Segments {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		o := ob[s.Out : s.Out+s.OutLen]
		if s.Revisit {
			h.Write(o)
			c := copies.next()
			if c == nil { // the layout check passed them: a read error
				return "", copies.failed()
			}
			if msg := rc.check(o, f.Compressed, name, c); msg != "" {
				st.fail("%s offset %d (revisit of %s offset %d): %s", outPath, s.Out, f.Path, c.Offset, msg)
			}
			st.Revisits++
			continue
		}
		i := ib[s.In : s.In+s.InLen]
		// Hashed and compared a stretch at a time, so that the output's
		// bytes are read from memory once (the compare finds them in the
		// cache the hash brought them into).
		same := len(i) == len(o)
		for k := 0; same && k < len(o); k += compareStep {
			e := min(k+compareStep, len(o))
			h.Write(o[k:e])
			same = bytes.Equal(i[k:e], o[k:e])
		}
		if !same {
			at := int64(0)
			for at < s.InLen && i[at] == o[at] {
				at++
			}
			st.fail("%s offset %d: differs from %s offset %d, which it must copy", outPath, s.Out+at, f.Path, s.In+at)
			return "", nil
		}
		st.CopiedBytes += s.InLen
		im.Release(s.In + s.InLen)
		om.Release(s.Out + s.OutLen)
	}
	return strconv.FormatUint(h.Sum64(), 16), nil
}

// compareStep is how many bytes of a copied range compareMapped hashes
// and compares at a time (well within a core's L2 cache).
const compareStep = 64 << 10

// revisitChecker reads revisits back, one after the other, reusing its
// inflater, buffers and reader.
type revisitChecker struct {
	zr    gzip.Reader
	br    bytes.Reader
	plain bytes.Buffer
	rd    *warcio.Reader
	ld    *libdeflate.Decompressor
	out   []byte
}

// maxFastRevisit bounds the revisit inflated in one call (inflateFast):
// a revisit is its WARC header and the copy's HTTP head.
const maxFastRevisit = 1 << 20

// inflateFast inflates a revisit's gzip member in one libdeflate call
// (klauspost/compress's streaming reader, set up for every member, cost
// several times as much for members this small). It takes only what
// Wayside's encoder writes — a plain 10-byte gzip header (no optional
// fields: libdeflate does not check a header CRC) and one member that is
// all of member, its CRC-32 and ISIZE checked by libdeflate — and
// returns ok false for anything else, which the streaming reader then
// reads (and names what is wrong). The encoder is klauspost/compress's,
// so the bytes are read back by an inflater other than the writer's.
func (k *revisitChecker) inflateFast(member []byte) ([]byte, bool) {
	if !libdeflate.Available() || len(member) < 18 || member[0] != 0x1f || member[1] != 0x8b || member[2] != 8 || member[3] != 0 {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(member[len(member)-4:]))
	if n > maxFastRevisit {
		return nil, false
	}
	if k.ld == nil {
		k.ld = libdeflate.New()
	}
	if cap(k.out) < n {
		k.out = make([]byte, n)
	}
	out := k.out[:n]
	in, got, err := k.ld.Gzip(member, out)
	if err != nil || in != len(member) || got != n {
		return nil, false
	}
	return out, true
}

// inflateStream inflates member, which must be exactly one complete gzip
// member, into k.plain with the streaming reader; it returns what is
// wrong, or "".
func (k *revisitChecker) inflateStream(member []byte) string {
	k.br.Reset(member)
	if err := k.zr.Reset(&k.br); err != nil {
		return "not a gzip member: " + err.Error()
	}
	k.zr.Multistream(false)
	k.plain.Reset()
	if _, err := k.plain.ReadFrom(&k.zr); err != nil {
		return "bad gzip member: " + err.Error()
	}
	if k.br.Len() != 0 {
		return "bytes after the revisit's gzip member"
	}
	return ""
}

// check checks one revisit (as stored: a gzip member when the file is
// compressed) against the copy it replaces.
func (k *revisitChecker) check(member []byte, compressed bool, name string, c *Copy) string {
	plain := member
	if compressed {
		p, ok := k.inflateFast(member)
		if !ok {
			if msg := k.inflateStream(member); msg != "" {
				return msg
			}
			p = k.plain.Bytes()
		}
		plain = p
	}
	k.br.Reset(plain)
	opts := warcio.Options{BlockDigest: true, KeepHTTPHead: true}
	if k.rd == nil {
		k.rd = warcio.NewReader(&k.br, name, opts)
	} else {
		k.rd.Reset(&k.br, name, opts)
	}
	r := k.rd
	rec, err := r.Next()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	if _, err := r.Next(); err != io.EOF {
		return "more than one record in the revisit's bytes"
	}
	o := c.Original
	want := [...][2]string{
		{"WARC-Type", "revisit"},
		{"WARC-Record-ID", c.RecordID},
		{"WARC-Target-URI", c.URI},
		{"WARC-Profile", warcio.IdenticalPayloadProfile(c.Version)},
		{"WARC-Payload-Digest", o.Digest},
		{"WARC-Refers-To", o.RecordID},
		{"WARC-Refers-To-Target-URI", o.URI},
		{"WARC-Refers-To-Date", o.DateText},
		{"WARC-Truncated", "length"},
		{}, // WARC-Date, when the copy has one (its last)
	}
	for _, h := range c.Headers {
		if strings.EqualFold(h[0], "WARC-Date") {
			want[len(want)-1] = [2]string{"WARC-Date", h[1]}
		}
	}
	for _, f := range want {
		if f[0] == "" {
			continue
		}
		if got := rec.Header(f[0]); got != f[1] {
			return fmt.Sprintf("%s is %q, want %q", f[0], got, f[1])
		}
	}
	switch {
	case rec.Version != c.Version:
		return fmt.Sprintf("WARC/%s, the copy was WARC/%s", rec.Version, c.Version)
	case len(rec.Anomalies) > 0:
		return "read leniently: " + rec.Anomalies[0]
	case rec.DeclaredBlockDigest == "" || rec.BlockDigest != rec.DeclaredBlockDigest:
		return "block digest " + rec.BlockDigest + " does not match WARC-Block-Digest " + rec.DeclaredBlockDigest
	case rec.HTTP == nil || !bytes.Equal(rec.HTTP.Head, c.Head) || rec.ContentLength != int64(len(c.Head)):
		return "the block is not the copy's HTTP head"
	case rec.PayloadLength != 0:
		return "the revisit holds payload bytes"
	}
	if d, err := digest.Normalize(o.Digest); err != nil || d != o.Digest {
		return "the original's digest " + o.Digest + " is not canonical"
	}
	return ""
}

// checkCDXJ checks the CDXJ beside an output: present, sorted, complete.
func checkCDXJ(path string, lines int, st *ValidateStats) {
	f, err := os.Open(path)
	if err != nil {
		st.fail("CDXJ %v", err)
		return
	}
	defer f.Close()
	n := 0
	var counter lineCounter
	if err := cdxj.Merge(&counter, []cdxj.MergeInput{{Name: path, R: f}}, cdxj.MergeOptions{}); err != nil {
		st.fail("CDXJ %s: %v", path, err)
		return
	}
	n = counter.n
	if n != lines {
		st.fail("CDXJ %s: %d lines, %d expected", path, n, lines)
	}
}

type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// deepCheck reads the whole output back and compares each record with the
// input manifest.
func deepCheck(ctx context.Context, f FileInfo, l Layout, copies *fileCopies, entries *fileEntries, outPath string, st *ValidateStats) {
	r, err := warcio.Open(outPath)
	if err != nil {
		st.fail("%v", err)
		return
	}
	defer r.Close()
	name := filepath.Base(outPath)
	si, problems := 0, 0
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			problems++
			if errors.Is(err, warcio.ErrTruncated) {
				break
			}
			continue
		}
		st.Records++
		for si < len(l.Segments) && rec.Offset >= l.Segments[si].Out+l.Segments[si].OutLen {
			si++
		}
		if si == len(l.Segments) {
			st.fail("%s offset %d: record outside the layout", outPath, rec.Offset)
			return
		}
		s := l.Segments[si]
		c := rec.Capture(name)
		if s.Revisit {
			if rec.Offset != s.Out || rec.Length != s.OutLen || !c.IsRevisit() {
				st.fail("%s offset %d: expected the revisit at %d", outPath, rec.Offset, s.Out)
			}
			continue
		}
		inOff := s.In + rec.Offset - s.Out
		e := entries.peek()
		for ; e != nil && e.Offset < inOff; e = entries.peek() {
			entries.next()
		}
		if e != nil && e.Offset == inOff {
			want := e.Capture
			want.Offset, want.File, want.Dir = rec.Offset, name, ""
			if !reflect.DeepEqual(c, want) {
				st.fail("%s offset %d: record reads back as %+v, the input's (offset %d) was %+v", outPath, rec.Offset, c, inOff, want)
			}
			if ek := e.Key; e.CanBeOriginal() && ek != noKey && (c.DigestMismatch || canonical(c.Digest) != canonical(e.Digest)) {
				st.fail("%s offset %d: payload digest %s, the input's was %s", outPath, rec.Offset, c.Digest, e.Digest)
			}
		} else if cdxj.Indexed(rec, false) {
			st.fail("%s offset %d: indexed record with no input counterpart at %d", outPath, rec.Offset, inOff)
		}
	}
	if st.Records != f.Records || problems != f.Problems {
		st.fail("%s: %d records and %d unreadable ones, the input had %d and %d", outPath, st.Records, problems, f.Records, f.Problems)
	}
}

// checkFraming compares the second framing of the input (package
// framescan, which does not use the reader the manifest was written
// with) with the manifest scan's reading, as the scan recorded it in the
// input's framing record (framing.go; reading the input with the same
// reader again would be no independent check): every record the second
// framing finds was read or lies in a stretch the reader reported
// unreadable, every record read is found, the record holds the records
// and problems the manifest counted, and each revisit replaces exactly
// one framed record: the copy, starting where the copy starts, with no
// other record inside it (a revisit over a copy whose length swallowed
// another record would lose that record). The second framing is the one
// the scan made (the framed record: framescan.Tap, every member it took
// from the reader proved against the member's own CRC-32 and length
// trailer, every other stretch framed by its own walk and inflater), or,
// with independent, when the manifest has none or it cannot be read,
// framescan.File inflating the input on its own.
func checkFraming(ctx context.Context, f FileInfo, copies *fileCopies, independent bool, st *ValidateStats) {
	// framescan.Compare's multiset comparison, streamed: the reads are
	// counted by a 64-bit hash of their keys while the framing record is
	// read, the framed records are matched against the counts as they are
	// read, and only a failure reads the files again to name keys. Memory
	// holds a count per distinct key and an offset per framed record, not
	// the records (~400 bytes each). Two distinct keys hashing alike could
	// hide a disagreement between them; with n records that has a
	// probability of about n²/2^65 (below 10^-8 at 10^6 records).
	counts := map[uint64]int32{}
	count := func(r framescan.Read) { counts[xxhash.Sum64String(r.Key)]++ }
	reading, err := eachFramingRead(f, count)
	if err != nil {
		st.fail("%s: %v", f.Path, err)
		return
	}
	if err := ctx.Err(); err != nil {
		return
	}
	// The framed records by where they start, with their number in file
	// order (a failure reads the record again to name it).
	type start struct {
		at, data int64 // at: the member's offset until the framing says the input is not compressed
		i        int
	}
	var starts []start
	var found []string
	var kb []byte // a framed record's key, hashed as the reads' keys are
	match := func(rec framescan.Record) {
		starts = append(starts, start{rec.Member, rec.DataOffset, len(starts)})
		kb = rec.AppendKey(kb[:0])
		if h := xxhash.Sum64(kb); counts[h] > 0 {
			counts[h]--
			return
		}
		for _, e := range reading.unread {
			if e.Covers(rec) {
				return
			}
		}
		found = append(found, fmt.Sprintf("%s offset %d (uncompressed offset %d): %s record %s found by the second framing, neither read nor reported unreadable", f.Path, rec.Member, rec.DataOffset, rec.Type, rec.Key()))
	}
	// keyOf names the framed record number i.
	var keyOf func(i int) string
	var framed *framescan.Result
	if !independent && f.Framed != "" {
		if framed, err = eachFramedRecord(f, match); err == nil {
			keyOf = func(i int) string {
				key, n := "", 0
				eachFramedRecord(f, func(rec framescan.Record) {
					if n == i {
						key = rec.Key()
					}
					n++
				})
				return key
			}
		} else {
			// Framed on its own below, against fresh counts.
			framed, starts, found = nil, starts[:0], found[:0]
			clear(counts)
			if _, err := eachFramingRead(f, count); err != nil {
				st.fail("%s: %v", f.Path, err)
				return
			}
		}
	}
	if framed == nil {
		if framed, err = framescan.File(f.Path); err != nil {
			st.fail("%s: second framing: %v", f.Path, err)
			return
		}
		// Held in memory whole: the independent framing (or one that
		// stands in for an unreadable framed record) is made here.
		for _, rec := range framed.Records {
			match(rec)
		}
		recs := framed.Records
		keyOf = func(i int) string { return recs[i].Key() }
	}
	if reading.records != f.Records || reading.problems != f.Problems {
		st.fail("%s: the scan's framing record holds %d records and %d unreadable ones, the manifest counted %d and %d", f.Path, reading.records, reading.problems, f.Records, f.Problems)
	}
	for _, d := range found {
		st.fail("%s", d)
	}
	// Reads left over: read, not found; named in the framing record's
	// order, as Compare does.
	left := false
	for _, c := range counts {
		if c > 0 {
			left = true
			break
		}
	}
	if left {
		eachFramingRead(f, func(r framescan.Read) {
			if h := xxhash.Sum64String(r.Key); counts[h] > 0 {
				counts[h]--
				st.fail("%s offset %d (uncompressed offset %d): record %s read, not found by the second framing", f.Path, r.Offset, r.DataOffset, r.Key)
			}
		})
	}
	if !framed.Compressed {
		for i := range starts {
			starts[i].at = starts[i].data
		}
	}
	// Stable: file order within one start, so each copy looks only at
	// the records inside it instead of at every record of the file.
	slices.SortStableFunc(starts, func(a, b start) int { return cmp.Compare(a.at, b.at) })
	copies.rewind()
	for off, length, ok := copies.nextSpan(); ok; off, length, ok = copies.nextSpan() {
		c := Copy{Offset: off, Length: length}
		n := 0
		i, _ := slices.BinarySearchFunc(starts, c.Offset, func(s start, off int64) int { return cmp.Compare(s.at, off) })
		for ; i < len(starts) && starts[i].at < c.Offset+max(c.Length, 1); i++ {
			switch at := starts[i].at; {
			case at == c.Offset:
				n++
			case at > c.Offset && at < c.Offset+c.Length:
				st.fail("%s offset %d: the revisit replacing the record at offset %d (%d bytes) would drop the record %s the second framing finds inside it", f.Path, at, c.Offset, c.Length, keyOf(starts[i].i))
			}
		}
		if n != 1 {
			st.fail("%s offset %d: the second framing finds %d records starting where the rewritten copy starts, want 1", f.Path, c.Offset, n)
		}
	}
}

func canonical(d string) string {
	if c, err := digest.Normalize(d); err == nil {
		return c
	}
	return d
}

// checkOriginals joins the plan with the manifests: every local original
// a revisit refers to is a full record of the input that can be an
// original, with the copy's cluster key and the digest the revisit
// carries, and is not itself rewritten. External originals are read back
// from OriginalDirs.
func checkOriginals(ctx context.Context, manifests, plans []string, opts ValidateOptions, st *ValidateStats) error {
	join := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(opts.MaxMemory, 1), TempDir: opts.TempDir})
	defer join.Close()
	var line []byte
	add := func(path string, off int64, rest ...string) error {
		line = append(line[:0], escapeField(path)...)
		line = append(line, '\t')
		line = appendOffset(line, off)
		for _, r := range rest {
			line = append(line, '\t')
			line = append(line, escapeField(r)...)
		}
		return join.Add(line)
	}
	for _, name := range manifests {
		m, err := OpenManifest(name)
		if err != nil {
			return err
		}
		for {
			raw, err := m.rawLine()
			if err == nil && raw == nil {
				break
			}
			if err == nil {
				// KEY DATE PATH OFFSET ROLE RECORD-ID DIGEST JSON
				f := bytes.SplitN(raw, []byte{'\t'}, manifestPrefixFields+1)
				if len(f) != manifestPrefixFields+1 {
					err = m.errorf("not a manifest line")
				} else {
					line = append(append(append(append(line[:0], f[2]...), '\t'), f[3]...), "\tM\t"...)
					line = append(append(append(append(append(append(line, f[0]...), '\t'), f[5]...), '\t'), f[4]...), '\t')
					line = append(line, f[6]...)
					err = join.Add(line)
				}
			}
			if err != nil {
				m.Close()
				return err
			}
		}
		m.Close()
	}
	pr, err := openPlans(plans)
	if err != nil {
		return err
	}
	defer pr.close()
	keys := map[string]bool{}
	external := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := pr.next()
		if err != nil {
			return err
		}
		if c == nil {
			break
		}
		keys[c.Key] = true
		if err := add(c.Path, c.Offset, "C"); err != nil {
			return err
		}
		o := c.Original
		if o.External {
			k := fmt.Sprintf("%s\t%d", o.File, o.Offset)
			if !external[k] {
				external[k] = true
				checkExternal(ctx, o, opts.OriginalDirs, st)
			}
			continue
		}
		if err := add(o.Path, o.Offset, "O", c.Key, o.RecordID, o.Digest); err != nil {
			return err
		}
	}
	st.Clusters = len(keys)
	pipeR, pipeW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := join.WriteTo(pipeW)
		pipeW.CloseWithError(err)
		done <- err
	}()
	defer func() { pipeR.Close(); <-done }()
	br := bufio.NewReaderSize(pipeR, 256<<10)
	var group [][]string
	var groupKey string
	check := func() {
		var m []string
		rewritten := false
		for _, g := range group {
			switch g[2] {
			case "M":
				m = g
			case "C":
				rewritten = true
			}
		}
		for _, g := range group {
			if g[2] != "O" {
				continue
			}
			st.Originals++
			where := unescapeField(g[0]) + " offset " + strings.TrimLeft(g[1], "0")
			switch {
			case m == nil:
				st.fail("original %s at %s: no such record in the input manifest", g[4], where)
			case rewritten:
				st.fail("original %s at %s is itself rewritten as a revisit", g[4], where)
			case m[5] != "o":
				st.fail("original %s at %s may not be an original", g[4], where)
			case m[3] != g[3] || m[4] != g[4] || m[6] != g[5]:
				st.fail("original at %s is %s with digest %s (key %s); the revisit expects %s with %s (key %s)", where, m[4], m[6], m[3], g[4], g[5], g[3])
			}
		}
	}
	for {
		l, err := br.ReadString('\n')
		if len(l) == 0 {
			if err != nil && err != io.EOF {
				return err
			}
			break
		}
		f := strings.Split(strings.TrimRight(l, "\n"), "\t")
		k := f[0] + "\t" + f[1]
		if k != groupKey && group != nil {
			check()
			group = group[:0]
		}
		groupKey = k
		group = append(group, f)
	}
	if group != nil {
		check()
	}
	return nil
}

// checkExternal reads an original in another collection back, wherever
// its location says it lives (warcfile.Locations: a base name in dirs, a
// WARC file stored in a WACZ, a location URL).
func checkExternal(ctx context.Context, o Original, dirs []string, st *ValidateStats) {
	st.External++
	locs := warcfile.NewLocations(dirs)
	defer locs.Close()
	f, err := locs.Open(ctx, o.File)
	if err != nil {
		st.fail("original %s in another collection: %v", o.RecordID, err)
		return
	}
	defer f.Close()
	rec, err := warcio.ReadAt(f, o.File, o.Offset, o.Length, warcio.Options{})
	if err != nil {
		st.fail("original %s in another collection: %v", o.RecordID, err)
		return
	}
	c := rec.Capture(o.File)
	if rec.RecordID != o.RecordID || !c.Complete() || canonical(c.Digest) != o.Digest {
		st.fail("original %s in another collection: %s offset %d holds %s (complete %v, digest %s)", o.RecordID, o.File, o.Offset, rec.RecordID, c.Complete(), c.Digest)
	}
}
