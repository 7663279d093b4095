package fixity

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"sync"
	"time"
)

// Report is the data of a fixity report: per-archive share of changed
// mementos per sweep, counts per change class, and per-memento changes.
type Report struct {
	Generated time.Time       `json:"generated"`
	Sweeps    []string        `json:"sweeps"`
	Archives  []ArchiveReport `json:"archives"`
	Classes   []ClassCount    `json:"classes"`
	// Study holds the study's tables per archive: Table 5, Figs 20, 21
	// and 27-28.
	Study    []ArchiveStudy  `json:"study"`
	Mementos []MementoReport `json:"mementos"`
	Totals   map[string]int  `json:"totals"`
}

// ReportOption configures BuildReport.
type ReportOption func(*reportOpts)

type reportOpts struct {
	load func(rel string) (*Manifest, error)
}

// WithManifests lets BuildReport read the manifest of each replay (path
// relative to the store, as in Record.Manifest), so the Algorithm 1 and
// entity-only policies can be derived from the stored leaves. Without it
// the study tables cover the Wayside root only.
func WithManifests(load func(rel string) (*Manifest, error)) ReportOption {
	return func(o *reportOpts) { o.load = load }
}

// StoreManifests is a WithManifests loader for the store in dir.
func StoreManifests(dir string) func(rel string) (*Manifest, error) {
	h := &History{dir: dir}
	return h.LoadManifest
}

// ArchiveReport is one row of the heatmap.
type ArchiveReport struct {
	Archive string      `json:"archive"`
	Cells   []SweepCell `json:"cells"` // one per Report.Sweeps entry
}

// SweepCell is the result of one sweep for one archive.
type SweepCell struct {
	Sweep     string  `json:"sweep"`
	Compared  int     `json:"compared"`  // comparable replays
	Changed   int     `json:"changed"`   // of which changed
	Transient int     `json:"transient"` // not compared (transient errors, refused targets)
	Share     float64 `json:"share"`     // Changed / Compared, -1 when nothing was compared
}

// ClassCount counts records of one class.
type ClassCount struct {
	Class Class `json:"class"`
	Count int   `json:"count"`
}

// MementoReport is the drill-down of one URI-M.
type MementoReport struct {
	URIM          string        `json:"urim"`
	Archive       string        `json:"archive"`
	Replays       int           `json:"replays"`
	DistinctRoots int           `json:"distinct_roots"`
	Accepted      int           `json:"accepted_states"`
	Transient     int           `json:"transient"`
	Checks        []Check       `json:"checks,omitempty"` // of the last replay that had any
	Changes       []ChangeEvent `json:"changes,omitempty"`
}

// ChangeEvent is one recorded change.
type ChangeEvent struct {
	Sweep     string           `json:"sweep"`
	Time      time.Time        `json:"time"`
	Class     Class            `json:"class"`
	Root      string           `json:"root"`
	Manifest  string           `json:"manifest"`
	Resources []ResourceChange `json:"resources"`
}

