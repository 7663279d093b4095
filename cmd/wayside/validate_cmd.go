package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/wacz"
	"github.com/wayside-archive/wayside/warcio"
)

const validateUsage = `[flags] FILE|DIR...

Check WARC and ARC files (a directory: its *.warc, *.warc.gz, *.arc, *.arc.gz
and *.wacz files; -r to recurse) record by record:
  - structure: every byte belongs to a record; truncated and corrupt records,
    gzip member framing (one record per member, no junk in a member);
  - mandatory WARC fields per record type, and the syntax of every field
    whose syntax the WARC 1.1 specification defines;
  - block digests, and payload digests over the HTTP entity body with the
    transfer coding (chunking) removed, as the specification defines it;
  - revisit records: the record WARC-Refers-To names is among the given
    files, with the revisit's payload digest and target URI.
Prints each problem with file and offset, and a summary per file; --json
prints the report as JSON. Exit status 1 when any error is found (warnings
alone: 0).`

// validateProblem is one finding, located by file and offset (the record's
// start; -1 for the file as a whole).
type validateProblem struct {
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	RecordID string `json:"record_id,omitempty"`
	Severity string `json:"severity"` // "error" or "warning"
	Check    string `json:"check"`
	Message  string `json:"message"`
}

// Checks, as named in reports.
const (
	chkStructure = "structure" // unreadable, corrupt, truncated, bytes outside records
	chkGzip      = "gzip"      // gzip member framing
	chkMandatory = "mandatory" // a field the record type requires is missing
	chkSyntax    = "syntax"    // a field's value does not have its syntax
	chkBlock     = "block-digest"
	chkPayload   = "payload-digest"
	chkRevisit   = "revisit"
	chkLength    = "content-length"
	chkHTTP      = "http"
	chkARC       = "arc"
	chkContainer = "container"
)

type validateFile struct {
	Path           string            `json:"path"`
	Format         string            `json:"format"` // warc, arc, wacz
	Records        int               `json:"records"`
	BlockDigests   int               `json:"block_digests_checked"`
	PayloadDigests int               `json:"payload_digests_checked"`
	Revisits       int               `json:"revisits"`
	Errors         int               `json:"errors"`
	Warnings       int               `json:"warnings"`
	Problems       []validateProblem `json:"problems"`
}

type validateReport struct {
	Files    []*validateFile `json:"files"`
	Records  int             `json:"records"`
	Errors   int             `json:"errors"`
	Warnings int             `json:"warnings"`
	Valid    bool            `json:"valid"`
}

func (f *validateFile) add(sev, check string, off int64, id, format string, a ...any) {
	f.Problems = append(f.Problems, validateProblem{File: f.Path, Offset: off, RecordID: id, Severity: sev, Check: check, Message: fmt.Sprintf(format, a...)})
	if sev == "error" {
		f.Errors++
	} else {
		f.Warnings++
	}
}

// validateWACZ validates a WACZ file: the package as `wacz verify` checks
// it (every resource hash, the index against the records, pages, the
// signature when there is one: each problem an error naming the member;
// an unsigned package is a warning), then every WARC file inside, read
// through the zip by range, handed to warc.
func validateWACZ(ctx context.Context, path string, f *validateFile, warc func(name string, r io.Reader) error) error {
	rep, err := wacz.Verify(ctx, path, wacz.VerifyOptions{AllowUnsigned: true})
	if err != nil {
		f.add("error", chkContainer, -1, "", "%v", err)
		return nil
	}
	for _, pr := range rep.Problems {
		f.add("error", chkContainer, -1, "", "%s", pr)
	}
	if !rep.Signed {
		f.add("warning", chkContainer, -1, "", "datapackage-digest.json is not signed")
	}
	a, err := wacz.Open(path, wacz.Limits{})
	if err != nil {
		return err
	}
	defer a.Close()
	for _, m := range a.WARCs() {
		r, err := a.Range(m)
		if err != nil {
			f.add("error", chkContainer, -1, "", "%s: %v", m, err)
			continue
		}
		if err := warc(m, r); err != nil {
			return err
		}
	}
	return nil
}

