package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/postdedup"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// maintFlags are the flags every maintenance subcommand shares: the
// indexes (the dedup index by --index or --warc-dir, the capture index by
// --captures) and the selector.
type maintFlags struct {
	fs        *flagSet
	indexURL  func() (string, error)
	captures  *string
	files     stringList
	scope     *string
	urlPrefix *string
	from, to  *string
}

func newMaintFlags(fs *flagSet, cmd string) *maintFlags {
	m := &maintFlags{fs: fs}
	m.indexURL = indexURLFlags(fs, cmd)
	m.captures = fs.String("captures", "", "capture index `DIR` (default: WARC-DIR/"+consumers.CaptureIndexSubdir+" with --warc-dir; the daemon's with a sidecar --index; \"-\": none)")
	fs.Var(&m.files, "file", "select entries stored in this WARC `NAME` (base name; repeatable)")
	m.scope = fs.String("scope", "", "select entries of this scope (collection)")
	m.urlPrefix = fs.String("url-prefix", "", "select entries whose target URI starts with `PREFIX`")
	m.from = fs.String("from", "", "select entries dated at or after `TIME` (1 to 14 digits, yyyyMMddhhmmss, or RFC 3339)")
	m.to = fs.String("to", "", "select entries dated before `TIME` (a timestamp prefix names its whole period: --to 2023 ends with 2023)")
	return m
}

// parseWhen parses a --from or --to value: a timestamp prefix (up: to the
// end of the period it names, then exclusive) or RFC 3339.
func parseWhen(s string, up bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	t, err := replay.ParseTimestamp(s, up)
	if err != nil {
		return time.Time{}, err
	}
	if up {
		t = t.Add(time.Second) // exclusive
	}
	return t, nil
}

// selector returns the selector the flags give.
func (m *maintFlags) selector() (dedupindex.Selector, error) {
	sel := dedupindex.Selector{Files: m.files, Scope: *m.scope, URLPrefix: *m.urlPrefix}
	for _, f := range m.files {
		if err := warcio.CheckFileName(filepath.Base(f)); err != nil || f == "" {
			return sel, m.fs.usagef("%s: --file %q: a WARC file name", m.fs.name, f)
		}
	}
	var err error
	if *m.from != "" {
		if sel.From, err = parseWhen(*m.from, false); err != nil {
			return sel, m.fs.usagef("%s: --from: %v", m.fs.name, err)
		}
	}
	if *m.to != "" {
		if sel.To, err = parseWhen(*m.to, true); err != nil {
			return sel, m.fs.usagef("%s: --to: %v", m.fs.name, err)
		}
	}
	if !sel.From.IsZero() && !sel.To.IsZero() && !sel.From.Before(sel.To) {
		return sel, m.fs.usagef("%s: --from %s is not before --to %s", m.fs.name, *m.from, *m.to)
	}
	return sel, nil
}

// maintIndexes are the indexes a maintenance command works on.
type maintIndexes struct {
	url      string
	dedup    dedupindex.Index
	maint    dedupindex.Maintainer
	capDir   string              // a capture index opened here, or ""
	captures *captureindex.Index // nil when none or the daemon's
	daemon   *client.Client      // the daemon, with a sidecar --index
	warcDirs []string            // where the WARC files are (verify)
}

func (mi *maintIndexes) Close() {
	if mi.dedup != nil {
		mi.dedup.Close()
	}
	if mi.captures != nil {
		mi.captures.Close()
	}
	if mi.daemon != nil {
		mi.daemon.Close()
	}
}

