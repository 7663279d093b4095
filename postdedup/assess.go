package postdedup

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
)

// AssessOptions configure Assess.
type AssessOptions struct {
	Manifest ManifestOptions
	Policy   Policy
	// ExactBelow is the total input size up to which a sample is not
	// taken (default DefaultExactBelow; negative: always sample).
	ExactBelow int64
}

// MIMEStat counts duplicates of one media type.
type MIMEStat struct {
	Duplicates   int   `json:"duplicates"`
	PayloadBytes int64 `json:"payload_bytes"`
}

// Assessment is the report an archive reads before deciding.
type Assessment struct {
	Files       int     `json:"files"`
	StoredBytes int64   `json:"stored_bytes"`
	RawBytes    int64   `json:"raw_bytes"`
	Sample      float64 `json:"sample,omitempty"`
	// Counts below are over the sample (whole digest clusters).
	Responses    int   `json:"responses"`
	PayloadBytes int64 `json:"payload_bytes"`
	Duplicates   int   `json:"duplicates"`
	DupPayload   int64 `json:"duplicate_payload_bytes"`
	DupStored    int64 `json:"duplicate_stored_bytes"`
	SameURL      int   `json:"same_url"`
	OtherURL     int   `json:"other_url"`
	// ProjectedSaving is the estimated stored bytes saved (scaled up from
	// the sample): the copies' stored size minus an estimate of their
	// revisit records.
	ProjectedSaving      int64   `json:"projected_saving"`
	ProjectedSavingRatio float64 `json:"projected_saving_ratio"`
	// SavingError is the half-width of the 95% confidence interval of
	// ProjectedSaving (0 when nothing was sampled out: the figure is
	// exact), from the variance between the sampled digest clusters;
	// SavingErrorRatio is the same over StoredBytes.
	SavingError      int64   `json:"saving_error"`
	SavingErrorRatio float64 `json:"saving_error_ratio"`
	// Exact is set when --sample was given but the inputs were small
	// enough to assess whole (AssessOptions.ExactBelow).
	Exact    bool                `json:"exact,omitempty"`
	ByMIME   map[string]MIMEStat `json:"by_mime"`
	Kept     map[string]int      `json:"kept,omitempty"`
	BadInput []Problem           `json:"bad_input,omitempty"`
	Problems []Problem           `json:"problems,omitempty"`
}

// assessDirPrefix names Assess's temporary directories (in the temporary
// directory), each holding a lock file while in use.
const (
	assessDirPrefix = "wayside-dedup-assess-"
	assessLock      = ".lock"
)

// removeStaleAssessDirs removes the temporary directories of Assess runs
// that were killed (SIGKILL leaves them): those whose lock no process
// holds, and those without a lock file a minute after they were made.
func removeStaleAssessDirs(tempDir string) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(tempDir, assessDirPrefix+"*"))
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, assessLock))
		if err != nil {
			if fi, serr := os.Stat(d); serr == nil && time.Since(fi.ModTime()) > time.Minute {
				os.RemoveAll(d)
			}
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(d) // nobody holds it: its process is gone
		}
		f.Close()
	}
}

// DefaultExactBelow is the total input size up to which Assess reads
// everything even when asked to sample: the exact figure costs little
// there, and an estimate from few clusters would be far off.
const DefaultExactBelow = 1 << 30

// revisitEstimate estimates the stored size of the revisit replacing e:
// its WARC header (about 700 bytes with the Refers-To fields) and HTTP
// head, compressed about 2:1.
func revisitEstimate(e *Entry, compressed bool) int64 {
	n := 700 + e.HeadLength
	if compressed {
		n /= 2
	}
	return n
}