// validateInputs expands directories into the archive files they hold.
func validateInputs(args []string, recurse bool) ([]string, error) {
	var out []string
	isArchive := func(name string) bool {
		n := strings.TrimSuffix(name, warcio.OpenSuffix)
		for _, ext := range []string{".warc", ".warc.gz", ".arc", ".arc.gz", ".wacz"} {
			if strings.HasSuffix(n, ext) && !strings.HasSuffix(name, warcio.OpenSuffix) {
				return true
			}
		}
		return false
	}
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %w", a, err)
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != a && !recurse {
					return filepath.SkipDir
				}
				return nil
			}
			if isArchive(d.Name()) {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		if len(out) == n {
			return nil, fmt.Errorf("validate: directory %s holds no WARC, ARC or WACZ file", a)
		}
		sort.Strings(out[n:])
	}
	return out, nil
}

func runValidate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "validate", validateUsage)
	recurse := fs.Bool("r", false, "recurse into subdirectories of directory arguments")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.quietFlag("list errors only, not warnings")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fs.usagef("validate: give WARC or ARC files or directories")
	}
	if err := checkInputs("validate", filesOnly(fs.Args())); err != nil {
		return err
	}
	paths, err := validateInputs(fs.Args(), *recurse)
	if err != nil {
		return err
	}
	v := newValidator()
	rep := &validateReport{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		f := &validateFile{Path: p}
		rep.Files = append(rep.Files, f)
		switch {
		case strings.HasSuffix(p, ".wacz"):
			f.Format = "wacz"
			err = validateWACZ(ctx, p, f, func(name string, r io.Reader) error {
				return v.stream(ctx, f, name, warcio.NewReader(r, name, v.readOptions()))
			})
		default:
			err = v.file(ctx, f)
		}
		if err != nil {
			return fmt.Errorf("validate: %s: %w", p, err)
		}
	}
	v.checkRevisits()
	for _, f := range rep.Files {
		sort.SliceStable(f.Problems, func(i, j int) bool { return f.Problems[i].Offset < f.Problems[j].Offset })
		if f.Problems == nil {
			f.Problems = []validateProblem{}
		}
		rep.Records += f.Records
		rep.Errors += f.Errors
		rep.Warnings += f.Warnings
	}
	rep.Valid = rep.Errors == 0
	if *asJSON {
		if err := writeJSONOut(e.stdout, rep); err != nil {
			return err
		}
	} else {
		printValidateReport(e.stdout, rep, *quiet)
	}
	if rep.Errors > 0 {
		bad := 0
		for _, f := range rep.Files {
			if f.Errors > 0 {
				bad++
			}
		}
		return fmt.Errorf("validate: %d errors in %d of %d files", rep.Errors, bad, len(rep.Files))
	}
	return nil
}

// filesOnly drops directories (checked by validateInputs) from args.
func filesOnly(args []string) []string {
	var out []string
	for _, a := range args {
		if fi, err := os.Stat(a); err == nil && fi.IsDir() {
			continue
		}
		out = append(out, a)
	}
	return out
}

func printValidateReport(w io.Writer, rep *validateReport, quiet bool) {
	for _, f := range rep.Files {
		for _, p := range f.Problems {
			if quiet && p.Severity != "error" {
				continue
			}
			at := fmt.Sprintf("offset %d", p.Offset)
			if p.Offset < 0 {
				at = "file"
			}
			fmt.Fprintf(w, "%s %s: %s: %s: %s\n", p.File, at, p.Severity, p.Check, p.Message)
		}
	}
	for _, f := range rep.Files {
		verdict := "valid"
		if f.Errors > 0 {
			verdict = "INVALID"
		}
		fmt.Fprintf(w, "%s: %s (%s): %d records, %d block and %d payload digests checked, %d errors, %d warnings\n",
			f.Path, verdict, f.Format, f.Records, f.BlockDigests, f.PayloadDigests, f.Errors, f.Warnings)
	}
	valid := 0
	for _, f := range rep.Files {
		if f.Errors == 0 {
			valid++
		}
	}
	fmt.Fprintf(w, "validate: %d of %d files valid, %d records, %d errors, %d warnings\n", valid, len(rep.Files), rep.Records, rep.Errors, rep.Warnings)
}