// open opens the dedup index and the capture index the flags name.
func (m *maintFlags) open(ctx context.Context, e *env) (*maintIndexes, error) {
	raw, err := m.indexURL()
	if err != nil {
		return nil, err
	}
	cmd := m.fs.name
	mi := &maintIndexes{url: raw}
	ix, err := openIndex(ctx, e, raw, true)
	if err != nil {
		return nil, err
	}
	mi.dedup = ix
	if mi.maint, err = dedupindex.AsMaintainer(ix); err != nil {
		mi.Close()
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	warcDir := ""
	if wd := m.fs.Lookup("warc-dir"); wd != nil {
		warcDir = wd.Value.String()
	}
	if warcDir != "" {
		mi.warcDirs = append(mi.warcDirs, warcDir)
	}
	capDir := *m.captures
	u, _ := dedupindex.ParseURL(raw)
	switch {
	case capDir == "-":
		capDir = ""
	case capDir == "" && u != nil && u.Scheme == "sidecar":
		c, err := client.FromURL(raw, dedupindex.OpenOptions{Token: e.getenv("WAYSIDE_TOKEN")})
		if err != nil {
			mi.Close()
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		mi.daemon = c
	case capDir == "" && warcDir != "":
		d := filepath.Join(warcDir, consumers.CaptureIndexSubdir)
		if _, err := os.Stat(d); err == nil {
			capDir = d
		}
	case capDir != "":
		if err := checkInputDir(cmd, "--captures", capDir); err != nil {
			mi.Close()
			return nil, err
		}
	}
	if capDir != "" {
		ci, err := captureindex.Open(capDir)
		if err != nil {
			mi.Close()
			return nil, fmt.Errorf("%s: capture index %s: %w (is a crawl or the daemon using it? reach the daemon's with --index sidecar:///SOCKET)", cmd, capDir, err)
		}
		mi.captures, mi.capDir = ci, capDir
	}
	return mi, nil
}

func runIndexDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index delete", "[flags] (--file NAME... | --scope S | --url-prefix P | --from T | --to T)\n\n"+
		"Delete the entries selected (every selector given must match) from the dedup\n"+
		"index and the capture index. Each entry is removed atomically: a deletion\n"+
		"killed half-way leaves every entry either stored or gone, and `index stats\n"+
		"--check` passes; run it again to finish.")
	mf := newMaintFlags(fs, "index delete")
	dry := fs.Bool("dry-run", false, "count what would be deleted, delete nothing")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.quietFlag()
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("index delete: unexpected arguments %q", fs.Args())
	}
	sel, err := mf.selector()
	if err != nil {
		return err
	}
	if sel.IsZero() {
		return fs.usagef("index delete: give a selector: --file, --scope, --url-prefix, --from or --to (to delete a whole index, remove it)")
	}
	mi, err := mf.open(ctx, e)
	if err != nil {
		return err
	}
	defer mi.Close()
	var res struct {
		Index    string `json:"index"`
		Deleted  int64  `json:"deleted"`
		Captures string `json:"captures,omitempty"`
		CapDel   int64  `json:"captures_deleted"`
		DryRun   bool   `json:"dry_run,omitempty"`
	}
	res.Index, res.DryRun = shownURL(mi.url), *dry
	if *dry {
		err = mi.maint.Scan(ctx, sel, func(dedupindex.Entry) error { res.Deleted++; return nil })
		if err == nil && mi.captures != nil {
			res.Captures = mi.capDir
			err = mi.captures.ScanAll(ctx, sel, func(*captureindex.Entry) error { res.CapDel++; return nil })
		}
	} else {
		// File by file, each reported once durable: an interrupted
		// delete says how far it got.
		parts := []dedupindex.Selector{sel}
		if len(sel.Files) > 1 {
			parts = parts[:0]
			for _, f := range sel.Files {
				p := sel
				p.Files = []string{f}
				parts = append(parts, p)
			}
		}
		for _, p := range parts {
			var n int64
			if n, err = mi.maint.Delete(ctx, p); err != nil {
				break
			}
			res.Deleted += n
			if !*quiet && len(parts) > 1 {
				fmt.Fprintf(e.stderr, "index delete: %s: %d originals deleted\n", p.Files[0], n)
			}
		}
		if err == nil && mi.captures != nil {
			res.Captures = mi.capDir
			res.CapDel, err = mi.captures.Delete(ctx, sel)
		}
		if err == nil && mi.daemon != nil {
			res.Captures = "the daemon's"
			res.CapDel, err = mi.daemon.DeleteCaptures(ctx, sel)
		}
	}
	if err != nil {
		return fmt.Errorf("index delete: %w (entries deleted so far stay deleted; run the command again to finish)", err)
	}
	if *asJSON {
		return writeJSONOut(e.stdout, res)
	}
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	fmt.Fprintf(e.stdout, "index delete: %s %d originals from the dedup index %s", verb, res.Deleted, res.Index)
	if res.Captures != "" {
		fmt.Fprintf(e.stdout, " and %d captures from the capture index %s", res.CapDel, res.Captures)
	}
	fmt.Fprintln(e.stdout)
	return nil
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runIndexScopes(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index scopes", "[flags]\n\nList the scopes (collections) of the dedup index and the capture index, with counts.")
	mf := newMaintFlags(fs, "index scopes")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("index scopes: unexpected arguments %q", fs.Args())
	}
	mi, err := mf.open(ctx, e)
	if err != nil {
		return err
	}
	defer mi.Close()
	st, err := mi.dedup.Stats(ctx)
	if err != nil {
		return fmt.Errorf("index scopes: %w", err)
	}
	type row struct {
		Scope     string `json:"scope"`
		Originals int64  `json:"originals"`
		Captures  *int64 `json:"captures,omitempty"`
	}
	rows := map[string]*row{}
	get := func(s string) *row {
		if rows[s] == nil {
			rows[s] = &row{Scope: s}
		}
		return rows[s]
	}
	for s, n := range st.Scopes {
		get(s).Originals = n
	}
	if mi.captures != nil {
		cst, err := mi.captures.Stats(ctx)
		if err != nil {
			return fmt.Errorf("index scopes: %w", err)
		}
		for _, s := range cst.Scopes {
			n := s.Captures
			get(s.Scope).Captures = &n
		}
	}
	names := make([]string, 0, len(rows))
	for s := range rows {
		names = append(names, s)
	}
	sort.Strings(names)
	out := make([]row, 0, len(names))
	for _, s := range names {
		out = append(out, *rows[s])
	}
	if *asJSON {
		return writeJSONOut(e.stdout, out)
	}
	for _, r := range out {
		fmt.Fprintf(e.stdout, "%-24s %10d originals", r.Scope, r.Originals)
		if r.Captures != nil {
			fmt.Fprintf(e.stdout, " %10d captures", *r.Captures)
		}
		fmt.Fprintln(e.stdout)
	}
	return nil
}

