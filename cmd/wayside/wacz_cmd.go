package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/wacz"
	"github.com/wayside-archive/wayside/warcio"
)

const waczUsage = `<create|verify|pubkey> [flags] [args]

  create -o FILE.wacz [--seed URL]... [--title T] [--key KEY.pem | --no-sign]
         [--mementomap MAP] [--formats WARC] [--fixity MANIFEST] INPUT...
  create -o FILE.wacz --url URL [--match prefix] [--from TS] [--to TS] [--coll C] [--addr SOCK]
      the captures a running daemon's capture index holds for a URL
      prefix (exact, host, domain) and a date range, as the daemon builds
      and signs them (GET /<coll>/wacz), checked whole before it is kept.
      package WARC files (or the closed WARC files of a crawl's directory)
      as a WACZ 1.1.1: the WARCs stored uncompressed in archive/, a sorted
      CDXJ index (ZipNum past --zipnum-threshold bytes), pages with titles,
      datapackage.json with the sha256 of every resource, signed with
      Wayside's anonymous key (created under the user configuration
      directory on first use) unless --no-sign.
  verify [--allow-unsigned] [--trust PUBKEY]... [--json] FILE.wacz
      check every resource hash, the signature, every index line against
      the record it points at, and every page against the index; exit 0
      only if all holds. Each problem names the member it is in.
  pubkey [--key KEY.pem]
      print the public key (base64 DER) that signs, for --trust.`

func runWACZ(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "wacz", waczUsage, args, []subcommand{
		{"create", runWACZCreate}, {"verify", runWACZVerify}, {"pubkey", runWACZPubkey}})
}

type waczListFlag []string

func (l *waczListFlag) String() string     { return strings.Join(*l, " ") }
func (l *waczListFlag) Set(s string) error { *l = append(*l, s); return nil }

// waczKey loads the signing key at path, or Wayside's own key (created
// when missing) when path is "".
func waczKey(e *env, path string) (string, error) {
	if path != "" {
		return path, nil
	}
	if dir := e.getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "wayside", wacz.KeyFileName), nil
	}
	return wacz.DefaultKeyPath()
}

func runWACZCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "wacz create", "-o FILE.wacz [flags] INPUT...\n\nPackage WARC files (or a crawl's WARC directory) as a signed WACZ.")
	out := fs.String("o", "", "write the WACZ to `FILE` (must end in .wacz)")
	title := fs.String("title", "", "collection `TITLE` in datapackage.json")
	desc := fs.String("description", "", "collection `DESCRIPTION` in datapackage.json")
	var seeds waczListFlag
	fs.Var(&seeds, "seed", "seed `URL`: its captures and HTML pages on its host go to pages.jsonl, other pages to extraPages.jsonl (repeatable)")
	keyPath := fs.String("key", "", "sign with the ECDSA private key in `KEY.pem` (default: Wayside's own key in the user configuration directory, created on first use)")
	noSign := fs.Bool("no-sign", false, "do not sign datapackage-digest.json")
	threshold := fs.Int64("zipnum-threshold", wacz.DefaultZipNumThreshold, "write the index as ZipNum (index.cdx.gz + index.idx) past this many `BYTES` of CDXJ")
	mm := fs.String("mementomap", "", "add the collection's MementoMap `FILE` as wayside/mementomap.ukvs")
	formats := fs.String("formats", "", "add the format-identification metadata `WARC` as wayside/formats.warc.gz")
	fixity := fs.String("fixity", "", "add the latest fixity `MANIFEST` as wayside/fixity-manifest.json")
	var q waczQuery
	fs.StringVar(&q.url, "url", "", "instead of INPUTs: the captures of `URL` in a running daemon's capture index (with --match, --from, --to; the daemon builds and signs the WACZ)")
	fs.StringVar(&q.match, "match", "prefix", "with --url: exact, prefix, host or domain (the CDX API's matchType)")
	fs.StringVar(&q.from, "from", "", "with --url: captures from this `TIMESTAMP` (1-14 digits) on")
	fs.StringVar(&q.to, "to", "", "with --url: captures up to this `TIMESTAMP`")
	fs.StringVar(&q.coll, "coll", "default", "with --url: the daemon's `COLLECTION`")
	fs.StringVar(&q.addr, "addr", "", "with --url: the daemon (Unix socket or http://127.0.0.1:PORT; default $WAYSIDE_ADDR, then wayside-data/wayside.sock)")
	fs.StringVar(&q.tokenFile, "token-file", "", "with --url: read the daemon's API token from `FILE` (default $WAYSIDE_TOKEN)")
	quiet := fs.quietFlag()
	overwrite := overwriteFlag(fs)
	fs.atLeast("zipnum-threshold", 1)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fs.usagef("wacz create: -o FILE.wacz is required")
	}
	if !strings.HasSuffix(*out, ".wacz") {
		return fs.usagef("wacz create: -o %s: the name must end in .wacz", *out)
	}
	if q.url != "" {
		if fs.NArg() > 0 {
			return fs.usagef("wacz create: give --url or INPUT files, not both")
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for _, f := range []string{"key", "no-sign", "seed", "title", "description", "zipnum-threshold", "mementomap", "formats", "fixity"} {
			if set[f] {
				return fs.usagef("wacz create: --%s does not apply to --url (the daemon builds and signs the WACZ)", f)
			}
		}
		if err := checkOutput("wacz create", nil, *overwrite, outFile{"-o", *out}); err != nil {
			return err
		}
		return waczFromIndex(ctx, e, q, *out, *quiet)
	}
	if fs.NArg() == 0 {
		return fs.usagef("wacz create: no input WARC files or directories given")
	}
	if err := checkOutput("wacz create", fs.Args(), *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	inputs, err := waczInputFiles(fs.Args())
	if err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	if err := checkInputs("wacz create", inputs); err != nil {
		return err
	}
	opts := wacz.Options{
		Title: *title, Description: *desc, Seeds: seeds,
		Software:        "Wayside " + versionString(),
		ZipNumThreshold: *threshold,
		Log:             e.logger(false),
	}
	for _, x := range []struct{ flag, file, name string }{
		{"--mementomap", *mm, "mementomap.ukvs"}, {"--formats", *formats, "formats.warc.gz"}, {"--fixity", *fixity, "fixity-manifest.json"},
	} {
		if x.file == "" {
			continue
		}
		if err := checkInputs("wacz create "+x.flag, []string{x.file}); err != nil {
			return err
		}
		opts.Extras = append(opts.Extras, wacz.Extra{Name: x.name, File: x.file})
	}
	if !*noSign {
		p, err := waczKey(e, *keyPath)
		if err != nil {
			return err
		}
		key, created, err := wacz.LoadOrCreateKey(p)
		if err != nil {
			return err
		}
		if created && !*quiet {
			fmt.Fprintf(e.stderr, "wacz create: created a new signing key in %s\n", p)
		}
		opts.Key = key
	}
	res, err := wacz.Create(ctx, *out, inputs, opts)
	if err != nil {
		return err
	}
	for _, p := range res.Problems {
		fmt.Fprintln(e.stderr, "wacz create:", p)
	}
	if !*quiet {
		kind := "CDXJ"
		if res.ZipNum {
			kind = "ZipNum"
		}
		fmt.Fprintf(e.stderr, "wacz create: %s: %d WARC files, %d records, %d index lines (%s), %d pages + %d extra pages, %d bytes, signed=%v\n",
			*out, res.WARCs, res.Records, res.IndexLines, kind, res.Pages, res.ExtraPages, res.Bytes, res.Signed)
	}
	if len(res.Problems) > 0 {
		return fmt.Errorf("wacz create: %s written, but %d records could not be read or indexed (listed above)", *out, len(res.Problems))
	}
	return nil
}

// waczInputFiles expands WARC directories into their closed WARC files.
func waczInputFiles(args []string) ([]string, error) {
	var files, dirs []string
	for _, a := range args {
		if fi, err := os.Stat(a); err == nil && fi.IsDir() {
			dirs = append(dirs, a)
		} else {
			files = append(files, a)
		}
	}
	if len(dirs) == 0 {
		return files, nil
	}
	exp, err := wacz.ExpandInputs(dirs)
	if err != nil {
		return nil, err
	}
	return append(files, exp...), nil
}

func runWACZVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "wacz verify", "[flags] FILE.wacz\n\nCheck a WACZ: hashes, signature, index, pages. Exit 0 only if all holds.")
	allowUnsigned := fs.Bool("allow-unsigned", false, "accept a WACZ without a signature")
	var trust waczListFlag
	fs.Var(&trust, "trust", "accept only signatures by this public `KEY` (base64 DER as `wacz pubkey` prints it, or a file holding it; repeatable)")
	asJSON := fs.Bool("json", false, "print the report as JSON on stdout")
	quiet := fs.quietFlag("print nothing but problems")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.usagef("wacz verify: give exactly one WACZ file")
	}
	p := fs.Arg(0)
	if err := checkInputs("wacz verify", []string{p}); err != nil {
		return err
	}
	opts := wacz.VerifyOptions{AllowUnsigned: *allowUnsigned}
	for _, t := range trust {
		if b, err := os.ReadFile(t); err == nil {
			t = strings.TrimSpace(string(b))
		}
		opts.TrustedKeys = append(opts.TrustedKeys, t)
	}
	rep, err := wacz.Verify(ctx, p, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	}
	for _, pr := range rep.Problems {
		fmt.Fprintf(e.stderr, "wacz verify: %s: %s\n", p, pr)
	}
	if rep.Truncated {
		fmt.Fprintf(e.stderr, "wacz verify: %s: more problems not listed\n", p)
	}
	if !rep.OK() {
		return fmt.Errorf("wacz verify: %s: %d problems (first: %s)", p, len(rep.Problems), rep.Problems[0])
	}
	if !*quiet && !*asJSON {
		sig := "unsigned"
		if rep.Signed {
			sig = "signature valid, key " + rep.PublicKey
		}
		fmt.Fprintf(e.stdout, "%s: OK: %d resources (%d bytes) hashed, %d index lines checked against their records, %d pages found in the index, %s\n",
			p, rep.Resources, rep.Bytes, rep.IndexLines, rep.Pages, sig)
	}
	return nil
}

