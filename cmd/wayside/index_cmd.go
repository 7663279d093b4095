package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

const indexUsage = `<import|stats|lookup|delete|export|scopes|verify> [flags] [args]

  import [--index URL | --warc-dir DIR] [--scope NAME] [--match digest|url] [--format auto|warc|cdx|cdxj] [--strict] FILE...
      seed the dedup index from earlier crawls: HTTP responses of WARC files, or
      CDX / CDXJ lines. Revisits are never taken as originals.
  stats  [--index URL | --warc-dir DIR] [--check] [--json]
      count originals per scope; --check verifies the index's invariants.
  lookup [--index URL | --warc-dir DIR] [--scope NAME] DIGEST
      print the original for a payload digest (any encoding) as JSON, in
      every scope unless --scope names one, or "not found" (exit status 1).
  lookup [--index URL | --warc-dir DIR] [--scope NAME] --url URL [DIGEST]
      print the originals archived for URL, oldest first; with DIGEST, the
      original under the same-URL policy.
  delete [--index URL | --warc-dir DIR] [--captures DIR] SELECTOR... [--dry-run]
      delete the selected entries from the dedup index and the capture index
      (each entry atomically: an interrupted delete leaves each before or after).
  export [--index URL | --warc-dir DIR] [--what index|captures] [SELECTOR...] [-o FILE]
      write the selected entries as sorted CDXJ.
  scopes [--index URL | --warc-dir DIR] [--captures DIR]
      list the scopes of both indexes with their counts.
  verify [--index URL | --warc-dir DIR] [--dir DIR...] [--sample N] [SELECTOR...]
      read back the record each entry points at: the file exists, a record
      starts at the offset and has the entry's payload digest.
  relocate [--index URL | --warc-dir DIR] [--captures DIR] [--file NAME...] [--digests] URL
      rewrite the locations of moved WARC files in both indexes, after
      checking each is at URL with the same size (and, --digests, records).

SELECTOR: --file NAME (repeatable), --scope S, --url-prefix P, --from T, --to T
(every one given must match). --captures DIR names a capture index: by default
WARC-DIR/capture-index with --warc-dir, the daemon's with --index sidecar://...

--index names the index: a directory (the embedded pebble index), or a URL:
pebble:///DIR, redis://HOST:PORT,HOST:PORT/?prefix=P (a Redis Cluster shared
by a fleet), sidecar:///SOCKET or sidecar://HOST:PORT (a running daemon; the
token in WAYSIDE_TOKEN). It defaults to ./` + dedupindex.DefaultDir + `. --warc-dir DIR
selects the index of the crawl writing to DIR instead (DIR/` + crawl.IndexSubdir + `,
where ` + "`wayside crawl --warc-dir DIR`" + ` keeps it); give one of --index and
--warc-dir, not both.`

// errNotFound makes `index lookup` exit with status 1 after printing
// "not found".
var errNotFound = errors.New("index lookup: not found")

func runIndex(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "index", indexUsage, args, []subcommand{
		{"import", runIndexImport}, {"stats", runIndexStats}, {"lookup", runIndexLookup},
		{"delete", runIndexDelete}, {"export", runIndexExport}, {"scopes", runIndexScopes}, {"verify", runIndexVerify},
		{"relocate", runIndexRelocate}})
}

// indexURLFlags registers --index and --warc-dir on fs. The returned
// function, called after fs.Parse, gives the index URL they select.
func indexURLFlags(fs *flagSet, cmd string) func() (string, error) {
	dir := fs.String("index", dedupindex.DefaultDir, "index `URL`: a directory (embedded pebble), pebble:///DIR, redis://HOST:PORT,... or sidecar:///SOCKET")
	warcDir := fs.String("warc-dir", "", "use the dedup index of the crawl writing to `DIR` (DIR/"+crawl.IndexSubdir+"); excludes --index")
	return func() (string, error) {
		if *warcDir == "" {
			if _, err := dedupindex.ParseURL(*dir); err != nil {
				return "", fs.usagef("%s: --index: %v", cmd, err)
			}
			return *dir, nil
		}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "index" {
				*warcDir = ""
			}
		})
		if *warcDir == "" {
			return "", fs.usagef("%s: give --index or --warc-dir, not both", cmd)
		}
		if err := checkInputDir(cmd, "--warc-dir", *warcDir); err != nil {
			return "", err
		}
		return filepath.Join(*warcDir, crawl.IndexSubdir), nil
	}
}