// originalCapture is the capture an original of the dedup index stands
// for, for its CDXJ line.
func originalCapture(en dedupindex.Entry) wayside.Capture {
	o := en.Original
	return wayside.Capture{URI: o.TargetURI, Date: o.Date, RecordID: o.RecordID, Type: "response", Digest: o.Digest,
		Status: o.Status, MIME: o.MIME, File: o.File, Offset: o.Offset, Length: o.Length, PayloadLength: o.PayloadLength, Scope: en.Key.Scope}
}

func runIndexExport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index export", "[flags]\n\n"+
		"Write the selected entries as CDXJ sorted in byte order (pywb's and `wayside cdxj`'s\n"+
		"format; `wayside index import` reads it back). --what index exports the dedup\n"+
		"index's originals, --what captures the capture index. Lines do not name their\n"+
		"scope: export one scope at a time (--scope) to keep collections apart.")
	mf := newMaintFlags(fs, "index export")
	what := fs.String("what", "index", "what to export: index (dedup originals) or captures")
	out := fs.String("o", "", "output `FILE` (replaced atomically when complete; default stdout)")
	memMB := fs.Int("mem-mb", 256, "memory for sorting before spilling sorted runs to temporary files, `MB`")
	overwrite := overwriteFlag(fs)
	fs.atLeast("mem-mb", 1)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("index export: unexpected arguments %q", fs.Args())
	}
	if *what != "index" && *what != "captures" {
		return fs.usagef("index export: --what %q: want index or captures", *what)
	}
	sel, err := mf.selector()
	if err != nil {
		return err
	}
	if err := checkOutput("index export", nil, *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	mi, err := mf.open(ctx, e)
	if err != nil {
		return err
	}
	defer mi.Close()
	if *what == "captures" && mi.captures == nil {
		return fmt.Errorf("index export: --what captures: no capture index (give --captures DIR or --warc-dir DIR)")
	}
	run := func(w io.Writer) error {
		s := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: int64(*memMB) << 20})
		defer s.Close()
		var err error
		if *what == "index" {
			err = mi.maint.Scan(ctx, sel, func(en dedupindex.Entry) error {
				l := cdxj.FromCapture(originalCapture(en))
				return s.AddLine(&l)
			})
		} else {
			err = mi.captures.ScanAll(ctx, sel, func(en *captureindex.Entry) error {
				l := cdxj.FromCaptureKey(en.Capture, en.Key)
				return s.AddLine(&l)
			})
		}
		if err != nil {
			return fmt.Errorf("index export: %w", err)
		}
		if _, err := s.WriteTo(w); err != nil {
			return fmt.Errorf("index export: %w", err)
		}
		return nil
	}
	if *out == "" || *out == "-" {
		return run(e.stdout)
	}
	return fsutil.WriteFileAtomic(*out, 0o644, run)
}