// seenRecord is what revisit checks need of a record.
type seenRecord struct {
	file      *validateFile
	offset    int64
	typ       string
	uri       string
	date      string
	payload   string // canonical payload digest: declared, else computed
	recordID  string
	refersTo  string // revisits
	refURI    string
	refDate   string
	profile   string
	declDigst string
}

type validator struct {
	ph      payloadHasher
	records map[string]*seenRecord // by WARC-Record-ID
	byURI   map[string][]*seenRecord
	revisit []*seenRecord
}

func newValidator() *validator {
	return &validator{records: map[string]*seenRecord{}, byURI: map[string][]*seenRecord{}}
}

// payloadHasher hashes each record's payload with the algorithm of its
// WARC-Payload-Digest when that is not SHA-1 (the reader computes SHA-1).
type payloadHasher struct{ h hash.Hash }

func (p *payloadHasher) Write(b []byte) (int, error) {
	if p.h != nil {
		p.h.Write(b)
	}
	return len(b), nil
}

func (v *validator) readOptions() warcio.Options {
	return warcio.Options{
		BlockDigest:  true,
		KeepHTTPHead: true,
		Payload:      &v.ph,
		OnHead: func(rec *warcio.Record) {
			v.ph.h = nil
			if d, err := digest.Parse(rec.Header("WARC-Payload-Digest")); err == nil && d.Alg != digest.SHA1 {
				v.ph.h, _ = digest.New(d.Alg)
			}
		},
	}
}

func (v *validator) file(ctx context.Context, f *validateFile) error {
	opts := v.readOptions()
	// A complete file is read mapped (less CPU); a writer's ".open" file
	// may still grow, so it is read through a buffer.
	opts.Map = !strings.HasSuffix(f.Path, warcio.OpenSuffix)
	r, err := warcio.Open(f.Path, opts)
	if err != nil {
		f.add("error", chkStructure, -1, "", "cannot be read: %v", err)
		return nil
	}
	defer r.Close()
	return v.stream(ctx, f, f.Path, r)
}

// stream checks every record r reads.
func (v *validator) stream(ctx context.Context, f *validateFile, name string, r *warcio.Reader) error {
	gz := strings.HasSuffix(strings.TrimSuffix(name, warcio.OpenSuffix), ".gz")
	lastEnd := int64(0)
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v.ph.h = nil
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		var we *warcio.Error
		if errors.As(err, &we) {
			switch {
			case errors.Is(err, warcio.ErrTruncated):
				f.add("error", chkStructure, we.Offset, "", "truncated: the file ends inside a record (%v)", unwrapMsg(we))
				return nil
			default:
				f.add("error", chkStructure, we.Offset, "", "corrupt: %v", unwrapMsg(we))
				continue
			}
		}
		if err != nil {
			f.add("error", chkStructure, -1, "", "reading stopped: %v", err)
			return nil
		}
		f.Records++
		if f.Format == "" {
			f.Format = "warc"
			if rec.ARC != nil {
				f.Format = "arc"
			}
		}
		if rec.Offset > lastEnd && !gz && rec.ARC == nil {
			f.add("error", chkStructure, lastEnd, "", "%d bytes between records belong to no record", rec.Offset-lastEnd)
		}
		if rec.Length > 0 {
			lastEnd = rec.End()
		}
		if rec.ARC != nil {
			v.checkARC(f, rec)
		} else {
			v.checkWARC(f, rec, gz)
		}
	}
	// Every span of the file no record accounts for (warcio's byte
	// accounting, warcio.Span) comes back from Next as an *Error with its
	// file offset and is reported above; only zero padding at the end of a
	// file is not.
	return nil
}

