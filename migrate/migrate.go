package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// Workflows: the study's two ways of writing migrations back.
const (
	// Conversion is the formally correct workflow: a new WARC file of
	// conversion records referring to the originals.
	Conversion = "conversion"
	// Replace is the pragmatic workflow: a copy of the WARC file with the
	// migrated payloads in place of the originals.
	Replace = "replace"
)

// Target is one object at risk: a record's payload (Path empty) or an
// object nested inside it.
type Target struct {
	File     string    `json:"file"`
	Offset   int64     `json:"offset"`
	URI      string    `json:"uri"`
	Date     time.Time `json:"date"`
	RecordID string    `json:"record_id,omitempty"`
	Type     string    `json:"type"`
	PUID     string    `json:"puid"`
	// Path is the object's path inside the payload (nested objects).
	Path []string `json:"path,omitempty"`
}

// LocateStats count what Locate read from the store.
type LocateStats struct {
	// Containers is the number of files the store's aggregates named;
	// Records the records of those files it returned.
	Containers, Records int
}

// Locate returns the objects of the selected formats in files (base
// names; all files the store knows when empty), through the store's
// per-container aggregates and per-record table: the WARC files
// themselves are not read. Revisits are not targets: they hold no payload
// (their original is one).
func Locate(st *characterize.Store, files []string, puids []string) ([]Target, LocateStats) {
	var stats LocateStats
	want := map[string]bool{}
	for _, p := range puids {
		want[p] = true
	}
	only := map[string]bool{}
	for _, f := range files {
		only[f] = true
	}
	var out []Target
	for _, hit := range st.Risk(puids...) {
		if len(only) > 0 && !only[hit.File] {
			continue
		}
		stats.Containers++
		for _, r := range st.Records(hit.File, puids...) {
			stats.Records++
			if r.IsRevisit() {
				continue
			}
			base := Target{File: r.File, Offset: r.Offset, URI: r.URI, Date: r.Date, RecordID: r.RecordID, Type: r.Type}
			if want[r.PUID] {
				t := base
				t.PUID = r.PUID
				out = append(out, t)
			}
			for _, n := range r.Nested {
				if want[n.PUID] {
					t := base
					t.PUID, t.Path = n.PUID, n.Path
					out = append(out, t)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Offset < out[j].Offset
	})
	return out, stats
}

// Outcome statuses.
const (
	StatusMigrated  = "migrated"
	StatusFailed    = "failed"     // conversion or validation failed
	StatusNoPathway = "no-pathway" // no pathway takes the format
	StatusNested    = "nested"     // inside a container not opened (not a zip, or beyond MaxDepth): located, not migrated
)

// Outcome is what happened to one target.
type Outcome struct {
	Target
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Pathway string `json:"pathway,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// Result is the migrated object (StatusMigrated only). For members of
	// a zip payload, the first migrated member's outcome carries the
	// rebuilt zip (ResultMIME its media type) and the others none.
	Result     []byte      `json:"-"`
	ResultMIME string      `json:"result_mime,omitempty"`
	ResultSize int         `json:"result_size,omitempty"`
	Validation *Validation `json:"validation,omitempty"`
	// NewRecordID is the record the result was written in.
	NewRecordID string `json:"new_record_id,omitempty"`
}

// Options configure a Migrator.
type Options struct {
	Store     *characterize.Store
	Identifer *characterize.Identifier
	Pathways  *Pathways
	Sandbox   *Sandbox
	Tools     *Tools
	// Dirs are searched for the WARC files (warcfile.Locations: a file
	// may also be one stored in a WACZ, or a location URL).
	Dirs []string
	// MaxObject is the largest payload migrated (default 256 MiB), also
	// the largest object read from a zip.
	MaxObject int64
	// MaxDepth is how many zip levels are opened to migrate nested
	// objects (default 3, the depth the characterization store locates);
	// deeper objects are reported StatusNested.
	MaxDepth int
	// MaxExpanded bounds the bytes unpacked from one record's zip levels
	// (default 1 GiB): objects beyond it are reported failed.
	MaxExpanded int64
	Logger      *slog.Logger
}

// Migrator converts and validates targets.
type Migrator struct {
	o Options
	v *Validator
}

// New returns a Migrator.
func New(o Options) (*Migrator, error) {
	if o.Store == nil || o.Identifer == nil || o.Pathways == nil || o.Sandbox == nil {
		return nil, errors.New("migrate: Store, Identifier, Pathways and Sandbox are required")
	}
	if o.Tools == nil {
		o.Tools = &Tools{}
	}
	if o.MaxObject <= 0 {
		o.MaxObject = 256 << 20
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 3
	}
	if o.MaxExpanded <= 0 {
		o.MaxExpanded = 1 << 30
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Migrator{o: o, v: &Validator{Engine: o.Identifer.Engine(), Sandbox: o.Sandbox, Tools: o.Tools}}, nil
}

// MigrateFile converts and validates the targets of one file (all of them
// from that file), returning one outcome per target. Failures of a
// target are outcomes; the error is for the file (unreadable, context
// cancelled).
func (m *Migrator) MigrateFile(ctx context.Context, file string, targets []Target) ([]Outcome, error) {
	locs := warcfile.NewLocations(m.o.Dirs)
	defer locs.Close()
	f, err := locs.Open(ctx, file) // a base name in Dirs, a WARC file in a WACZ, a location URL
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer f.Close()
	var rd warcio.Reader
	out := make([]Outcome, 0, len(targets))
	nested := map[int64][]Target{}
	for _, t := range targets {
		if len(t.Path) > 0 {
			nested[t.Offset] = append(nested[t.Offset], t)
		}
	}
	done := map[int64]bool{}
	for _, t := range targets {
		if len(t.Path) > 0 {
			if !done[t.Offset] {
				done[t.Offset] = true
				out = append(out, m.nestedZip(ctx, &rd, f, nested[t.Offset])...)
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		oc := Outcome{Target: t}
		p, ok := m.o.Pathways.For(t.PUID)
		switch {
		case !ok:
			oc.Status, oc.Reason = StatusNoPathway, "no pathway converts "+t.PUID
		default:
			oc.Pathway = p.Name
			m.one(ctx, &rd, f, p, &oc)
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if oc.Status != StatusMigrated {
			m.o.Logger.Debug("migrate: not migrated", "file", t.File, "offset", t.Offset, "uri", t.URI, "status", oc.Status, "reason", oc.Reason)
		}
		out = append(out, oc)
	}
	return out, nil
}

// one converts and validates the payload of one record.
func (m *Migrator) one(ctx context.Context, rd *warcio.Reader, f io.ReaderAt, p *Pathway, oc *Outcome) {
	fail := func(format string, a ...any) {
		oc.Status, oc.Reason = StatusFailed, fmt.Sprintf(format, a...)
	}
	src, _, err := m.payload(rd, f, oc.File, oc.Offset)
	if err != nil {
		fail("%v", err)
		return
	}
	m.convert(ctx, p, src, oc)
}

// payload reads the record at offset and returns its payload without
// Content-Encoding, and its media type.
func (m *Migrator) payload(rd *warcio.Reader, f io.ReaderAt, file string, offset int64) ([]byte, string, error) {
	rec, err := rd.ReadRecordAt(f, file, offset, 0, warcio.Options{KeepPayload: int(m.o.MaxObject) + 1})
	if err != nil {
		return nil, "", fmt.Errorf("read: %w", err)
	}
	if int64(len(rec.Payload)) > m.o.MaxObject {
		return nil, "", fmt.Errorf("payload over the %d-byte limit", m.o.MaxObject)
	}
	if tr := rec.Headers.Get("WARC-Truncated"); tr != "" {
		return nil, "", fmt.Errorf("payload truncated (WARC-Truncated: %s)", tr)
	}
	enc := ""
	if rec.HTTP != nil {
		enc = rec.HTTP.Header.Get("Content-Encoding")
	}
	src, err := m.o.Identifer.Decode(rec.Payload, enc)
	if err != nil {
		return nil, "", err
	}
	return src, rec.MIME, nil
}

// convert converts src with p and validates the result, filling oc.
func (m *Migrator) convert(ctx context.Context, p *Pathway, src []byte, oc *Outcome) {
	fail := func(format string, a ...any) {
		oc.Status, oc.Reason = StatusFailed, fmt.Sprintf(format, a...)
	}
	tool, err := m.o.Tools.ResolveTool(ctx, p.Tool)
	if err != nil {
		fail("%v", err)
		return
	}
	oc.Tool = tool.Name + " (" + tool.Version + ")"
	res, err := m.o.Sandbox.Convert(ctx, tool, p.Args, src, p.Ext)
	if err != nil {
		fail("convert: %v", err)
		return
	}
	val, err := m.v.Validate(ctx, p, src, res, oc.URI)
	if err != nil {
		fail("validate: %v", err)
		return
	}
	oc.Validation = val
	if !val.OK {
		fail("validation: %s", val.Failed())
		return
	}
	oc.Status, oc.Result, oc.ResultSize = StatusMigrated, res, len(res)
}

// SelectPUIDs returns the PUIDs to migrate: list when given, otherwise
// those the risk model rates at least threshold.
func SelectPUIDs(list []string, model *RiskModel, threshold float64) []string {
	if len(list) > 0 {
		out := slices.Clone(list)
		sort.Strings(out)
		return slices.Compact(out)
	}
	return model.AtRisk(threshold)
}

// OutputName is the name of the file a workflow writes for input file:
// NAME.conversion.warc.gz or NAME.migrated.warc.gz (NAME.migrated.arc.gz
// for an ARC file) beside the input's name without its
// .warc(.gz)/.arc(.gz) extension.
func OutputName(file, workflow string) string {
	base := filepath.Base(file)
	arc := false
	for _, ext := range []string{".warc.gz", ".warc", ".arc.gz", ".arc"} {
		if strings.HasSuffix(base, ext) {
			base = strings.TrimSuffix(base, ext)
			arc = strings.HasPrefix(ext, ".arc")
			break
		}
	}
	switch {
	case workflow == Conversion:
		return base + ".conversion.warc.gz"
	case arc:
		return base + ".migrated.arc.gz"
	}
	return base + ".migrated.warc.gz"
}

// PlanRenames gives every payload target (not nested objects) with a
// pathway the URI the replace workflow would give it once migrated
// (NewURI), in the targets' order, none of them equal to a URI taken by a
// capture or to another target's: the same targets and captures give the
// same plan, whichever of them a run migrates.
func PlanRenames(targets []Target, pws *Pathways, taken func(string) bool) map[string]string {
	plan := map[string]string{}
	used := map[string]bool{}
	for _, t := range targets {
		if len(t.Path) > 0 {
			continue
		}
		p, ok := pws.For(t.PUID)
		if !ok {
			continue
		}
		if _, done := plan[NormURI(t.URI)]; done {
			continue // another capture of the same URI
		}
		n := NewURI(t.URI, p.Ext, func(s string) bool { return taken(s) || used[NormURI(s)] })
		if n == t.URI {
			continue // the extension fits already
		}
		used[NormURI(n)] = true
		plan[NormURI(t.URI)] = n
	}
	return plan
}

// Decode removes a payload's Content-Encoding, within the identifier's
// limits (WriteOptions.Decode).
func (m *Migrator) Decode(b []byte, encoding string) ([]byte, error) {
	return m.o.Identifer.Decode(b, encoding)
}
