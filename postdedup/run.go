package postdedup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// RunOptions configure Run.
type RunOptions struct {
	Manifest ManifestOptions
	Resolve  ResolveOptions
	Rewrite  RewriteOptions
	Validate ValidateOptions
	// Replace swaps the validated outputs for the inputs (see Replace).
	Replace        bool
	ReplaceOptions ReplaceOptions
	// Stage, when set, is called as each stage starts.
	Stage func(name string)
}

// RunReport is the final report of Run.
type RunReport struct {
	Inputs   int            `json:"inputs"`
	Manifest ManifestStats  `json:"-"`
	Resolve  ResolveStats   `json:"resolve"`
	Rewrite  RewriteStats   `json:"rewrite"`
	Validate ValidateStats  `json:"validate"`
	Replace  *ReplaceStats  `json:"replace,omitempty"`
	Resumed  bool           `json:"resumed_replace,omitempty"`
	Problems []Problem      `json:"problems,omitempty"`
	Stages   map[string]int `json:"stage_ms"`
	// InputBytes and OutputBytes are the stored sizes; Saving is the
	// fraction of InputBytes saved.
	InputBytes  int64   `json:"input_bytes"`
	OutputBytes int64   `json:"output_bytes"`
	Saving      float64 `json:"saving"`
	RawBytes    int64   `json:"raw_bytes"`
}

// Paths of the pipeline's files in the state directory.
func manifestPath(outDir string) string { return filepath.Join(outDir, StateDir, "manifest.tsv") }
func planPath(outDir string) string     { return filepath.Join(outDir, StateDir, "plan.tsv") }
func inputsPath(outDir string) string   { return filepath.Join(outDir, StateDir, "inputs.json") }

// Run chains manifest, resolve, rewrite and validate for the common case
// (and Replace when asked), keeping its files in outDir/.wayside-dedup.
//
// Run again after an interruption, it starts over — except when an
// earlier run of the same inputs had validated its outputs and was
// replacing them: then it finishes the replacement.
func Run(ctx context.Context, inputs []string, outDir string, opts RunOptions) (RunReport, error) {
	rep := RunReport{Stages: map[string]int{}}
	inputs, err := CheckInputs(inputs)
	if err != nil {
		return rep, err
	}
	rep.Inputs = len(inputs)
	if opts.Replace && resumable(outDir, inputs) {
		rep.Resumed = true
		return rep, runReplace(ctx, outDir, opts, &rep)
	}
	if err := os.MkdirAll(filepath.Join(outDir, StateDir), 0o755); err != nil {
		return rep, fmt.Errorf("postdedup: %w", err)
	}
	os.Remove(stampPath(outDir))
	os.Remove(replacingPath(outDir))
	ib, _ := json.Marshal(inputs)
	if err := fsutil.WriteFileAtomic(inputsPath(outDir), 0o644, func(w io.Writer) error { _, err := w.Write(ib); return err }); err != nil {
		return rep, err
	}
	stage := func(name string, fn func() error) error {
		if opts.Stage != nil {
			opts.Stage(name)
		}
		t0 := time.Now()
		err := fn()
		rep.Stages[name] = int(time.Since(t0).Milliseconds())
		return err
	}
	man, plan := manifestPath(outDir), planPath(outDir)
	if err := stage("manifest", func() error {
		opts.Manifest.Parts = 1
		rep.Manifest, err = WriteManifest(ctx, inputs, man, opts.Manifest)
		return err
	}); err != nil {
		return rep, err
	}
	rep.Problems = rep.Manifest.Problems
	rep.RawBytes = rep.Manifest.RawBytes
	if err := stage("resolve", func() error {
		rep.Resolve, err = Resolve(ctx, []string{man}, plan, opts.Resolve)
		return err
	}); err != nil {
		return rep, err
	}
	if err := stage("rewrite", func() error {
		rep.Rewrite, err = Rewrite(ctx, []string{man}, []string{plan}, outDir, opts.Rewrite)
		return err
	}); err != nil {
		return rep, err
	}
	rep.InputBytes, rep.OutputBytes = rep.Rewrite.InputBytes, rep.Rewrite.OutputBytes
	if rep.InputBytes > 0 {
		rep.Saving = 1 - float64(rep.OutputBytes)/float64(rep.InputBytes)
	}
	if err := stage("validate", func() error {
		rep.Validate, err = Validate(ctx, []string{man}, []string{plan}, outDir, opts.Validate)
		return err
	}); err != nil {
		return rep, err
	}
	if opts.Replace {
		return rep, stage("replace", func() error { return runReplace(ctx, outDir, opts, &rep) })
	}
	return rep, nil
}

func runReplace(ctx context.Context, outDir string, opts RunOptions, rep *RunReport) error {
	st, err := Replace(ctx, outDir, opts.ReplaceOptions)
	rep.Replace = &st
	if rep.InputBytes == 0 {
		rep.InputBytes, rep.OutputBytes = st.BytesBefore, st.BytesAfter
		if st.BytesBefore > 0 {
			rep.Saving = 1 - float64(st.BytesAfter)/float64(st.BytesBefore)
		}
	}
	return err
}

// resumable reports whether outDir holds a validated run of the same
// inputs whose replacement may have been interrupted: every input path
// holds either the validated input or its validated output.
func resumable(outDir string, inputs []string) bool {
	if _, err := os.Stat(replacingPath(outDir)); err != nil {
		return false
	}
	s, err := ReadStamp(outDir)
	if err != nil || len(s.Files) != len(inputs) {
		return false
	}
	var prev []string
	if b, err := os.ReadFile(inputsPath(outDir)); err != nil || json.Unmarshal(b, &prev) != nil || len(prev) != len(inputs) {
		return false
	}
	for i := range prev {
		if prev[i] != inputs[i] {
			return false
		}
	}
	for _, f := range s.Files {
		if _, err := checkSwap(outDir, f); err != nil {
			return false
		}
	}
	return true
}

// IsInvalid reports whether err says an output failed validation.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }
