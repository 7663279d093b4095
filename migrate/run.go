package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcio"
)

// RunOptions describe one migration run over a set of files.
type RunOptions struct {
	// Files are the input WARC or ARC files (paths); Targets what Locate
	// found in them.
	Files   []string
	Targets []Target
	// Workflow is Conversion or Replace.
	Workflow string
	// OutDir receives the outputs; WorkDir (PrepareWork) is where they
	// are finished, and where converters run.
	OutDir, WorkDir string
	// Notify, when set, receives what the caller may want to tell: an
	// output kept from an earlier run, links rewritten.
	Notify func(format string, a ...any)
}

// RunResult is what a run did.
type RunResult struct {
	Outcomes []Outcome `json:"outcomes"`
	// Written are the outputs this run wrote (each with its CDXJ index
	// beside it, cdxj.SideFileName).
	Written []string `json:"written"`
	// Kept are outputs an earlier run had written completely.
	Kept []string `json:"kept,omitempty"`
}

// Counts are the outcomes per status.
func (r RunResult) Counts() map[string]int {
	c := map[string]int{}
	for _, oc := range r.Outcomes {
		c[oc.Status]++
	}
	return c
}

// PrepareWork empties and creates the work area of outDir
// (OUTDIR/.wayside-migrate-work: a killed run's converter directories and
// unfinished outputs are removed) and returns its absolute path.
func PrepareWork(outDir string) (string, error) {
	work, err := filepath.Abs(filepath.Join(outDir, ".wayside-migrate-work"))
	if err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	if err := os.RemoveAll(work); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	return work, nil
}

func (o *RunOptions) notify(format string, a ...any) {
	if o.Notify != nil {
		o.Notify(format, a...)
	}
}

// Run migrates the targets of the files and writes the outputs of the
// workflow into OutDir: each finished in the work area with its CDXJ
// index and renamed into place (index first), so that OutDir never holds
// a partial file. An output that exists is kept (a complete earlier run)
// and its file not migrated again.
func (m *Migrator) Run(ctx context.Context, o RunOptions) (RunResult, error) {
	byFile := map[string][]Target{}
	for _, t := range o.Targets {
		byFile[t.File] = append(byFile[t.File], t)
	}
	bases := make([]string, len(o.Files))
	for i, f := range o.Files {
		bases[i] = strings.TrimSuffix(filepath.Base(f), warcio.OpenSuffix)
	}
	if o.Workflow == Replace {
		return m.runReplace(ctx, &o, bases, byFile)
	}
	if o.Workflow != Conversion {
		return RunResult{}, fmt.Errorf("migrate: workflow %q: want conversion or replace", o.Workflow)
	}
	var res RunResult
	for i, f := range o.Files {
		ts := byFile[bases[i]]
		if len(ts) == 0 {
			continue
		}
		dst := filepath.Join(o.OutDir, OutputName(bases[i], Conversion))
		if _, err := os.Stat(dst); err == nil {
			o.notify("%s exists: kept (a complete earlier run); %s not migrated again", dst, f)
			res.Kept = append(res.Kept, dst)
			continue
		}
		ocs, err := m.MigrateFile(ctx, bases[i], ts)
		if err != nil {
			return res, err
		}
		n := 0
		for _, oc := range ocs {
			if oc.Status == StatusMigrated {
				n++
			}
		}
		if n > 0 {
			tmp := filepath.Join(o.WorkDir, filepath.Base(dst))
			if _, err = WriteConversion(tmp, f, ocs, WriteOptions{Pathways: m.o.Pathways}); err != nil {
				return res, err
			}
			if err := publish(tmp, dst, o.OutDir); err != nil {
				return res, err
			}
			res.Written = append(res.Written, dst)
		}
		for j := range ocs {
			ocs[j].Result = nil
		}
		res.Outcomes = append(res.Outcomes, ocs...)
	}
	return res, nil
}