func unwrapMsg(we *warcio.Error) string { return we.Err.Error() }

// anomalyChecks sorts the reader's anomalies: a substring, the check and
// the severity. Anomalies about fields checked here again are dropped.
var anomalyChecks = []struct {
	sub, check, sev string
}{
	{"overstates the block", chkLength, "error"},
	// An HTTP message whose chunking does not parse (pywb and others
	// stored de-chunked bodies under the original header): the WARC
	// record is intact, its payload digest checked over the bytes as is.
	{"not validly chunked", chkHTTP, "warning"},
	{"header line without a colon", chkSyntax, "error"},
	{"junk after the record in its gzip member", chkGzip, "error"},
	{"holds more than one record", chkGzip, "warning"},
	{"continues across gzip members", chkGzip, "warning"},
	{"shares", chkGzip, "warning"},
	{"is not an HTTP message", chkHTTP, "warning"},
	{"HTTP head:", chkHTTP, "warning"},
	{"Archive-length", chkARC, "error"},
	{"after the record's Archive-length", chkARC, "error"},
	{"bytes that start no record", chkARC, "error"},
	{"Archive-date", chkARC, "warning"},
	{"no line feed after the record", chkARC, "warning"},
	{"WARC-Date", "", ""},
	{"WARC-Block-Digest", "", ""},
	{"WARC-Payload-Digest", "", ""},
}

func (v *validator) anomalies(f *validateFile, rec *warcio.Record) {
	for _, a := range rec.Anomalies {
		check, sev := chkStructure, "warning"
		for _, c := range anomalyChecks {
			if strings.Contains(a, c.sub) {
				check, sev = c.check, c.sev
				break
			}
		}
		if check == "" {
			continue
		}
		f.add(sev, check, rec.Offset, rec.RecordID, "%s", a)
	}
}

func (v *validator) checkARC(f *validateFile, rec *warcio.Record) {
	v.anomalies(f, rec)
	if rec.TargetURI == "" && !rec.ARC.IsFiledesc() {
		f.add("error", chkARC, rec.Offset, "", "ARC header line without a URL")
	}
	if rec.Date.IsZero() {
		f.add("error", chkARC, rec.Offset, "", "ARC header line without a date")
	}
}

// WARC field syntax (WARC 1.1 §5): dates are W3C-DTF in UTC, record ids
// and WARC-Refers-To / WARC-Concurrent-To are "<" URI ">".
var (
	warcDateRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$`) })
	bracketRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<[^<>\s]+>$`) })
	knownTypes = map[string]bool{"warcinfo": true, "response": true, "resource": true, "request": true,
		"metadata": true, "revisit": true, "conversion": true, "continuation": true}
	// Fields that may appear once only (WARC 1.1 §5: all but
	// WARC-Concurrent-To, which may repeat).
	singleFields = []string{"WARC-Record-ID", "Content-Length", "WARC-Date", "WARC-Type", "Content-Type",
		"WARC-Refers-To", "WARC-Target-URI", "WARC-Truncated", "WARC-Warcinfo-ID", "WARC-Filename", "WARC-Profile",
		"WARC-Identified-Payload-Type", "WARC-Segment-Origin-ID", "WARC-Segment-Number", "WARC-Segment-Total-Length",
		"WARC-Block-Digest", "WARC-Payload-Digest", "WARC-IP-Address", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date"}
	truncReasons = map[string]bool{"length": true, "time": true, "disconnect": true, "unspecified": true}
	// fieldTypes lists the record types a field applies to (WARC 1.1 §5,
	// each field's definition); fields not listed apply to every type.
	fieldTypes = map[string][]string{
		"WARC-Concurrent-To":        {"response", "resource", "request", "metadata", "revisit"},
		"WARC-Filename":             {"warcinfo"},
		"WARC-IP-Address":           {"response", "resource", "request", "metadata", "revisit"},
		"WARC-Profile":              {"revisit"},
		"WARC-Refers-To":            {"metadata", "revisit", "conversion"},
		"WARC-Refers-To-Date":       {"revisit"},
		"WARC-Refers-To-Target-URI": {"revisit"},
		"WARC-Segment-Origin-ID":    {"continuation"},
		"WARC-Segment-Total-Length": {"continuation"},
		"WARC-Warcinfo-ID":          {"response", "resource", "request", "metadata", "revisit", "conversion", "continuation"},
	}
)

