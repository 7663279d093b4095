package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/migrate"
	"github.com/wayside-archive/wayside/warcio"
)

const migrateUsage = `-o OUTDIR [--puid LIST | --risk-threshold X] [--workflow conversion|replace] [flags] FILE...
       wayside migrate risk [--risk FILE] [--weight Q=W]... [--json]
       wayside migrate pathways [--pathways FILE] [--json]

Finds the payloads of the WARC files whose format is at risk — the PUIDs of
--puid, or the formats the risk registry rates at --risk-threshold or more —
through the characterization store (--store DIR; files it does not hold yet
are characterized first, files it holds are not read to locate anything),
converts each with the pathway for its format (ImageMagick, FFmpeg,
Ghostscript, LibreOffice by default; --pathways FILE for your own), in a sandbox (time
and memory limits, no network, private temporary directory), validates the
result (the target format identified; image size and histograms, page
count, or duration and streams compared with the original), and writes:

  --workflow conversion   OUTDIR/NAME.conversion.warc.gz: a conversion record
                          per migration (WARC-Refers-To the original, same
                          WARC-Target-URI) and a metadata record with its
                          provenance (pathway, tool, version, validation)
  --workflow replace      OUTDIR/NAME.migrated.warc.gz (.arc.gz for ARC): a copy
                          with the migrated payloads at URLs of the new
                          extension (a 301 at the old), links in HTML and CSS
                          rewritten to them, every other record byte for byte

A CDXJ index of each output is written beside it (NAME.warc.gz.cdxj). Inputs are
never modified; outputs are written whole or not at all, and an output that
exists already is kept (a re-run after a crash completes the rest).
--report FILE writes every located object with its outcome as JSON. Exit 1
when any located object was not migrated (each is named on stderr).

risk prints the registry with the risk value of every format (--json: the
registry itself, a starting point for --risk FILE); pathways prints the
pathways (--json: a starting point for --pathways FILE).`