// verifyTarget is one entry index verify reads back.
type verifyTarget struct {
	what     string // "original" or "capture"
	file     string
	offset   int64
	length   int64
	digest   string // canonical payload digest the record must have
	recordID string // "" when the index does not keep it
	revisit  bool
}

func runIndexVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index verify", "[flags]\n\n"+
		"Read back the record every selected entry points at (all, or --sample N of them)\n"+
		"and check that its WARC file exists, a record starts at its offset and has its\n"+
		"payload digest (and record id). Every problem is listed with file and offset;\n"+
		"the exit status is then 1.")
	mf := newMaintFlags(fs, "index verify")
	var dirs stringList
	fs.Var(&dirs, "dir", "a `DIR` holding the WARC files entries name (repeatable; --warc-dir is one)")
	sample := fs.Int("sample", 0, "verify `N` entries picked at random (0: every entry)")
	fs.atLeast("sample", 0)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("index verify: unexpected arguments %q", fs.Args())
	}
	sel, err := mf.selector()
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := checkInputDir("index verify", "--dir", d); err != nil {
			return err
		}
	}
	mi, err := mf.open(ctx, e)
	if err != nil {
		return err
	}
	defer mi.Close()
	dirs = append(dirs, mi.warcDirs...)
	// Entries naming their files by location URL (s3://, http(s)://,
	// file://) are read from there, by range; base names are looked up
	// in dirs.
	locs := warcfile.NewLocations(dirs)
	defer locs.Close()
	// Reservoir sampling keeps N targets of a stream of unknown length.
	var targets []verifyTarget
	seen := 0
	add := func(t verifyTarget) {
		seen++
		if *sample == 0 || len(targets) < *sample {
			targets = append(targets, t)
			return
		}
		if j := rand.IntN(seen); j < *sample {
			targets[j] = t
		}
	}
	err = mi.maint.Scan(ctx, sel, func(en dedupindex.Entry) error {
		o := en.Original
		add(verifyTarget{what: "original", file: o.File, offset: o.Offset, length: o.Length, digest: o.Digest, recordID: o.RecordID})
		return nil
	})
	if err == nil && mi.captures != nil {
		err = mi.captures.ScanAll(ctx, sel, func(en *captureindex.Entry) error {
			if en.Type != "response" && en.Type != "resource" && en.Type != "revisit" {
				return nil
			}
			add(verifyTarget{what: "capture", file: en.File, offset: en.Offset, length: en.Length, digest: en.Digest, recordID: en.RecordID, revisit: en.IsRevisit()})
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("index verify: %w", err)
	}
	sort.Slice(targets, func(i, j int) bool {
		if targets[i].file != targets[j].file {
			return targets[i].file < targets[j].file
		}
		return targets[i].offset < targets[j].offset
	})
	var problems []string
	var ok int
	var cur warcfile.ReadFile
	curName := ""
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	missing := map[string]bool{}
	openErr := map[string]error{}
	rd := new(warcio.Reader)
	for i, t := range targets {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if t.file != curName {
			if cur != nil {
				cur.Close()
				cur = nil
			}
			curName = t.file
			f, err := locs.Open(ctx, t.file)
			switch {
			case err == nil:
				cur = f
			case warcfile.IsNotExist(err):
				missing[t.file] = true
			default:
				// The store could not be read: reported per entry, as
				// a missing file is.
				missing[t.file] = true
				openErr[t.file] = err
			}
		}
		if cur == nil {
			if err := openErr[t.file]; err != nil {
				problems = append(problems, fmt.Sprintf("%s offset %d: %s: cannot open the WARC file: %v", t.file, t.offset, t.what, err))
			} else if warcfile.IsURL(t.file) {
				problems = append(problems, fmt.Sprintf("%s offset %d: %s: WARC file not found", t.file, t.offset, t.what))
			} else if len(dirs) == 0 {
				problems = append(problems, fmt.Sprintf("%s offset %d: %s: WARC file not found (no --warc-dir or --dir given)", t.file, t.offset, t.what))
			} else {
				problems = append(problems, fmt.Sprintf("%s offset %d: %s: WARC file not found in %s", t.file, t.offset, t.what, strings.Join(dirs, ", ")))
			}
			continue
		}
		if p := verifyOne(rd, cur, t); p != "" {
			problems = append(problems, fmt.Sprintf("%s offset %d: %s: %s", t.file, t.offset, t.what, p))
			continue
		}
		ok++
	}
	res := struct {
		Entries  int      `json:"entries"`
		Checked  int      `json:"checked"`
		OK       int      `json:"ok"`
		Missing  int      `json:"missing_files"`
		Problems []string `json:"problems"`
	}{Entries: seen, Checked: len(targets), OK: ok, Missing: len(missing), Problems: problems}
	if res.Problems == nil {
		res.Problems = []string{}
	}
	if *asJSON {
		if err := writeJSONOut(e.stdout, res); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(e.stdout, p)
		}
		fmt.Fprintf(e.stdout, "index verify: %d of %d entries checked, %d ok, %d problems (%d WARC files missing)\n", len(targets), seen, ok, len(problems), len(missing))
	}
	if len(problems) > 0 {
		return fmt.Errorf("index verify: %d of %d entries checked point at no record with their digest", len(problems), len(targets))
	}
	return nil
}