func (v *validator) checkWARC(f *validateFile, rec *warcio.Record, gz bool) {
	id := rec.RecordID
	off := rec.Offset
	bad := func(check, format string, a ...any) { f.add("error", check, off, id, format, a...) }
	warn := func(check, format string, a ...any) { f.add("warning", check, off, id, format, a...) }
	v.anomalies(f, rec)
	if rec.Version != "1.0" && rec.Version != "1.1" {
		warn(chkSyntax, "WARC/%s: not a WARC 1.0 or 1.1 record (fields checked as WARC 1.1 defines them)", rec.Version)
	}
	h := rec.Headers
	for _, name := range []string{"WARC-Record-ID", "Content-Length", "WARC-Date", "WARC-Type"} {
		if !h.Has(name) {
			bad(chkMandatory, "no %s field", name)
		}
	}
	for _, name := range singleFields {
		if n := len(h.Values(name)); n > 1 {
			bad(chkSyntax, "%s appears %d times (once at most)", name, n)
		}
	}
	typ := rec.Type
	if typ != "" && !knownTypes[typ] {
		warn(chkSyntax, "WARC-Type %q is not a type WARC 1.1 defines", h.Get("WARC-Type"))
	}
	switch typ {
	case "response", "resource", "request", "revisit", "conversion", "continuation":
		if !h.Has("WARC-Target-URI") {
			bad(chkMandatory, "a %s record needs WARC-Target-URI", typ)
		}
	}
	if typ == "revisit" && !h.Has("WARC-Profile") {
		bad(chkMandatory, "a revisit record needs WARC-Profile")
	}
	if typ == "continuation" {
		for _, name := range []string{"WARC-Segment-Origin-ID", "WARC-Segment-Number"} {
			if !h.Has(name) {
				bad(chkMandatory, "a continuation record needs %s", name)
			}
		}
	}
	if knownTypes[typ] {
		for name, types := range fieldTypes {
			if h.Has(name) && !slices.Contains(types, typ) {
				warn(chkSyntax, "%s does not apply to a %s record (WARC 1.1 defines it for %s)", name, typ, strings.Join(types, ", "))
			}
		}
	}
	if rec.HTTP != nil && rec.HTTP.Head != nil {
		if hd := rec.HTTP.Head; !bytes.HasSuffix(hd, []byte("\r\n\r\n")) && !bytes.HasSuffix(hd, []byte("\n\n")) {
			warn(chkHTTP, "the HTTP %s head does not end with an empty line", typ)
		}
		if cl := rec.HTTP.Header.Get("Content-Length"); cl != "" {
			if n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64); err != nil || n < 0 {
				warn(chkHTTP, "HTTP Content-Length %q is not a whole number", cl)
			}
		}
	}
	if rec.ContentLength > 0 && !h.Has("Content-Type") && typ != "continuation" {
		warn(chkMandatory, "a record with a block should have Content-Type")
	}
	// Syntax of the fields present.
	if s := h.Get("WARC-Record-ID"); s != "" && !bracketedURI(s) {
		bad(chkSyntax, "WARC-Record-ID %q is not \"<\" URI \">\"", s)
	}
	if s := h.Get("Content-Length"); s != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil || n < 0 {
			bad(chkSyntax, "Content-Length %q is not a whole number", s)
		}
	}
	for _, name := range []string{"WARC-Date", "WARC-Refers-To-Date"} {
		if s := h.Get(name); s != "" && !warcDateRE().MatchString(strings.TrimSpace(s)) {
			if _, ok := warcio.ParseDate(s); ok {
				warn(chkSyntax, "%s %q is not in the W3C-DTF form WARC requires (YYYY-MM-DDThh:mm:ssZ)", name, s)
			} else {
				bad(chkSyntax, "%s %q is not a date", name, s)
			}
		}
	}
	for _, name := range []string{"WARC-Refers-To", "WARC-Warcinfo-ID", "WARC-Segment-Origin-ID"} {
		if s := h.Get(name); s != "" && !bracketedURI(s) {
			bad(chkSyntax, "%s %q is not \"<\" URI \">\"", name, s)
		}
	}
	for _, s := range h.Values("WARC-Concurrent-To") {
		if !bracketedURI(s) {
			bad(chkSyntax, "WARC-Concurrent-To %q is not \"<\" URI \">\"", s)
		}
	}
	for _, name := range []string{"WARC-Target-URI", "WARC-Refers-To-Target-URI"} {
		if s := strings.TrimSpace(h.Get(name)); s != "" {
			u := strings.TrimSuffix(strings.TrimPrefix(s, "<"), ">")
			if pu, err := url.Parse(u); err != nil || pu.Scheme == "" {
				bad(chkSyntax, "%s %q is not an absolute URI", name, s)
			} else if u != s {
				warn(chkSyntax, "%s %q is in angle brackets (WARC 1.0's errata form; WARC 1.1 writes the bare URI)", name, s)
			}
		}
	}
	if s := h.Get("WARC-IP-Address"); s != "" && net.ParseIP(strings.TrimSpace(s)) == nil {
		bad(chkSyntax, "WARC-IP-Address %q is not an IPv4 or IPv6 address", s)
	}
	if s := h.Get("WARC-Segment-Number"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 1 {
			bad(chkSyntax, "WARC-Segment-Number %q is not a whole number >= 1", s)
		}
	}
	if s := strings.TrimSpace(h.Get("WARC-Truncated")); s != "" && !truncReasons[s] {
		warn(chkSyntax, "WARC-Truncated %q is not a reason WARC 1.1 names (length, time, disconnect, unspecified)", s)
	}
	truncated := h.Get("WARC-Truncated") != ""
	// Digests.
	if s := h.Get("WARC-Block-Digest"); s != "" {
		d, err := digest.Parse(s)
		switch {
		case err != nil:
			bad(chkSyntax, "WARC-Block-Digest %q is not algorithm:value", s)
		case rec.BlockDigest == "":
			warn(chkBlock, "block digest algorithm %s not computed", d.Alg)
		default:
			f.BlockDigests++
			if rec.BlockDigest != d.String() {
				bad(chkBlock, "block digest %s, computed %s", s, rec.BlockDigest)
			}
		}
	}
	if s := h.Get("WARC-Payload-Digest"); s != "" {
		d, err := digest.Parse(s)
		switch {
		case err != nil:
			bad(chkSyntax, "WARC-Payload-Digest %q is not algorithm:value", s)
		case typ == "revisit" || h.Has("WARC-Segment-Number"):
			// The original's (or the whole segmented record's) payload.
		default:
			got := rec.PayloadDigest
			if d.Alg != digest.SHA1 {
				got = ""
				if v.ph.h != nil {
					got = digest.FromHash(d.Alg, v.ph.h).String()
				}
			}
			f.PayloadDigests++
			switch {
			case got == d.String():
			case d.Alg == digest.SHA1 && rec.ChunkedPayloadDigest != "" && rec.ChunkedPayloadDigest == d.String():
				bad(chkPayload, "payload digest %s covers the chunked transfer coding; over the entity body (chunking removed, as WARC defines the payload) it is %s", s, got)
			case truncated:
				warn(chkPayload, "payload digest %s, computed %s over the truncated payload (WARC-Truncated: %s)", s, got, h.Get("WARC-Truncated"))
			default:
				bad(chkPayload, "payload digest %s, computed %s", s, got)
			}
		}
	}
	sr := &seenRecord{file: f, offset: off, typ: typ, uri: rec.TargetURI, date: h.Get("WARC-Date"), recordID: id,
		payload: rec.DeclaredPayloadDigest}
	if sr.payload == "" {
		sr.payload = rec.PayloadDigest
	}
	if id != "" {
		if prev, dup := v.records[id]; dup {
			bad(chkSyntax, "WARC-Record-ID %s is also the id of the record at %s offset %d", id, prev.file.Path, prev.offset)
		} else {
			v.records[id] = sr
		}
	}
	if typ == "response" || typ == "resource" {
		v.byURI[rec.TargetURI] = append(v.byURI[rec.TargetURI], sr)
	}
	if typ == "revisit" {
		f.Revisits++
		sr.refersTo = strings.TrimSpace(h.Get("WARC-Refers-To"))
		sr.refURI = strings.Trim(strings.TrimSpace(h.Get("WARC-Refers-To-Target-URI")), "<>")
		sr.refDate = strings.TrimSpace(h.Get("WARC-Refers-To-Date"))
		sr.profile = strings.TrimSpace(h.Get("WARC-Profile"))
		sr.declDigst = rec.DeclaredPayloadDigest
		v.revisit = append(v.revisit, sr)
	}
}