// BuildReport aggregates history records.
func BuildReport(recs []Record, opts ...ReportOption) *Report {
	var o reportOpts
	for _, f := range opts {
		f(&o)
	}
	r := &Report{Generated: time.Now().UTC(), Totals: map[string]int{}}
	downloads := map[string]map[string][]studyDownload{}
	checks := map[string]map[string]int{}
	sweepSet := map[string]bool{}
	type cellKey struct{ arch, sweep string }
	cells := map[cellKey]*SweepCell{}
	archSet := map[string]bool{}
	classes := map[Class]int{}
	mem := map[string]*MementoReport{}
	roots := map[string]map[string]bool{}
	archOf := map[string]string{}
	for _, rec := range recs {
		m := mem[rec.URIM]
		if m == nil {
			m = &MementoReport{URIM: rec.URIM}
			mem[rec.URIM] = m
			roots[rec.URIM] = map[string]bool{}
		}
		if rec.Kind == KindAccept {
			m.Accepted++
			continue
		}
		if rec.Archive != "" {
			archOf[rec.URIM] = rec.Archive
		}
	}
	for _, rec := range recs {
		if rec.Kind != KindReplay {
			continue
		}
		m := mem[rec.URIM]
		arch := archOf[rec.URIM]
		if arch == "" {
			arch = "(unknown)"
		}
		m.Archive = arch
		m.Replays++
		r.Totals["replays"]++
		classes[rec.Class]++
		sweep := rec.Sweep
		if sweep == "" {
			sweep = rec.Time.Format(time.RFC3339)
		}
		sweepSet[sweep] = true
		archSet[arch] = true
		c := cells[cellKey{arch, sweep}]
		if c == nil {
			c = &SweepCell{Sweep: sweep}
			cells[cellKey{arch, sweep}] = c
		}
		if len(rec.Checks) > 0 {
			m.Checks = rec.Checks
			if checks[arch] == nil {
				checks[arch] = map[string]int{}
			}
			for _, k := range rec.Checks {
				checks[arch][k.Name]++
				r.Totals["checks"]++
			}
		}
		if rec.Transient || rec.Class == ClassTransient || rec.Class == ClassRefused || rec.Class == ClassMissing {
			c.Transient++
			m.Transient++
			r.Totals["transient"]++
			continue
		}
		if rec.Root != "" {
			roots[rec.URIM][rec.Root] = true
			d := studyDownload{PolicyWayside: rec.Root}
			if o.load != nil && rec.Manifest != "" {
				if man, err := o.load(rec.Manifest); err != nil {
					r.Totals["manifests_unreadable"]++
				} else {
					a1 := man.Algorithm1
					if a1 == nil {
						c := ComputeAlgorithm1(man)
						a1 = &c
					}
					d[PolicyAlgorithm1] = a1.Root.String()
					d[PolicyEntity] = EntityRoot(man).String()
				}
			}
			if downloads[arch] == nil {
				downloads[arch] = map[string][]studyDownload{}
			}
			downloads[arch][rec.URIM] = append(downloads[arch][rec.URIM], d)
		}
		c.Compared++
		if rec.Class.IsChange() {
			c.Changed++
			r.Totals["changed"]++
			m.Changes = append(m.Changes, ChangeEvent{Sweep: sweep, Time: rec.Time, Class: rec.Class, Root: rec.Root, Manifest: rec.Manifest, Resources: rec.Changed})
		}
	}
	for s := range sweepSet {
		r.Sweeps = append(r.Sweeps, s)
	}
	sort.Strings(r.Sweeps)
	var archs []string
	for a := range archSet {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	for _, a := range archs {
		ar := ArchiveReport{Archive: a}
		for _, s := range r.Sweeps {
			c := cells[cellKey{a, s}]
			if c == nil {
				c = &SweepCell{Sweep: s}
			}
			c.Share = -1
			if c.Compared > 0 {
				c.Share = float64(c.Changed) / float64(c.Compared)
			}
			ar.Cells = append(ar.Cells, *c)
		}
		r.Archives = append(r.Archives, ar)
	}
	policies := []string{PolicyWayside}
	if o.load != nil {
		policies = append(policies, PolicyAlgorithm1, PolicyEntity)
	}
	r.Study = buildStudy(archs, downloads, checks, policies)
	shown := append(ChangeClasses(), ClassNone, ClassAccepted, ClassTransient, ClassRefused, ClassMissing)
	if classes[ClassURIMHeaderV1] > 0 {
		shown = append(shown, ClassURIMHeaderV1)
	}
	for _, c := range shown {
		r.Classes = append(r.Classes, ClassCount{Class: c, Count: classes[c]})
	}
	for u, m := range mem {
		if m.Replays == 0 {
			continue
		}
		m.DistinctRoots = len(roots[u])
		r.Mementos = append(r.Mementos, *m)
	}
	sort.Slice(r.Mementos, func(i, j int) bool {
		if len(r.Mementos[i].Changes) != len(r.Mementos[j].Changes) {
			return len(r.Mementos[i].Changes) > len(r.Mementos[j].Changes)
		}
		return r.Mementos[i].URIM < r.Mementos[j].URIM
	})
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("fixity: write report: %w", err)
	}
	return nil
}

// WriteHTML writes a self-contained HTML page (inline CSS and SVG, no
// external assets, no scripts).
func (r *Report) WriteHTML(w io.Writer) error {
	if err := reportTmpl().Execute(w, r); err != nil {
		return fmt.Errorf("fixity: write report: %w", err)
	}
	return nil
}

const cellW, cellH, labelW = 22, 22, 180

// heatColor maps a share of changed mementos to a colour: white (0) to dark
// red (1), grey when nothing was compared.
func heatColor(share float64) string {
	if share < 0 {
		return "#e0e0e0"
	}
	l := 97 - share*62
	return fmt.Sprintf("hsl(0,75%%,%.0f%%)", l)
}

// reportTmpl is parsed on first use, not at package initialisation (every
// run of the wayside binary would pay for it).
var reportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"heat":   heatColor,
		"pct":    func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
		"x":      func(i int) int { return labelW + i*cellW },
		"y":      func(i int) int { return 30 + i*cellH },
		"width":  func(n int) int { return labelW + n*cellW + 20 },
		"height": func(n int) int { return 40 + n*cellH },
		"ty":     func(i int) int { return 30 + i*cellH + 15 },
		"inc":    func(i int) int { return i + 1 },
		"cw":     func() int { return cellW - 2 },
		"ch":     func() int { return cellH - 2 },
		"charts": studyCharts,
		"pctf":   func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
	}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Wayside replay fixity report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:72em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