// verifyOne reads the record t names and returns what is wrong, or "".
func verifyOne(rd *warcio.Reader, f io.ReaderAt, t verifyTarget) string {
	want, err := digest.Parse(t.digest)
	if err != nil {
		return fmt.Sprintf("the index holds an unreadable digest %q", t.digest)
	}
	opts := warcio.Options{}
	var h interface {
		io.Writer
		Sum([]byte) []byte
	}
	if want.Alg != digest.SHA1 {
		hh, err := digest.New(want.Alg)
		if err != nil {
			return err.Error()
		}
		h, opts.Payload, opts.SkipPayloadDigest = hh, hh, true
	}
	rec, err := rd.ReadRecordAt(f, t.file, t.offset, t.length, opts)
	if err != nil {
		var we *warcio.Error
		if errors.As(err, &we) {
			return fmt.Sprintf("no whole record there: %v", we.Err)
		}
		return fmt.Sprintf("no whole record there: %v", err)
	}
	if t.recordID != "" && rec.RecordID != "" && rec.RecordID != t.recordID {
		return fmt.Sprintf("the record there is %s, the index names %s", rec.RecordID, t.recordID)
	}
	got := rec.PayloadDigest
	if t.revisit {
		got = rec.DeclaredPayloadDigest
	} else if h != nil {
		got = digest.Digest{Alg: want.Alg, Sum: h.Sum(nil)}.String()
	}
	if got != want.String() {
		return fmt.Sprintf("the record's payload digest is %s, the index says %s", got, want)
	}
	return ""
}

// replaceIndexFlags are the indexes `dedup run --replace` and `dedup
// validate --replace` keep right while they swap files in.
type replaceIndexFlags struct {
	index    *string
	captures *string
}