// openIndex opens the index raw names through the backend registry. With
// mustExist, an embedded index must already exist (stats and lookup never
// create one).
func openIndex(ctx context.Context, e *env, raw string, mustExist bool) (dedupindex.Index, error) {
	u, err := dedupindex.ParseURL(raw)
	if err != nil {
		return nil, usagef("index: %v", err)
	}
	if u.Scheme == "pebble" {
		fi, err := os.Stat(u.Path)
		switch {
		case err == nil && !fi.IsDir():
			return nil, fmt.Errorf("index: %s is not a directory (an embedded index is a directory)", raw)
		case err != nil && mustExist:
			return nil, fmt.Errorf("index: no index at %s (use --index or --warc-dir, or import into it first)", raw)
		}
	}
	ix, err := dedupindex.OpenURL(ctx, raw, dedupindex.OpenOptions{Token: e.getenv("WAYSIDE_TOKEN")})
	if err != nil {
		if u.Scheme == "pebble" {
			return nil, fmt.Errorf("index: %w (is a crawl or the sidecar using it?)", err)
		}
		return nil, fmt.Errorf("index: %w", err)
	}
	return ix, nil
}

// shownURL is an index URL as printed: a bare directory as given, a URL
// without its password or token.
func shownURL(raw string) string {
	if u, err := dedupindex.ParseURL(raw); err == nil && u.Scheme != "pebble" {
		return dedupindex.Redact(u)
	}
	return raw
}

// checker is implemented by indexes that can verify their invariants
// (dedupindex/pebble).
type checker interface {
	Check(ctx context.Context) error
}

func runIndexImport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index import", "[flags] FILE...")
	indexURL := indexURLFlags(fs, "index import")
	scope := fs.String("scope", dedupindex.DefaultScope, "scope (collection) the originals are filed under")
	match := fs.String("match", "digest", "dedup matching the crawl will use: digest (URL-agnostic) or url (same URL)")
	format := fs.String("format", "auto", "input format: auto, warc, cdx or cdxj")
	strict := fs.Bool("strict", false, "stop at the first bad record")
	tolerate := tolerateFlag(fs)
	batch := fs.Int("batch", 1000, "originals per durable write")
	quiet := fs.quietFlag()
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	var in inputFlags
	in.register(fs)
	fs.atLeast("batch", 1)
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := indexURL()
	if err != nil {
		return err
	}
	if fs.NArg() == 0 && !in.given() {
		return fs.usagef("index import: no files given")
	}
	files, err := in.expand(ctx, e, "index import", fs.Args())
	defer in.close()
	if err != nil {
		return err
	}
	// Every input is checked before the index is opened (and, the first
	// time, created).
	if err := checkInputs("index import", files); err != nil {
		return err
	}
	m, err := dedupindex.ParseMatch(*match)
	if err != nil {
		return fs.usagef("index import: %v", err)
	}
	f, err := dedupindex.ParseFormat(*format)
	if err != nil {
		return fs.usagef("index import: %v", err)
	}
	// A file with nothing importable (binary, the wrong format) is refused
	// before the index is created too.
	for _, p := range files {
		if _, err := dedupindex.ProbeImport(p, f); err != nil {
			return fmt.Errorf("index import: %w", err)
		}
	}
	ix, err := openIndex(ctx, e, dir, false)
	if err != nil {
		return err
	}
	start := time.Now()
	last := start
	opts := dedupindex.ImportOptions{Scope: *scope, Match: m, Format: f, Strict: *strict, BatchSize: *batch}
	if !*quiet {
		opts.Progress = func(file string, s dedupindex.ImportStats) {
			if now := time.Now(); now.Sub(last) >= time.Second {
				last = now
				fmt.Fprintf(e.stderr, "import: %s: %d records read, %d originals added, %.1f MB, %s\n",
					file, s.Records, s.Originals, float64(s.Bytes)/1e6, now.Sub(start).Round(time.Second))
			}
		}
	}
	st, ierr := dedupindex.Import(ctx, ix, files, opts)
	cerr := ix.Close()
	for _, be := range st.Errors {
		fmt.Fprintln(e.stderr, "bad record:", be)
	}
	if st.Bad > int64(len(st.Errors)) {
		fmt.Fprintf(e.stderr, "... and %d more bad records\n", st.Bad-int64(len(st.Errors)))
	}
	if *asJSON {
		if err := printJSON(e.stdout, st); err != nil {
			return err
		}
	} else {
		printImportSummary(e.stdout, st, time.Since(start))
	}
	var pe *os.PathError
	if ierr != nil && fsutil.IsDiskFull(ierr) && errors.As(ierr, &pe) {
		// One line naming the cause, not Pebble's chain of prefixes.
		return fmt.Errorf("index import: the index's disk is full (%s: %w); the originals of every batch written before are kept: free space and run the same import again", pe.Path, pe.Err)
	}
	if ierr != nil {
		return fmt.Errorf("index import: %w", ierr)
	}
	if cerr != nil {
		return fmt.Errorf("index import: %w", cerr)
	}
	if st.Bad > 0 {
		return tolerated(e, *tolerate, fmt.Errorf("index import: %d bad records skipped (listed above); everything else was imported", st.Bad))
	}
	return nil
}