// Assess builds a (sampled) manifest in a temporary directory and counts
// what deduplication under the policy would do, without comparing bytes
// (digest matches are taken at their word; Resolve checks them).
func Assess(ctx context.Context, inputs []string, opts AssessOptions) (Assessment, error) {
	a := Assessment{ByMIME: map[string]MIMEStat{}, Kept: map[string]int{}, Sample: opts.Manifest.Sample}
	opts.Policy.defaults()
	inputs, err := CheckInputs(inputs)
	if err != nil {
		return a, err
	}
	if s := opts.Manifest.Sample; s > 0 && s < 1 {
		var total int64
		for _, p := range inputs {
			if fi, err := os.Stat(p); err == nil {
				total += fi.Size()
			}
		}
		limit := opts.ExactBelow
		if limit == 0 {
			limit = DefaultExactBelow
		}
		if total <= limit {
			// Small enough to read whole: the exact figure, not an estimate.
			opts.Manifest.Sample, a.Sample, a.Exact = 0, 0, true
		}
	}
	removeStaleAssessDirs(opts.Manifest.TempDir)
	dir, err := os.MkdirTemp(opts.Manifest.TempDir, assessDirPrefix)
	if err != nil {
		return a, err
	}
	defer os.RemoveAll(dir)
	// The lock tells a later Assess that this directory is in use; one
	// whose lock nobody holds was left by a killed process.
	lock, err := os.Create(filepath.Join(dir, assessLock))
	if err != nil {
		return a, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return a, fmt.Errorf("postdedup: assess: lock %s: %w", dir, err)
	}
	opts.Manifest.Parts = 1
	opts.Manifest.CompareCache = -1
	opts.Manifest.NoFraming = true // never validated
	path := filepath.Join(dir, "manifest.tsv")
	ms, err := WriteManifest(ctx, inputs, path, opts.Manifest)
	if err != nil {
		return a, err
	}
	a.Files, a.RawBytes, a.Problems = len(ms.Files), ms.RawBytes, ms.Problems
	compressed := map[string]bool{}
	for _, f := range ms.Files {
		a.StoredBytes += f.Size
		compressed[f.Path] = f.Compressed
	}
	m, err := OpenManifest(path)
	if err != nil {
		return a, err
	}
	defer m.Close()
	var cur string
	firsts := map[string]*Entry{}
	var saved int64
	// The saving of each digest cluster (the sampling unit), for the
	// variance of the estimate: sumSq is the sum of their squares.
	var clusterSaved, sumSq float64
	for {
		e, err := m.Next()
		if err != nil {
			return a, err
		}
		if e == nil {
			break
		}
		if e.Key != cur {
			sumSq += clusterSaved * clusterSaved
			clusterSaved = 0
			cur = e.Key
			clear(firsts)
		}
		if e.Type == "response" {
			a.Responses++
			a.PayloadBytes += e.PayloadLength
		}
		if e.Key == noKey || !e.CanBeOriginal() {
			code := ReasonCode(e.NotOriginal)
			a.Kept[code]++
			// A revisit already there is ordinary input, not bad input.
			if IsBadInput(code) && code != codeRevisit && len(a.BadInput) < maxListed {
				a.BadInput = append(a.BadInput, Problem{Path: e.Path, Offset: e.Offset, Message: e.NotOriginal})
			}
			continue
		}
		if opts.Policy.why(e) != "" {
			a.Kept["policy"]++
			continue
		}
		gk := ""
		if opts.Policy.Match == dedupindex.MatchURL {
			gk = dedupindex.URLKey(e.URI)
		}
		first := firsts[gk]
		if first == nil {
			firsts[gk] = e
			continue
		}
		if !e.CanBeDuplicate() {
			a.Kept[ReasonCode(e.NotDuplicate)]++
			continue
		}
		a.Duplicates++
		a.DupPayload += e.PayloadLength
		a.DupStored += e.Length
		s := max(e.Length-revisitEstimate(e, compressed[e.Path]), 0)
		saved += s
		clusterSaved += float64(s)
		if dedupindex.URLKey(e.URI) == dedupindex.URLKey(first.URI) {
			a.SameURL++
		} else {
			a.OtherURL++
		}
		ms := a.ByMIME[e.MIME]
		ms.Duplicates++
		ms.PayloadBytes += e.PayloadLength
		a.ByMIME[e.MIME] = ms
	}
	sumSq += clusterSaved * clusterSaved
	scale := 1.0
	if s := opts.Manifest.Sample; s > 0 && s < 1 {
		scale = 1 / s
		// Each cluster is in the sample with probability s (Bernoulli
		// sampling by digest): the estimate sum(y)/s has variance
		// estimated by (1-s)/s^2 * sum(y^2).
		a.SavingError = int64(1.96 * math.Sqrt((1-s)*sumSq) / s)
	}
	a.ProjectedSaving = int64(float64(saved) * scale)
	if a.StoredBytes > 0 {
		a.ProjectedSavingRatio = float64(a.ProjectedSaving) / float64(a.StoredBytes)
		a.SavingErrorRatio = float64(a.SavingError) / float64(a.StoredBytes)
	}
	return a, nil
}