func (r *replaceIndexFlags) register(fs *flagSet) {
	r.index = fs.String("replace-index", "", "with --replace: the dedup index `URL` that names the inputs, updated to the new offsets (default: DIR/"+crawl.IndexSubdir+" beside the inputs when present; sidecar:///SOCKET for a running daemon's, whose capture index is then updated too)")
	r.captures = fs.String("replace-captures", "", "with --replace: the capture index `DIR` that names the inputs (default: DIR/"+consumers.CaptureIndexSubdir+" beside the inputs when present)")
}

// daemonCaptures is the daemon's capture index as a postdedup.CaptureReplacer.
type daemonCaptures struct{ c *client.Client }

func (d daemonCaptures) ReplaceFiles(ctx context.Context, files map[string][]wayside.Capture) (int, int, error) {
	r, err := d.c.ReplaceFiles(ctx, files)
	return r.Removed, r.Added, err
}

// open opens the indexes to update for inputs. Every index found beside
// the inputs must open: an index Replace cannot update would keep
// pointing at the old offsets, so the replacement is refused instead.
func (r *replaceIndexFlags) open(ctx context.Context, e *env, cmd string, inputs []string) ([]postdedup.IndexUpdater, func(), error) {
	var ups []postdedup.IndexUpdater
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	fail := func(err error) ([]postdedup.IndexUpdater, func(), error) {
		closeAll()
		return nil, nil, err
	}
	addDedup := func(raw string) error {
		ix, err := openIndex(ctx, e, raw, true)
		if err != nil {
			return fmt.Errorf("%s: --replace: the dedup index %s names the inputs and cannot be updated, so nothing is replaced: %w (stop what uses it, or reach a running daemon's with --replace-index sidecar:///SOCKET)", cmd, shownURL(raw), err)
		}
		closers = append(closers, func() { ix.Close() })
		m, err := dedupindex.AsMaintainer(ix)
		if err != nil {
			return fmt.Errorf("%s: --replace: %w", cmd, err)
		}
		ups = append(ups, &postdedup.DedupIndexUpdater{Label: shownURL(raw), Index: m})
		return nil
	}
	addCaptures := func(dir string) error {
		ci, err := captureindex.Open(dir)
		if err != nil {
			return fmt.Errorf("%s: --replace: the capture index %s names the inputs and cannot be updated, so nothing is replaced: %w (stop what uses it, or reach a running daemon's with --replace-index sidecar:///SOCKET)", cmd, dir, err)
		}
		closers = append(closers, func() { ci.Close() })
		ups = append(ups, postdedup.CaptureIndexUpdater{Label: dir, Index: ci})
		return nil
	}
	if *r.index != "" {
		if err := addDedup(*r.index); err != nil {
			return fail(err)
		}
		if u, _ := dedupindex.ParseURL(*r.index); u != nil && u.Scheme == "sidecar" && *r.captures == "" {
			c, err := client.FromURL(*r.index, dedupindex.OpenOptions{Token: e.getenv("WAYSIDE_TOKEN")})
			if err != nil {
				return fail(fmt.Errorf("%s: --replace-index: %w", cmd, err))
			}
			closers = append(closers, func() { c.Close() })
			ups = append(ups, postdedup.CaptureIndexUpdater{Label: "of the daemon at " + shownURL(*r.index), Index: daemonCaptures{c}})
		}
	}
	if *r.captures != "" {
		if err := checkInputDir(cmd, "--replace-captures", *r.captures); err != nil {
			return fail(err)
		}
		if err := addCaptures(*r.captures); err != nil {
			return fail(err)
		}
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		d := filepath.Dir(in)
		if seen[d] {
			continue
		}
		seen[d] = true
		if p := filepath.Join(d, crawl.IndexSubdir); *r.index == "" && isDir(p) {
			if err := addDedup(p); err != nil {
				return fail(err)
			}
		}
		if p := filepath.Join(d, consumers.CaptureIndexSubdir); *r.captures == "" && isDir(p) {
			if err := addCaptures(p); err != nil {
				return fail(err)
			}
		}
	}
	return ups, closeAll, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