func bracketedURI(s string) bool {
	s = strings.TrimSpace(s)
	if !bracketRE().MatchString(s) {
		return false
	}
	u, err := url.Parse(s[1 : len(s)-1])
	return err == nil && u.Scheme != ""
}

// checkRevisits checks every revisit against the records of all the
// given files: the record WARC-Refers-To names (or, without it, the
// capture of WARC-Refers-To-Target-URI at WARC-Refers-To-Date) should be
// among them, with the revisit's payload digest (identical-payload-digest)
// and target URI.
func (v *validator) checkRevisits() {
	for _, r := range v.revisit {
		f := r.file
		var orig *seenRecord
		how := ""
		if r.refersTo != "" {
			orig = v.records[r.refersTo]
			how = "WARC-Refers-To " + r.refersTo
		} else if r.refURI != "" {
			for _, c := range v.byURI[r.refURI] {
				if r.refDate == "" || sameDate(c.date, r.refDate) {
					orig = c
					break
				}
			}
			how = "WARC-Refers-To-Target-URI " + r.refURI + " at " + r.refDate
		}
		if orig == nil {
			if how == "" {
				how = "no WARC-Refers-To or WARC-Refers-To-Target-URI"
			}
			f.add("warning", chkRevisit, r.offset, r.recordID, "the original (%s) is not among the given files", how)
			continue
		}
		if orig.typ == "revisit" {
			f.add("warning", chkRevisit, r.offset, r.recordID, "refers to another revisit (%s offset %d)", orig.file.Path, orig.offset)
		}
		if strings.HasSuffix(r.profile, "/identical-payload-digest") && r.declDigst != "" && orig.payload != "" && r.declDigst != orig.payload {
			f.add("error", chkRevisit, r.offset, r.recordID, "payload digest %s, but the original at %s offset %d has %s", r.declDigst, orig.file.Path, orig.offset, orig.payload)
		}
		if r.refURI != "" && orig.uri != "" && r.refURI != orig.uri {
			f.add("error", chkRevisit, r.offset, r.recordID, "WARC-Refers-To-Target-URI %s, but the original at %s offset %d is of %s", r.refURI, orig.file.Path, orig.offset, orig.uri)
		}
	}
}

func sameDate(a, b string) bool {
	ta, ok1 := warcio.ParseDate(a)
	tb, ok2 := warcio.ParseDate(b)
	return ok1 && ok2 && ta.Equal(tb)
}
