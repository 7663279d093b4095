package wacz

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// VerifyOptions control Verify.
type VerifyOptions struct {
	Limits Limits
	// AllowUnsigned accepts a WACZ without a signature (its hashes are
	// checked all the same).
	AllowUnsigned bool
	// TrustedKeys, when set, are the only public keys (base64 DER, as
	// signedData carries them) whose signatures are accepted: an anonymous
	// signature proves only that the holder of its key signed.
	TrustedKeys []string
	// MaxProblems stops listing problems after this many (0: 100).
	MaxProblems int
}

// Problem is one thing wrong with a WACZ, in the member it names.
type Problem struct {
	Member string
	Msg    string
}

func (p Problem) String() string { return p.Member + ": " + p.Msg }

// Report is what Verify found.
type Report struct {
	Path       string
	Resources  int
	Bytes      int64 // bytes of resources hashed
	IndexLines int
	Records    int // records read back through the index
	Pages      int
	Signed     bool
	PublicKey  string // of a valid signature
	Software   string
	Problems   []Problem
	// Truncated says more problems were found than listed.
	Truncated bool
}

// OK reports whether nothing was wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

type verifier struct {
	a      *Archive
	opts   VerifyOptions
	rep    *Report
	warcs  map[string]bool // archive/ members
	pages  map[string]string
	rd     warcio.Reader
	prev   []byte
	sorted bool
}

func (v *verifier) problem(member, format string, a ...any) {
	if len(v.rep.Problems) >= v.opts.MaxProblems {
		v.rep.Truncated = true
		return
	}
	v.rep.Problems = append(v.rep.Problems, Problem{Member: member, Msg: fmt.Sprintf(format, a...)})
}

// Verify checks the WACZ at p (see the package documentation). The error
// is for a file that cannot be checked at all (not a complete zip, an
// unsafe member); everything else is a Problem in the Report.
func Verify(ctx context.Context, p string, opts VerifyOptions) (*Report, error) {
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 100
	}
	a, err := Open(p, opts.Limits)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	v := &verifier{a: a, opts: opts, rep: &Report{Path: p}, warcs: map[string]bool{}, pages: map[string]string{}, sorted: true}
	for _, m := range a.WARCs() {
		v.warcs[m] = true
	}
	dp := v.checkDatapackage()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dp != nil {
		if err := v.checkResources(ctx, dp); err != nil {
			return nil, err
		}
	}
	v.readPages(PagesPath)
	v.readPages(ExtraPagesPath)
	if err := v.checkIndexes(ctx); err != nil {
		return nil, err
	}
	for k, where := range v.pages {
		url, ts, _ := strings.Cut(k, " ")
		v.problem(where, "page %s at %s is not in the index", url, ts)
	}
	return v.rep, nil
}

// checkDatapackage checks datapackage-digest.json, its signature and the
// hash of datapackage.json, and returns datapackage.json parsed.
func (v *verifier) checkDatapackage() *Datapackage {
	a := v.a
	var dg DigestFile
	if !a.Has(DatapackageDigestPath) {
		v.problem(DatapackageDigestPath, "missing: the package's hash and signature cannot be checked")
	} else if b, err := a.ReadSmall(DatapackageDigestPath); err != nil {
		v.problem(DatapackageDigestPath, "%v", err)
	} else if err := json.Unmarshal(b, &dg); err != nil {
		v.problem(DatapackageDigestPath, "not valid JSON: %v", err)
	}
	if !a.Has(DatapackagePath) {
		v.problem(DatapackagePath, "missing")
		return nil
	}
	b, err := a.ReadSmall(DatapackagePath)
	if err != nil {
		v.problem(DatapackagePath, "%v", err)
		return nil
	}
	sum := sha256.Sum256(b)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if dg.Hash != "" {
		if dg.Path != DatapackagePath {
			v.problem(DatapackageDigestPath, "path is %q, not %q", dg.Path, DatapackagePath)
		}
		if !sameHash(dg.Hash, got) {
			v.problem(DatapackagePath, "sha256 is %s, datapackage-digest.json says %s", got, dg.Hash)
		}
	}
	switch sd := dg.SignedData; {
	case sd == nil:
		if !v.opts.AllowUnsigned {
			v.problem(DatapackageDigestPath, "not signed (no signedData)")
		}
	default:
		v.rep.Signed = true
		if sd.Hash != dg.Hash {
			v.problem(DatapackageDigestPath, "signedData.hash %s is not the hash of datapackage.json given (%s)", sd.Hash, dg.Hash)
		}
		pub, err := VerifySignature(sd)
		switch {
		case err != nil:
			v.problem(DatapackageDigestPath, "signature: %v", err)
		case len(v.opts.TrustedKeys) > 0 && !trusted(pub, v.opts.TrustedKeys):
			v.problem(DatapackageDigestPath, "signature: valid, but made with key %s, which is not a trusted key", pub)
		default:
			v.rep.PublicKey = pub
		}
	}
	var dp Datapackage
	if err := json.Unmarshal(b, &dp); err != nil {
		v.problem(DatapackagePath, "not valid JSON: %v", err)
		return nil
	}
	v.rep.Software = dp.Software
	return &dp
}