code{font-size:.9em;word-break:break-all}.c-set{color:#a00}.c-timeout{color:#777}
details{margin:.3em 0}summary{cursor:pointer}
.figs{display:flex;flex-wrap:wrap;gap:1em}caption{text-align:left;font-weight:bold}
</style></head><body>
<h1>Replay fixity report</h1>
<p>Generated {{.Generated.Format "2006-01-02 15:04:05 MST"}}: {{index .Totals "replays"}} replays, {{index .Totals "changed"}} changes, {{index .Totals "transient"}} transient (not compared).</p>
<h2>Share of mementos changed per sweep</h2>
<svg xmlns="http://www.w3.org/2000/svg" id="heatmap" class="chart" width="{{width (len .Sweeps)}}" height="{{height (len .Archives)}}" role="img" aria-label="heatmap">
<text x="0" y="18" font-size="12">archive \ sweep →</text>
{{range $i, $s := .Sweeps}}<text x="{{x $i}}" y="26" font-size="9">{{inc $i}}</text>{{end}}
{{range $j, $a := .Archives}}<text x="0" y="{{ty $j}}" font-size="12">{{$a.Archive}}</text>
{{range $i, $c := $a.Cells}}<rect x="{{x $i}}" y="{{y $j}}" width="{{cw}}" height="{{ch}}" fill="{{heat $c.Share}}"><title>{{$a.Archive}} sweep {{$c.Sweep}}: {{$c.Changed}}/{{$c.Compared}} changed{{if ge $c.Share 0.0}} ({{pct $c.Share}}){{end}}, {{$c.Transient}} transient</title></rect>{{end}}
{{end}}</svg>
<p>White: no change; dark red: every compared memento changed; grey: nothing comparable.</p>
<h2>Per archive: the study's tables and figures</h2>
<p>Computed over comparable downloads (transient replays left out) for each hash policy: <b>wayside</b> is the hardened root,
<b>algorithm1</b> the study's Algorithm 1 root, <b>entity-only</b> a hash over the resources' entity bodies only.</p>
{{range $i, $st := .Study}}<section class="archive" id="study-{{$i}}">
<h3>{{$st.Archive}}: {{$st.Mementos}} mementos, up to {{$st.Downloads}} downloads</h3>
<table class="table5" id="table5-{{$i}}"><caption>Table 5</caption>
<tr><th>policy</th><th>mementos</th><th>one hash</th><th>two or more hashes</th><th>a different hash every download</th></tr>
{{range $st.Policies}}<tr><td>{{.Policy}}</td><td>{{.Mementos}}</td><td>{{.OneHash}} ({{pctf .OneHashPct}})</td><td>{{.Several}} ({{pctf .SeveralPct}})</td><td>{{.AlwaysDifferent}} ({{pctf .AlwaysDifferentPct}})</td></tr>
{{end}}</table>
<div class="figs">{{range charts $i $st}}{{.}}{{end}}</div>
{{if $st.Checks}}<table class="checks" id="checks-{{$i}}"><caption>Guideline findings</caption><tr><th>check</th><th>count</th></tr>{{range $k, $v := $st.Checks}}<tr><td>{{$k}}</td><td>{{$v}}</td></tr>{{end}}</table>{{end}}
</section>
{{end}}
<h2>Sweeps</h2>
<ol>{{range .Sweeps}}<li><code>{{.}}</code></li>{{end}}</ol>
<h2>Records per class</h2>
<table><tr><th>class</th><th>records</th></tr>
{{range .Classes}}<tr><td class="c-{{.Class}}">{{.Class}}</td><td>{{.Count}}</td></tr>{{end}}</table>
<h2>Mementos</h2>
{{range .Mementos}}<details{{if .Changes}} open{{end}}><summary><code>{{.URIM}}</code> — {{.Replays}} replays, {{.DistinctRoots}} distinct roots, {{.Accepted}} accepted states, {{len .Changes}} changes, {{.Transient}} transient{{if .Checks}}, {{len .Checks}} guideline findings{{end}}</summary>
{{if .Checks}}<ul class="checks">{{range .Checks}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Changes}}<table><tr><th>sweep</th><th>class</th><th>root</th><th>resources that changed</th></tr>
{{range .Changes}}<tr><td><code>{{.Sweep}}</code></td><td class="c-{{.Class}}">{{.Class}}</td><td><code>{{printf "%.16s" .Root}}</code></td><td>{{range .Resources}}<div><b>{{.Class}}</b> <code>{{.Key}}</code>: {{.Detail}}{{if .Leaves}}<ul>{{range .Leaves}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>{{end}}</td></tr>{{end}}
</table>{{end}}</details>
{{end}}
</body></html>
`))
})