func runWACZPubkey(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "wacz pubkey", "[--key KEY.pem]\n\nPrint the public key that signs WACZ files.")
	keyPath := fs.String("key", "", "the ECDSA private key `KEY.pem` (default: Wayside's own key, created on first use)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("wacz pubkey: no arguments expected")
	}
	p, err := waczKey(e, *keyPath)
	if err != nil {
		return err
	}
	key, _, err := wacz.LoadOrCreateKey(p)
	if err != nil {
		return err
	}
	pub, err := wacz.PublicKey(key)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, pub)
	return nil
}

// openWACZInputs is the one hook through which commands that read WARC
// files accept WACZ files too: each input ending in ".wacz" is checked
// with wacz.Open (member names, counts, sizes: nothing is extracted) and
// replaced by its WARC files, named as warcio.JoinMember names them
// ("IN.wacz#archive/NAME.warc.gz"), which warcio.Open reads by range
// straight from the zip, in place; other inputs pass through. With
// copyOut (dedup run, whose rewrite checks its inputs by size and
// modification time on disk), the WARC files are instead copied out of
// the zip into a new temporary directory, under the same limits, and done
// removes the copies; call done when the command has finished reading.
func openWACZInputs(ctx context.Context, cmd string, paths []string, copyOut bool) (out []string, done func(), err error) {
	done = func() {}
	var work string
	for _, p := range paths {
		if !hasWACZ([]string{p}) {
			out = append(out, p)
			continue
		}
		if !copyOut {
			members, err := waczMembers(p)
			if err != nil {
				return nil, done, fmt.Errorf("%s: %w", cmd, err)
			}
			out = append(out, members...)
			continue
		}
		if work == "" {
			if work, err = os.MkdirTemp("", "wayside-wacz-"); err != nil {
				return nil, done, fmt.Errorf("%s: %w", cmd, err)
			}
			done = func() { os.RemoveAll(work) }
		}
		dir, err := os.MkdirTemp(work, "in-")
		if err != nil {
			done()
			return nil, func() {}, fmt.Errorf("%s: %w", cmd, err)
		}
		warcs, err := wacz.ExtractWARCs(ctx, p, dir, wacz.Limits{})
		if err != nil {
			done()
			return nil, func() {}, fmt.Errorf("%s: %w", cmd, err)
		}
		out = append(out, warcs...)
	}
	return out, done, nil
}

// waczMembers checks the WACZ at p and names its WARC files for reading
// by range (warcio.JoinMember).
func waczMembers(p string) ([]string, error) {
	a, err := wacz.Open(p, wacz.Limits{})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	var out []string
	for _, m := range a.WARCs() {
		if _, err := a.Range(m); err != nil {
			return nil, err
		}
		out = append(out, warcio.JoinMember(p, m))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("wacz: %s: no WARC files under archive/", p)
	}
	return out, nil
}

// hasWACZ reports whether any input is a WACZ file (openWACZInputs).
func hasWACZ(paths []string) bool {
	for _, p := range paths {
		if strings.HasSuffix(strings.ToLower(p), ".wacz") {
			return true
		}
	}
	return false
}