func trusted(pub string, keys []string) bool {
	for _, k := range keys {
		if samePublicKey(pub, k) {
			return true
		}
	}
	return false
}

// sameHash compares "sha256:hex" hashes (a bare hex value is taken as
// sha256), case-insensitively.
func sameHash(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		if !strings.Contains(s, ":") {
			s = "sha256:" + s
		}
		return s
	}
	return norm(a) == norm(b)
}

// checkResources hashes every resource datapackage.json lists and checks
// that it lists every member.
func (v *verifier) checkResources(ctx context.Context, dp *Datapackage) error {
	listed := map[string]bool{DatapackagePath: true, DatapackageDigestPath: true}
	for i, r := range dp.Resources {
		if err := ctx.Err(); err != nil {
			return err
		}
		where := fmt.Sprintf("%s resource %d", DatapackagePath, i)
		if err := safeNameDepth(r.Path, v.a.limits.MaxDepth); err != nil {
			v.problem(where, "path %q: %v", r.Path, err)
			continue
		}
		if listed[r.Path] {
			v.problem(where, "%s is listed twice", r.Path)
			continue
		}
		listed[r.Path] = true
		if !v.a.Has(r.Path) {
			v.problem(r.Path, "listed in datapackage.json but not in the zip")
			continue
		}
		rc, err := v.a.OpenMember(r.Path)
		if err != nil {
			v.problem(r.Path, "%v", err)
			continue
		}
		h := sha256.New()
		n, err := io.Copy(h, rc)
		rc.Close()
		v.rep.Resources++
		v.rep.Bytes += n
		if err != nil {
			v.problem(r.Path, "%v", err)
			continue
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); !sameHash(r.Hash, got) {
			v.problem(r.Path, "sha256 is %s, datapackage.json says %s", got, r.Hash)
		}
		if n != r.Bytes {
			v.problem(r.Path, "%d bytes, datapackage.json says %d", n, r.Bytes)
		}
	}
	for _, m := range v.a.Members() {
		if !listed[m] && !strings.HasSuffix(m, "/") {
			v.problem(m, "in the zip but not listed in datapackage.json")
		}
	}
	return nil
}

// readPages reads a pages file into v.pages (url and 14-digit timestamp).
func (v *verifier) readPages(name string) {
	if !v.a.Has(name) {
		if name == PagesPath {
			v.problem(name, "missing")
		}
		return
	}
	rc, err := v.a.OpenMember(name)
	if err != nil {
		v.problem(name, "%v", err)
		return
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if n == 1 {
			var h PagesHeader
			if err := json.Unmarshal(line, &h); err != nil || h.Format == "" {
				v.problem(name, "line 1 is not a json-pages header (%s)", excerpt(line))
			}
			continue
		}
		var p Page
		if err := json.Unmarshal(line, &p); err != nil || p.URL == "" || p.TS == "" {
			v.problem(fmt.Sprintf("%s line %d", name, n), "not a page (url and ts): %s", excerpt(line))
			continue
		}
		ts, ok := ts14(p.TS)
		if !ok {
			v.problem(fmt.Sprintf("%s line %d", name, n), "ts %q is not a date", p.TS)
			continue
		}
		v.pages[p.URL+" "+ts] = fmt.Sprintf("%s line %d", name, n)
		v.rep.Pages++
	}
	if err := sc.Err(); err != nil {
		v.problem(name, "%v", err)
	}
}