// runReplace is the replace workflow over all input files. Links from one
// file's HTML to objects migrated in another are rewritten too, so every
// file is migrated first (results kept in the work area, not in memory),
// then every input is copied — the ones that hold neither a migrated
// object nor a link to one produce no output.
func (m *Migrator) runReplace(ctx context.Context, o *RunOptions, bases []string, byFile map[string][]Target) (RunResult, error) {
	var res RunResult
	// The URIs captured in the inputs (from the store): new URIs avoid them.
	taken := map[string]bool{}
	for _, b := range bases {
		for _, r := range m.o.Store.Records(b) {
			if r.URI != "" {
				taken[NormURI(r.URI)] = true
			}
		}
	}
	plan := PlanRenames(o.Targets, m.o.Pathways, func(s string) bool { return taken[NormURI(s)] })
	renames := Renames{}
	refs := map[string]MigratedRef{} // "FILE OFFSET" of a migrated original → its new record
	dsts := make([]string, len(o.Files))
	kept := make([]bool, len(o.Files))
	perFile := make([][]Outcome, len(o.Files))
	results := map[[2]int]string{} // file, outcome → result file in the work area
	for i, f := range o.Files {
		dsts[i] = filepath.Join(o.OutDir, OutputName(bases[i], Replace))
		if _, err := os.Stat(dsts[i]); err == nil {
			// Kept from an earlier run: its renamed objects are the planned
			// URIs it holds.
			kept[i] = true
			res.Kept = append(res.Kept, dsts[i])
			o.notify("%s exists: kept (a complete earlier run); %s not migrated again", dsts[i], f)
			written, err := keptRecords(dsts[i])
			if err != nil {
				return res, err
			}
			for _, r := range m.o.Store.Records(bases[i]) {
				if r.IsRevisit() {
					continue
				}
				n, renamed := plan[NormURI(r.URI)]
				if !renamed {
					n = r.URI
				}
				// The record the earlier run wrote for r, if it wrote one
				// anew: a record at its new URI, or at its URI with
				// another record ID (migrated, links rewritten).
				ref, ok := written[NormURI(n)+" "+r.Date.UTC().Format(time.RFC3339Nano)]
				switch {
				case !ok:
				case renamed && migratedIn(byFile[bases[i]], r.Offset):
					renames.Add(r.URI, n)
					refs[fmt.Sprintf("%s %d", r.File, r.Offset)] = ref
				case !renamed && ref.RecordID != "" && ref.RecordID != r.RecordID:
					refs[fmt.Sprintf("%s %d", r.File, r.Offset)] = ref
				}
			}
			continue
		}
		ts := byFile[bases[i]]
		if len(ts) == 0 {
			continue
		}
		ocs, err := m.MigrateFile(ctx, bases[i], ts)
		if err != nil {
			return res, err
		}
		for j := range ocs {
			oc := &ocs[j]
			if oc.Status == StatusMigrated && len(oc.Path) == 0 {
				if n, ok := plan[NormURI(oc.URI)]; ok {
					renames.Add(oc.URI, n)
				}
			}
			if oc.Result != nil {
				p := filepath.Join(o.WorkDir, fmt.Sprintf("result-%d-%d", i, j))
				if err := os.WriteFile(p, oc.Result, 0o600); err != nil {
					return res, fmt.Errorf("migrate: %w", err)
				}
				results[[2]int{i, j}] = p
				oc.Result = nil
			}
		}
		perFile[i] = ocs
		res.Outcomes = append(res.Outcomes, ocs...)
	}
	// Files are copied originals first, so that a revisit's copy can refer
	// to its original's new record.
	for _, i := range originalsFirst(m.o.Store, bases) {
		f := o.Files[i]
		if kept[i] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		ocs := perFile[i]
		for j := range ocs {
			if p, ok := results[[2]int{i, j}]; ok {
				b, err := os.ReadFile(p)
				if err != nil {
					return res, fmt.Errorf("migrate: %w", err)
				}
				ocs[j].Result = b
			}
		}
		// Revisits of migrated originals (the store knows each revisit's
		// original).
		revisits := map[int64]MigratedRef{}
		for _, r := range m.o.Store.Records(bases[i]) {
			if ref, ok := refs[r.Original]; ok && r.IsRevisit() {
				revisits[r.Offset] = ref
			}
		}
		tmp := filepath.Join(o.WorkDir, filepath.Base(dsts[i]))
		stats, err := WriteReplace(tmp, f, ocs, WriteOptions{Pathways: m.o.Pathways, Renames: renames, Decode: m.Decode, Revisits: revisits})
		for j := range ocs {
			ocs[j].Result = nil
		}
		if err != nil {
			return res, err
		}
		for _, u := range stats.Unchecked {
			o.notify("links not checked in %s", u)
		}
		for off, ref := range stats.Refs {
			refs[fmt.Sprintf("%s %d", bases[i], off)] = ref
		}
		if !stats.Changed() {
			os.Remove(tmp)
			continue
		}
		if err := publish(tmp, dsts[i], o.OutDir); err != nil {
			return res, err
		}
		res.Written = append(res.Written, dsts[i])
		if stats.Links > 0 {
			o.notify("%s: %d links in %d HTML/CSS records point at the migrated objects now", dsts[i], stats.Links, stats.Rewritten)
		}
	}
	return res, nil
}

// migratedIn tells whether a payload target of ts is at offset.
func migratedIn(ts []Target, offset int64) bool {
	for _, t := range ts {
		if t.Offset == offset && len(t.Path) == 0 {
			return true
		}
	}
	return false
}

// originalsFirst orders the files (indexes of bases) so that the files
// holding the originals of a file's revisits come before it, as far as
// the store knows them (a cycle keeps the given order).
func originalsFirst(st *characterize.Store, bases []string) []int {
	index := map[string]int{}
	for i, b := range bases {
		index[b] = i
	}
	deps := make([][]int, len(bases))
	for i, b := range bases {
		seen := map[int]bool{}
		for _, r := range st.Records(b) {
			if !r.IsRevisit() || r.Original == "" {
				continue
			}
			file, _, _ := strings.Cut(r.Original, " ")
			if j, ok := index[file]; ok && j != i && !seen[j] {
				seen[j] = true
				deps[i] = append(deps[i], j)
			}
		}
	}
	state := make([]int, len(bases)) // 0 new, 1 visiting, 2 done
	var order []int
	var visit func(int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		for _, j := range deps[i] {
			visit(j)
		}
		state[i] = 2
		order = append(order, i)
	}
	for i := range bases {
		visit(i)
	}
	return order
}

// keptRecords are the response and resource records of an output an
// earlier run wrote, by "NormURI(URI) DATE" (RFC 3339, UTC), as
// MigratedRefs (the payload digest as declared).
func keptRecords(path string) (map[string]MigratedRef, error) {
	r, err := warcio.Open(path, warcio.Options{SkipPayloadDigest: true})
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer r.Close()
	out := map[string]MigratedRef{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		if rec.TargetURI == "" || (rec.Type != "response" && rec.Type != "resource") {
			continue
		}
		out[NormURI(rec.TargetURI)+" "+rec.Date.UTC().Format(time.RFC3339Nano)] = MigratedRef{URI: rec.TargetURI, RecordID: rec.RecordID,
			PayloadDigest: rec.Headers.Get("WARC-Payload-Digest"), MIME: rec.MIME, Size: rec.PayloadLength}
	}
}

// publish moves an output finished in the work area (tmp) to dst in
// outDir, CDXJ index first: a killed run leaves nothing in outDir but
// complete files, each WARC file with its index.
func publish(tmp, dst, outDir string) error {
	if err := indexBeside(tmp); err != nil {
		return err
	}
	if err := os.Rename(cdxj.SideFileName(tmp), cdxj.SideFileName(dst)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := fsutil.SyncDir(outDir); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// indexBeside writes the CDXJ side file of the WARC file at path
// (cdxj.SideFileName: NAME.warc.gz.cdxj), sorted, so the output can be
// added to a capture index or replayed by pywb as it is.
func indexBeside(path string) error {
	var problems []error
	err := cdxj.RebuildSideFile(cdxj.SideFileName(path), func(add func(*cdxj.Line) error) error {
		st, err := cdxj.IndexFile(context.Background(), path, cdxj.IndexOptions{}, add)
		problems = st.Problems
		return err
	})
	if err == nil && len(problems) > 0 {
		err = errors.Join(problems...)
	}
	if err != nil {
		return fmt.Errorf("migrate: index %s: %w", path, err)
	}
	return nil
}