func runMigrate(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "risk" {
		return runMigrateRisk(e, args[1:])
	}
	if len(args) > 0 && args[0] == "pathways" {
		return runMigratePathways(e, args[1:])
	}
	fs := newFlagSet(e, "migrate", migrateUsage)
	out := fs.String("o", "", "write the output WARC files to `DIR` (created if needed)")
	puids := fs.String("puid", "", "comma-separated `PUIDs` to migrate")
	threshold := fs.Float64("risk-threshold", 0.5, "migrate the formats whose risk is at least `X` (0–1), when --puid is not given")
	riskFile := fs.String("risk", "", "risk registry `FILE` (JSON; default: the built-in registry of web formats)")
	var weights fixityListFlag
	fs.Var(&weights, "weight", "override a risk question's weight, `QUESTION=W` (repeatable)")
	pathFile := fs.String("pathways", "", "pathway registry `FILE` (JSON; default: the built-in pathways)")
	workflow := fs.String("workflow", migrate.Conversion, "conversion (conversion records) or replace (migrated copies)")
	store := fs.String("store", "", "characterization store `DIR` (default: in memory, inputs characterized first)")
	timeout := fs.Duration("timeout", 2*time.Minute, "time limit of one converter run")
	memMB := fs.Int64("memory-mb", 2048, "address-space limit of a converter, in `MB`")
	maxUnpacked := fs.Int64("max-unpacked-mb", 1024, "unpack at most `MB` from one record's zip levels (objects beyond are reported)")
	allowNet := fs.Bool("allow-network", false, "run converters even where they cannot be cut off from the network")
	dryRun := fs.Bool("dry-run", false, "list what would be migrated; convert nothing")
	report := fs.String("report", "", "write every located object and its outcome to `FILE` as JSON")
	quiet := fs.quietFlag()
	var cf charFlags
	cf.register(fs)
	fs.atLeast("memory-mb", 16)
	fs.atLeast("max-unpacked-mb", 1)
	fs.within("risk-threshold", 0, 1)
	fs.atLeast("timeout", float64(time.Second))
	if err := fs.Parse(args); err != nil {
		return err
	}
	files := fs.Args()
	switch {
	case *out == "" && !*dryRun:
		return fs.usagef("migrate: -o OUTDIR is required")
	case len(files) == 0:
		return fs.usagef("migrate: no input files")
	case *workflow != migrate.Conversion && *workflow != migrate.Replace:
		return fs.usagef("migrate: --workflow %q: want conversion or replace", *workflow)
	case *threshold < 0 || *threshold > 1:
		return fs.usagef("migrate: --risk-threshold %v: want a number from 0 to 1", *threshold)
	}
	if err := checkInputs("migrate", files); err != nil {
		return err
	}
	model, err := riskModel(*riskFile, weights)
	if err != nil {
		return err
	}
	pathways, err := pathwayRegistry(*pathFile)
	if err != nil {
		return err
	}
	var list []string
	if *puids != "" {
		for _, p := range strings.Split(*puids, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
	}
	selected := migrate.SelectPUIDs(list, model, *threshold)
	if len(selected) == 0 {
		return fmt.Errorf("migrate: no format selected (no registry format has a risk of %v or more)", *threshold)
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		for _, f := range files {
			if same, _ := sameDir(filepath.Dir(f), *out); same {
				return fmt.Errorf("migrate: -o %s is the directory of input %s: write outputs elsewhere", *out, f)
			}
		}
	}

	// Locate through the store: characterize only what it lacks.
	dirs := inputDirs(files)
	c, st, err := openCharacterizer(&cf, *store, dirs, characterize.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var need []string
	bases := make([]string, len(files))
	for i, f := range files {
		bases[i] = strings.TrimSuffix(filepath.Base(f), warcio.OpenSuffix)
		fi, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if sum, _, ok := st.Container(bases[i]); !ok || sum.ScannedSize != fi.Size() {
			need = append(need, f)
		}
	}
	if len(need) > 0 {
		if !*quiet {
			fmt.Fprintf(e.stderr, "migrate: characterizing %d of %d files the store does not hold\n", len(need), len(files))
		}
		if _, _, err := scanWARCs(ctx, e, c, need, 2, true, true); err != nil {
			return err
		}
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	targets, lstats := migrate.Locate(st, bases, selected)
	if !*quiet {
		fmt.Fprintf(e.stderr, "migrate: %d objects of %d selected formats in %d of %d files (store: %d records read)\n",
			len(targets), len(selected), lstats.Containers, len(files), lstats.Records)
	}
	if *dryRun {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tOFFSET\tPUID\tURI\tPATH")
		for _, t := range targets {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.File, t.Offset, t.PUID, t.URI, strings.Join(t.Path, " → "))
		}
		return tw.Flush()
	}

	work, err := migrate.PrepareWork(*out)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	sb, err := migrate.NewSandbox(ctx, migrate.Limits{Timeout: *timeout, Memory: *memMB << 20}, work, *allowNet)
	if err != nil {
		return err
	}
	if !sb.Isolated {
		fmt.Fprintln(e.stderr, "migrate: WARNING: converters run WITH network access (--allow-network)")
	}
	eng, err := characterize.NewEngine()
	if err != nil {
		return err
	}
	m, err := migrate.New(migrate.Options{Store: st, Identifer: characterize.NewIdentifier(eng, cf.limits()), Pathways: pathways,
		Sandbox: sb, Dirs: dirs, Logger: e.logger(false), MaxDepth: cf.maxDepth, MaxExpanded: *maxUnpacked << 20})
	if err != nil {
		return err
	}
	res, err := m.Run(ctx, migrate.RunOptions{Files: files, Targets: targets, Workflow: *workflow, OutDir: *out, WorkDir: work,
		Notify: func(format string, a ...any) { fmt.Fprintf(e.stderr, "migrate: "+format+"\n", a...) }})
	if err != nil {
		return err
	}
	all, written := res.Outcomes, res.Written
	// Re-ingest: the outputs are characterized into the store, so their
	// formats (the migrated ones) answer queries like any other file's.
	if *store != "" && len(written) > 0 {
		if _, _, err := scanWARCs(ctx, e, c, written, 2, true, true); err != nil {
			return err
		}
	}
	err = c.Close()
	c = nil
	if err != nil {
		return err
	}
	if *report != "" {
		if err := fsutil.WriteFileAtomic(*report, 0o644, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				Selected []string          `json:"selected_puids"`
				Workflow string            `json:"workflow"`
				Outputs  []string          `json:"outputs"`
				Outcomes []migrate.Outcome `json:"outcomes"`
			}{selected, *workflow, written, all})
		}); err != nil {
			return fmt.Errorf("migrate: report: %w", err)
		}
	}
	counts := map[string]int{}
	for _, oc := range all {
		counts[oc.Status]++
		if oc.Status != migrate.StatusMigrated {
			fmt.Fprintf(e.stderr, "migrate: %s offset %d (%s, %s): %s: %s\n", oc.File, oc.Offset, oc.URI, oc.PUID, oc.Status, oc.Reason)
		}
	}
	if !*quiet {
		var parts []string
		for _, k := range sortedKeys(counts) {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
		fmt.Fprintf(e.stdout, "migrate: %d objects located: %s; %d files written\n", len(all), strings.Join(parts, ", "), len(written))
		for _, w := range written {
			fmt.Fprintf(e.stdout, "  %s\n", w)
		}
	}
	if bad := len(all) - counts[migrate.StatusMigrated]; bad > 0 {
		return fmt.Errorf("migrate: %d of %d located objects not migrated (named above)", bad, len(all))
	}
	return nil
}