func excerpt(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// ts14 turns a page timestamp (ISO 8601 or 14 digits) into 14 digits.
func ts14(s string) (string, bool) {
	if len(s) == 14 && strings.Trim(s, "0123456789") == "" {
		return s, true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Format("20060102150405"), true
		}
	}
	return "", false
}

// checkIndexes reads every index in indexes/ and checks each line.
func (v *verifier) checkIndexes(ctx context.Context) error {
	found := false
	for _, m := range v.a.Members() {
		if !strings.HasPrefix(m, "indexes/") {
			continue
		}
		switch {
		case strings.HasSuffix(m, ".cdxj") || strings.HasSuffix(m, ".cdx"):
			found = true
			v.prev = v.prev[:0]
			rc, err := v.a.OpenMember(m)
			if err != nil {
				v.problem(m, "%v", err)
				continue
			}
			err = v.checkLines(ctx, m, rc)
			rc.Close()
			if err != nil {
				return err
			}
		case strings.HasSuffix(m, ".idx"):
			found = true
			if err := v.checkZipNum(ctx, m); err != nil {
				return err
			}
		}
	}
	if !found {
		v.problem("indexes/", "no index (index.cdxj, index.cdx or index.idx)")
	}
	return nil
}

// checkZipNum checks a ZipNum index: each block's sha256 and first line,
// and every line of every block.
func (v *verifier) checkZipNum(ctx context.Context, idxName string) error {
	b, err := v.a.ReadSmall(idxName)
	if err != nil {
		v.problem(idxName, "%v", err)
		return nil
	}
	v.prev = v.prev[:0]
	defaultFile := ""
	for n, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		where := fmt.Sprintf("%s line %d", idxName, n+1)
		if n == 0 && strings.HasPrefix(line, "!meta") {
			var meta struct{ Filename string }
			if i := strings.Index(line, " {"); i > 0 {
				if err := json.Unmarshal([]byte(line[i:]), &meta); err != nil {
					v.problem(where, "meta line: %v", err)
				}
			}
			defaultFile = meta.Filename
			continue
		}
		i := strings.Index(line, " {")
		if i < 0 {
			v.problem(where, "not an index line: %s", excerpt([]byte(line)))
			continue
		}
		var blk IDXBlock
		if err := json.Unmarshal([]byte(line[i+1:]), &blk); err != nil {
			v.problem(where, "%v", err)
			continue
		}
		blk.Prefix = line[:i]
		if blk.Filename == "" {
			blk.Filename = defaultFile
		}
		member := "indexes/" + blk.Filename
		sr, err := v.a.Range(member)
		if err != nil {
			v.problem(where, "%v", err)
			continue
		}
		if blk.Offset < 0 || blk.Length <= 0 || blk.Offset+blk.Length > sr.Size() || blk.Length > v.a.limits.MaxMetaBytes {
			v.problem(where, "block at %d+%d lies outside %s (%d bytes)", blk.Offset, blk.Length, member, sr.Size())
			continue
		}
		raw := make([]byte, blk.Length)
		if _, err := sr.ReadAt(raw, blk.Offset); err != nil {
			v.problem(where, "%v", err)
			continue
		}
		blockName := fmt.Sprintf("%s block at %d", member, blk.Offset)
		if blk.Digest != "" {
			sum := sha256.Sum256(raw)
			if got := "sha256:" + hex.EncodeToString(sum[:]); !sameHash(blk.Digest, got) {
				v.problem(blockName, "sha256 is %s, %s says %s", got, where, blk.Digest)
			}
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			v.problem(blockName, "not gzip: %v", err)
			continue
		}
		lines, err := io.ReadAll(io.LimitReader(zr, v.a.limits.MaxMetaBytes+1))
		if err == nil && int64(len(lines)) > v.a.limits.MaxMetaBytes {
			err = fmt.Errorf("inflates past %d bytes: %w", v.a.limits.MaxMetaBytes, ErrUnsafe)
		}
		if err != nil {
			v.problem(blockName, "%v", err)
			continue
		}
		if !bytes.HasPrefix(lines, []byte(blk.Prefix)) {
			v.problem(blockName, "does not start with %q as %s says", blk.Prefix, where)
		}
		if err := v.checkLines(ctx, blockName, bytes.NewReader(lines)); err != nil {
			return err
		}
	}
	return nil
}

