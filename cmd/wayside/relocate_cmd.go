package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// relocateBatch is how many dedup-index moves one Update carries.
const relocateBatch = 1000

func runIndexRelocate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index relocate", "[flags] URL\n\n"+
		"Record that WARC files moved (a collection copied to object storage after the\n"+
		"crawl): the entries of the dedup index and the capture index that name the\n"+
		"files selected (--file NAME..., default every file the indexes name) are\n"+
		"rewritten to name URL/NAME instead, without reading the WARCs again. First\n"+
		"every moved file is checked: it must exist at its new location with the size\n"+
		"it has where the indexes find it now (--dir, --warc-dir or its location URL),\n"+
		"and with --digests every record the indexes name in it is read there by range\n"+
		"and must have its entry's payload digest. If any check fails nothing is\n"+
		"changed. Each entry is rewritten atomically: a relocation killed half-way\n"+
		"leaves every entry at its old or its new location, `index stats --check`\n"+
		"passes, and running it again finishes it.\n\n"+
		"URL: file:///DIR, a directory path, or s3://BUCKET/PREFIX?endpoint=http://HOST:PORT\n"+
		"(credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the shared files).")
	mf := newMaintFlags(fs, "index relocate")
	var dirs stringList
	fs.Var(&dirs, "dir", "a `DIR` holding the files at their old location (repeatable; --warc-dir is one)")
	digests := fs.Bool("digests", false, "also read every record the indexes name at the new location and compare its payload digest")
	dry := fs.Bool("dry-run", false, "check and count, change nothing")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.usagef("index relocate: give one URL: the storage the files are now in")
	}
	base, err := relocateBase(fs.Arg(0))
	if err != nil {
		return fs.usagef("index relocate: %v", err)
	}
	sel, err := mf.selector()
	if err != nil {
		return err
	}
	if sel.Scope != "" || sel.URLPrefix != "" || !sel.From.IsZero() || !sel.To.IsZero() {
		return fs.usagef("index relocate: files move as a whole: select them with --file only (not --scope, --url-prefix, --from, --to)")
	}
	for _, d := range dirs {
		if err := checkInputDir("index relocate", "--dir", d); err != nil {
			return err
		}
	}
	mi, err := mf.open(ctx, e)
	if err != nil {
		return err
	}
	defer mi.Close()
	if mi.daemon != nil {
		return errors.New("index relocate: the capture index of a running daemon cannot be relocated over its API: stop the daemon and give --captures DIR (or --captures - for the dedup index alone)")
	}
	locs := warcfile.NewLocations(append(dirs, mi.warcDirs...))
	defer locs.Close()

	// The files the indexes name, and where each goes.
	moves := map[string]string{}
	var joinErr error
	consider := func(file string) {
		if _, ok := moves[file]; ok || (len(sel.Files) > 0 && !dedupindex.MatchFile(sel.Files, file)) {
			return
		}
		nw, err := warcfile.Join(base, warcfile.Base(file))
		if err != nil {
			joinErr = fmt.Errorf("index relocate: %s: %w", file, err)
			return
		}
		moves[file] = nw
	}
	var originals []dedupindex.Entry
	err = mi.maint.Scan(ctx, dedupindex.Selector{Files: sel.Files}, func(en dedupindex.Entry) error {
		consider(en.Original.File)
		originals = append(originals, en)
		return nil
	})
	if err != nil {
		return fmt.Errorf("index relocate: %w", err)
	}
	// The capture index's files with captures (a file whose captures
	// were all deleted keeps its name there, and may be gone).
	capFiles := map[string]bool{}
	if mi.captures != nil {
		err := mi.captures.ScanAll(ctx, dedupindex.Selector{Files: sel.Files}, func(en *captureindex.Entry) error {
			if !capFiles[en.File] {
				capFiles[en.File] = true
				consider(en.File)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("index relocate: %w", err)
		}
	}
	if joinErr != nil {
		return joinErr
	}
	for old, nw := range moves {
		if old == nw {
			delete(moves, old) // already there
		}
	}

	// Check every moved file before anything changes.
	targets := map[string][]verifyTarget{}
	if *digests {
		for _, en := range originals {
			o := en.Original
			targets[o.File] = append(targets[o.File], verifyTarget{what: "original", file: o.File, offset: o.Offset, length: o.Length, digest: o.Digest, recordID: o.RecordID})
		}
		if mi.captures != nil {
			err := mi.captures.ScanAll(ctx, dedupindex.Selector{Files: sel.Files}, func(en *captureindex.Entry) error {
				if en.Type == "response" || en.Type == "resource" || en.Type == "revisit" {
					targets[en.File] = append(targets[en.File], verifyTarget{what: "capture", file: en.File, offset: en.Offset, length: en.Length, digest: en.Digest, recordID: en.RecordID, revisit: en.IsRevisit()})
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("index relocate: %w", err)
			}
		}
	}
	olds := make([]string, 0, len(moves))
	for o := range moves {
		olds = append(olds, o)
	}
	sort.Strings(olds)
	var problems []string
	records := 0
	for _, old := range olds {
		if err := ctx.Err(); err != nil {
			return err
		}
		ps, n := checkRelocation(ctx, locs, old, moves[old], targets[old])
		problems = append(problems, ps...)
		records += n
	}
	res := struct {
		To        string   `json:"to"`
		Files     int      `json:"files"`
		Records   int      `json:"records_checked"`
		Originals int64    `json:"originals_moved"`
		Captures  int      `json:"capture_files_moved"`
		DryRun    bool     `json:"dry_run,omitempty"`
		Problems  []string `json:"problems"`
	}{To: base, Files: len(moves), Records: records, DryRun: *dry, Problems: problems}
	if res.Problems == nil {
		res.Problems = []string{}
	}
	report := func() error {
		if *asJSON {
			return writeJSONOut(e.stdout, res)
		}
		for _, p := range problems {
			fmt.Fprintln(e.stdout, p)
		}
		verb := "moved"
		if *dry || len(problems) > 0 {
			verb = "would move"
		}
		fmt.Fprintf(e.stdout, "index relocate: %d files to %s (%d records read there); %s %d originals and the captures of %d files\n",
			len(moves), base, records, verb, res.Originals, res.Captures)
		return nil
	}
	if len(problems) > 0 {
		if err := report(); err != nil {
			return err
		}
		return fmt.Errorf("index relocate: %d checks failed: nothing changed", len(problems))
	}
	if len(moves) == 0 {
		return report()
	}

	// The dedup index: compare-and-set per original, in batches.
	var mv []dedupindex.Move
	for _, en := range originals {
		if nw, ok := moves[en.Original.File]; ok {
			o := en.Original
			o.File = nw
			mv = append(mv, dedupindex.Move{Key: en.Key, From: en.Original.RecordID, To: o})
		}
	}
	if *dry {
		res.Originals = int64(len(mv))
		for _, old := range olds {
			if capFiles[old] {
				res.Captures++
			}
		}
		return report()
	}
	for i := 0; i < len(mv); i += relocateBatch {
		if err := failpoint.Inject("index.relocate-batch"); err != nil {
			return fmt.Errorf("index relocate: %w", err)
		}
		n, err := mi.maint.Update(ctx, mv[i:min(i+relocateBatch, len(mv))])
		res.Originals += n
		if err != nil {
			return fmt.Errorf("index relocate: %w (%d originals moved so far; run the command again to finish)", err, res.Originals)
		}
	}
	if mi.captures != nil {
		capMoves := map[string]string{}
		for old, nw := range moves {
			if capFiles[old] {
				capMoves[old] = nw
			}
		}
		n, err := mi.captures.Relocate(ctx, capMoves)
		if err != nil {
			return fmt.Errorf("index relocate: %w (the dedup index is relocated; run the command again to finish)", err)
		}
		res.Captures = n
	}
	return report()
}

// relocateBase checks the URL argument and returns it normalised: a
// directory path becomes a file:// URL.
func relocateBase(raw string) (string, error) {
	if !warcfile.IsURL(raw) {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", err
		}
		return (&url.URL{Scheme: "file", Path: abs}).String(), nil
	}
	if err := warcfile.CheckLocation(raw); err != nil {
		return "", err
	}
	return raw, nil
}

// sizeOf returns the size of an open WARC file.
func sizeOf(f warcfile.ReadFile) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// checkRelocation checks one moved file: present at nw with old's size,
// and (targets) each record the indexes name in it there with its
// digest. It returns the problems and the records read.
func checkRelocation(ctx context.Context, locs *warcfile.Locations, old, nw string, targets []verifyTarget) ([]string, int) {
	if !warcfile.IsURL(old) && len(locs.Dirs) == 0 {
		return []string{fmt.Sprintf("%s: give --warc-dir or --dir: where the file is now", old)}, 0
	}
	src, err := locs.Open(ctx, old)
	if err != nil {
		return []string{fmt.Sprintf("%s: cannot read it where the indexes find it now: %v", old, err)}, 0
	}
	defer src.Close()
	dst, err := locs.Open(ctx, nw)
	if err != nil {
		return []string{fmt.Sprintf("%s: not at its new location %s: %v", old, nw, err)}, 0
	}
	defer dst.Close()
	srcSize, err := sizeOf(src)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", old, err)}, 0
	}
	dstSize, err := sizeOf(dst)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", nw, err)}, 0
	}
	if srcSize != dstSize {
		return []string{fmt.Sprintf("%s: %d bytes, but %s has %d", old, srcSize, nw, dstSize)}, 0
	}
	var problems []string
	rd := new(warcio.Reader)
	for _, t := range targets {
		if p := verifyOne(rd, dst, t); p != "" {
			problems = append(problems, fmt.Sprintf("%s offset %d: %s at %s: %s", old, t.offset, t.what, nw, p))
		}
	}
	return problems, len(targets)
}