// checkWACZOutput checks `crawl --wacz FILE` before the crawl starts.
func checkWACZOutput(fs *flagSet, out string) error {
	if out == "" {
		return nil
	}
	if !strings.HasSuffix(out, ".wacz") {
		return fs.usagef("crawl: --wacz %s: the name must end in .wacz", out)
	}
	return checkOutput("crawl", nil, false, outFile{"--wacz", out})
}

// crawlWACZ packages the closed WARC files of a crawl's directory as a
// WACZ signed with Wayside's key, the crawl's seeds as pages' seeds and
// its live MementoMap, if any, as an extra resource.
func crawlWACZ(ctx context.Context, e *env, out, warcDir string, seeds []string, liveMap string, quiet bool) error {
	warcs, err := wacz.ExpandInputs([]string{warcDir})
	if err != nil {
		return fmt.Errorf("crawl: --wacz: %w", err)
	}
	p, err := waczKey(e, "")
	if err != nil {
		return err
	}
	key, _, err := wacz.LoadOrCreateKey(p)
	if err != nil {
		return err
	}
	opts := wacz.Options{Seeds: seeds, Key: key, Software: "Wayside " + versionString(), Title: "Crawl of " + strings.Join(seeds, " ")}
	if liveMap != "" {
		if _, err := os.Stat(liveMap); err == nil {
			opts.Extras = append(opts.Extras, wacz.Extra{Name: "mementomap.ukvs", File: liveMap})
		}
	}
	res, err := wacz.Create(ctx, out, warcs, opts)
	if err != nil {
		return fmt.Errorf("crawl: --wacz: %w", err)
	}
	for _, pr := range res.Problems {
		fmt.Fprintln(e.stderr, "crawl: --wacz:", pr)
	}
	if len(res.Problems) > 0 {
		return fmt.Errorf("crawl: --wacz: %s written, but %d records could not be read or indexed (listed above)", out, len(res.Problems))
	}
	if !quiet {
		fmt.Fprintf(e.stderr, "crawl: wrote %s: %d WARC files, %d index lines, %d pages + %d extra pages, signed\n", out, res.WARCs, res.IndexLines, res.Pages, res.ExtraPages)
	}
	return nil
}

// waczQuery is `wacz create --url`: a capture-index query of a daemon.
type waczQuery struct {
	url, match, from, to, coll, addr, tokenFile string
}

// waczFromIndex writes the WACZ a running daemon builds of the captures
// q selects (GET /<coll>/wacz, the CDX API's query parameters): streamed
// to a temporary file beside out, checked whole with wacz.Verify (every
// hash, every index line against its record, the signature when there is
// one), then renamed into place.
func waczFromIndex(ctx context.Context, e *env, q waczQuery, out string, quiet bool) error {
	switch q.match {
	case "exact", "prefix", "host", "domain":
	default:
		return usagef("wacz create: --match %q: want exact, prefix, host or domain", q.match)
	}
	c, err := dialDaemon(e, q.addr, q.tokenFile, client.WithTimeout(0))
	if err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	defer c.Close()
	v := url.Values{"url": {q.url}, "matchType": {q.match}}
	if q.from != "" {
		v.Set("from", q.from)
	}
	if q.to != "" {
		v.Set("to", q.to)
	}
	resp, err := c.Raw(ctx, "/"+url.PathEscape(q.coll)+"/wacz?"+v.Encode())
	if err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	defer resp.Body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, resp.Body)
	if err != nil {
		return fmt.Errorf("wacz create: reading the WACZ from the daemon: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("wacz create: the daemon sent %d of %d bytes", n, resp.ContentLength)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	rep, err := wacz.Verify(ctx, tmp.Name(), wacz.VerifyOptions{AllowUnsigned: true})
	if err != nil {
		return fmt.Errorf("wacz create: the WACZ the daemon sent: %w", err)
	}
	if !rep.OK() {
		return fmt.Errorf("wacz create: the WACZ the daemon sent does not verify: %v", rep.Problems[0])
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	ok = true
	if err := fsutil.SyncDir(filepath.Dir(out)); err != nil {
		return fmt.Errorf("wacz create: %w", err)
	}
	if !quiet {
		fmt.Fprintf(e.stderr, "wacz create: %s: %d index lines, %d pages, %d bytes from %s's index\n", out, rep.IndexLines, rep.Pages, n, q.coll)
	}
	return nil
}