// checkLines checks the order of CDXJ lines and each line against the
// record it points at.
func (v *verifier) checkLines(ctx context.Context, name string, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '!' {
			continue
		}
		where := fmt.Sprintf("%s line %d", name, n)
		v.rep.IndexLines++
		if len(v.prev) > 0 && bytes.Compare(line, v.prev) < 0 {
			v.problem(where, "out of order (sorts before the line above it)")
		}
		v.prev = append(v.prev[:0], line...)
		l, err := cdxj.Parse(string(line))
		if err != nil {
			v.problem(where, "%v", err)
			continue
		}
		v.checkRecord(where, &l)
		delete(v.pages, l.URL+" "+l.Timestamp)
	}
	if err := sc.Err(); err != nil {
		v.problem(name, "%v", err)
	}
	return nil
}

// checkRecord reads the record a line points at and compares it.
func (v *verifier) checkRecord(where string, l *cdxj.Line) {
	member := archiveDir + l.Filename
	if warcio.CheckFileName(l.Filename) != nil || !v.warcs[member] {
		v.problem(where, "points at %q, which is not a WARC file in archive/", l.Filename)
		return
	}
	if l.Offset < 0 || l.Length <= 0 {
		v.problem(where, "has no offset and length")
		return
	}
	sr, err := v.a.Range(member)
	if err != nil {
		v.problem(where, "%v", err)
		return
	}
	if l.Offset+l.Length > sr.Size() {
		v.problem(where, "record at %d+%d lies past the end of %s (%d bytes)", l.Offset, l.Length, member, sr.Size())
		return
	}
	rec, err := v.rd.ReadRecordAt(sr, member, l.Offset, l.Length, warcio.Options{BlockDigest: true})
	if err != nil {
		v.problem(where, "%v", err)
		return
	}
	v.rep.Records++
	if rec.Length != l.Length && rec.IndexLength() != l.Length {
		v.problem(where, "length %d, the record there takes %d bytes", l.Length, rec.Length)
	}
	if l.URL != "" && rec.TargetURI != l.URL {
		v.problem(where, "url %s, the record at offset %d is for %s", l.URL, l.Offset, rec.TargetURI)
	}
	if ts := rec.Date.UTC().Format("20060102150405"); l.Timestamp != ts {
		v.problem(where, "timestamp %s, the record at offset %d is dated %s", l.Timestamp, l.Offset, ts)
	}
	if rec.DeclaredBlockDigest != "" && rec.BlockDigest != "" && rec.BlockDigest != rec.DeclaredBlockDigest {
		v.problem(member, "record at offset %d (%s): block digest %s does not match its WARC-Block-Digest %s", l.Offset, rec.TargetURI, rec.BlockDigest, rec.DeclaredBlockDigest)
	}
	c := rec.Capture(l.Filename)
	if c.DigestMismatch {
		v.problem(member, "record at offset %d (%s): payload digest %s does not match its WARC-Payload-Digest %s", l.Offset, rec.TargetURI, rec.PayloadDigest, rec.DeclaredPayloadDigest)
	}
	if l.Digest == "" {
		return
	}
	want, err := digest.Normalize(l.Digest)
	if err != nil {
		v.problem(where, "digest %q: %v", l.Digest, err)
		return
	}
	if algOf(want) != algOf(c.Digest) && algOf(want) != algOf(rec.PayloadDigest) {
		return // another algorithm than the record's digests: not comparable
	}
	if (want == c.Digest && !c.DigestMismatch) || (rec.Type != "revisit" && want == rec.PayloadDigest) {
		return
	}
	v.problem(where, "digest %s, the record at offset %d has %s", want, l.Offset, c.Digest)
}

func algOf(d string) string { a, _, _ := strings.Cut(d, ":"); return a }