func printImportSummary(w io.Writer, st dedupindex.ImportStats, took time.Duration) {
	fmt.Fprintf(w, "files:             %d\n", len(st.Files))
	fmt.Fprintf(w, "records read:      %d\n", st.Records)
	fmt.Fprintf(w, "originals added:   %d\n", st.Originals)
	fmt.Fprintf(w, "already present:   %d\n", st.Present)
	fmt.Fprintf(w, "revisits skipped:  %d\n", st.Revisits)
	fmt.Fprintf(w, "other skipped:     %d\n", st.Skipped)
	fmt.Fprintf(w, "bad records:       %d\n", st.Bad)
	fmt.Fprintf(w, "time:              %s\n", took.Round(time.Millisecond))
}

func runIndexStats(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index stats", "[flags]")
	indexURL := indexURLFlags(fs, "index stats")
	check := fs.Bool("check", false, "verify the index's invariants")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := indexURL()
	if err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("index stats: unexpected arguments %q", fs.Args())
	}
	ix, err := openIndex(ctx, e, dir, true)
	if err != nil {
		return err
	}
	defer ix.Close()
	st, err := ix.Stats(ctx)
	if err != nil {
		return fmt.Errorf("index stats: %w", err)
	}
	var checkErr error
	if *check {
		c, ok := ix.(checker)
		if !ok {
			return fmt.Errorf("index stats: --check: the index at %s cannot verify its invariants (only the embedded pebble index can)", dir)
		}
		checkErr = c.Check(ctx)
		// The capture index a crawl keeps beside the dedup index is
		// checked too (its deletions are crash-safe the same way).
		if capDir := filepath.Join(filepath.Dir(dir), consumers.CaptureIndexSubdir); checkErr == nil && filepath.Base(dir) == crawl.IndexSubdir && isDir(capDir) {
			ci, err := captureindex.Open(capDir)
			if err != nil {
				return fmt.Errorf("index stats: --check: capture index %s: %w", capDir, err)
			}
			checkErr = ci.Check(ctx)
			ci.Close()
		}
	}
	if *asJSON {
		out := struct {
			dedupindex.Stats
			Dir     string `json:"dir"`
			Checked bool   `json:"checked,omitempty"`
			OK      *bool  `json:"ok,omitempty"`
		}{Stats: st, Dir: shownURL(dir), Checked: *check}
		if *check {
			ok := checkErr == nil
			out.OK = &ok
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "index:      %s\n", shownURL(dir))
		fmt.Fprintf(e.stdout, "originals:  %d\n", st.Originals)
		if st.DiskBytes > 0 { // a networked index (Redis, a sidecar) reports none
			fmt.Fprintf(e.stdout, "disk:       %.1f MB", float64(st.DiskBytes)/1e6)
			if st.Originals > 0 {
				fmt.Fprintf(e.stdout, " (%.0f B per original)", float64(st.DiskBytes)/float64(st.Originals))
			}
			fmt.Fprintln(e.stdout)
		}
		names := make([]string, 0, len(st.Scopes))
		for s := range st.Scopes {
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			fmt.Fprintf(e.stdout, "scope %-20q %d\n", s, st.Scopes[s])
		}
		if *check && checkErr == nil {
			fmt.Fprintln(e.stdout, "check:      ok")
		}
	}
	if checkErr != nil {
		return fmt.Errorf("index stats: %w", checkErr)
	}
	if st.Originals == 0 {
		// A mistyped prefix or path looks like this: say so (exit 1).
		return fmt.Errorf("index stats: the index at %s holds nothing (no original in any scope): check the path or the prefix", shownURL(dir))
	}
	return nil
}