func runMigrateRisk(e *env, args []string) error {
	fs := newFlagSet(e, "migrate risk", "[--risk FILE] [--weight Q=W]... [--json]")
	riskFile := fs.String("risk", "", "risk registry `FILE` (default: built in)")
	var weights fixityListFlag
	fs.Var(&weights, "weight", "override a question's weight, `QUESTION=W` (repeatable)")
	asJSON := fs.Bool("json", false, "print the registry as JSON (the format --risk reads)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	model, err := riskModel(*riskFile, weights)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(model)
	}
	type row struct {
		puid, name string
		risk       float64
	}
	var rows []row
	for p, f := range model.Formats {
		r, _ := model.Risk(p)
		rows = append(rows, row{p, f.Name, r})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].risk != rows[j].risk {
			return rows[i].risk > rows[j].risk
		}
		return rows[i].puid < rows[j].puid
	})
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RISK\tPUID\tFORMAT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%.2f\t%s\t%s\n", r.risk, r.puid, r.name)
	}
	return tw.Flush()
}

// inputDirs are the directories of files, each once.
func inputDirs(files []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		d := filepath.Dir(f)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

func runMigratePathways(e *env, args []string) error {
	fs := newFlagSet(e, "migrate pathways", "[--pathways FILE] [--json]")
	pathFile := fs.String("pathways", "", "pathway registry `FILE` (default: built in)")
	asJSON := fs.Bool("json", false, "print the registry as JSON (the format --pathways reads)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pw, err := pathwayRegistry(*pathFile)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(pw)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATHWAY\tKIND\tTOOL\tSOURCES\tTARGETS")
	for _, p := range pw.List {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Kind, p.Tool, strings.Join(p.Sources, ","), strings.Join(p.Targets, ","))
	}
	return tw.Flush()
}

// riskModel is the risk registry of --risk FILE (default: built in) with
// the --weight overrides.
func riskModel(file string, weights []string) (*migrate.RiskModel, error) {
	model := migrate.DefaultRiskModel()
	if file != "" {
		m, err := migrate.LoadRiskModel(file)
		if err != nil {
			return nil, err
		}
		model = m
	}
	if err := model.SetWeights(weights); err != nil {
		return nil, err
	}
	return model, nil
}

// pathwayRegistry is the pathway registry of --pathways FILE (default:
// built in).
func pathwayRegistry(file string) (*migrate.Pathways, error) {
	if file == "" {
		return migrate.DefaultPathways(), nil
	}
	return migrate.LoadPathways(file)
}