func runIndexLookup(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "index lookup", "[flags] DIGEST | --url URL [DIGEST]")
	indexURL := indexURLFlags(fs, "index lookup")
	scope := fs.String("scope", "", "scope to look in (default: every scope of the index)")
	uri := fs.String("url", "", "look up by URL: the originals archived for it, or with DIGEST the same-URL original")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := indexURL()
	if err != nil {
		return err
	}
	if fs.NArg() > 1 || (fs.NArg() == 0 && *uri == "") {
		return fs.usagef("index lookup: want one DIGEST, or --url URL")
	}
	var dig string
	if fs.NArg() == 1 {
		d, err := digest.Normalize(fs.Arg(0))
		if err != nil {
			return fs.usagef("index lookup: %v", err)
		}
		dig = d
	}
	ix, err := openIndex(ctx, e, dir, true)
	if err != nil {
		return err
	}
	defer ix.Close()
	scopes := []string{*scope}
	where := fmt.Sprintf("in scope %q", *scope)
	if *scope == "" {
		// No scope given: every scope the index holds (a crawl with
		// --scope NAME files its originals under NAME).
		st, err := ix.Stats(ctx)
		if err != nil {
			return fmt.Errorf("index lookup: %w", err)
		}
		scopes = scopes[:0]
		for name := range st.Scopes {
			scopes = append(scopes, name)
		}
		sort.Strings(scopes)
		where = fmt.Sprintf("in any of the index's %d scopes", len(scopes))
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	found := 0
	for _, sc := range scopes {
		var origs []dedupindex.Original
		if dig == "" {
			if origs, err = ix.ByURL(ctx, sc, dedupindex.URLKey(*uri)); err != nil {
				return fmt.Errorf("index lookup: %w", err)
			}
		} else {
			k := dedupindex.Key{Scope: sc, Digest: dig}
			if *uri != "" {
				k.URL = dedupindex.URLKey(*uri)
			}
			o, ok, err := ix.Lookup(ctx, k)
			if err != nil {
				return fmt.Errorf("index lookup: %w", err)
			}
			if ok {
				origs = append(origs, o)
			}
		}
		for _, o := range origs {
			found++
			if err := enc.Encode(scopedOriginal{Scope: sc, Original: o}); err != nil {
				return err
			}
		}
	}
	if found > 0 {
		return nil
	}
	fmt.Fprintln(e.stdout, "not found")
	what := dig
	switch {
	case dig == "":
		what = "no original of " + *uri
	case *uri != "":
		what = dig + " for " + *uri
	}
	return fmt.Errorf("%w: %s %s", errNotFound, what, where)
}

// scopedOriginal is an original as `index lookup` prints it: with its scope.
type scopedOriginal struct {
	Scope string `json:"scope"`
	dedupindex.Original
}
