package postdedup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/cespare/xxhash/v2"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

// ReplaceOptions configure Replace (the crash tests' hooks are failpoints,
// package internal/failpoint).
type ReplaceOptions struct {
	// Indexes are the indexes that name the replaced files: each is told
	// where a file's records are right after its swap (see IndexUpdater).
	Indexes []IndexUpdater
}

// ReplaceStats summarises Replace.
type ReplaceStats struct {
	Replaced int `json:"replaced"`
	// Already counts files a previous, interrupted Replace had swapped.
	Already int `json:"already"`
	// Retired is the directory holding the replaced inputs (hard links):
	// delete it once satisfied.
	Retired      string `json:"retired"`
	BytesBefore  int64  `json:"bytes_before"`
	BytesAfter   int64  `json:"bytes_after"`
	CDXJReplaced int    `json:"cdxj_replaced"`
	// IndexesUpdated names the indexes updated to the new offsets.
	IndexesUpdated []string `json:"indexes_updated,omitempty"`
}

// ReadStamp reads the validation stamp in outDir.
func ReadStamp(outDir string) (Stamp, error) {
	var s Stamp
	b, err := os.ReadFile(stampPath(outDir))
	if err != nil {
		return s, fmt.Errorf("postdedup: replace: no validated output in %s (run validate first): %w", outDir, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("postdedup: replace: %s: %v", stampPath(outDir), err)
	}
	if s.Format != stampFormat {
		return s, fmt.Errorf("postdedup: replace: %s was written by an earlier wayside (stamp format %d): validate again", stampPath(outDir), s.Format)
	}
	return s, nil
}

// Replace swaps each validated output in outDir for its input. It acts
// only on what Validate stamped, and checks first that nothing changed
// since: the input still has the size and modification time validated
// and the output the size and SHA-256. Each swap is one rename(2) over
// the input (atomic); the input is kept, as a hard link, in
// outDir/.wayside-dedup/retired until the caller deletes it. A CDXJ file
// beside an input (cdxj.FindSideFile: NAME.warc.gz.cdxj, as wayside crawl
// keeps, or the NAME.cdxj of earlier releases) is replaced by the
// output's.
//
// Replace may be interrupted at any point and run again: a file whose
// input path already holds the validated output counts as done. In
// between, every input path holds either its complete input or its
// complete validated output, and either way every revisit resolves: an
// original is never rewritten, so it is byte-identical in both.
func Replace(ctx context.Context, outDir string, opts ReplaceOptions) (ReplaceStats, error) {
	var st ReplaceStats
	s, err := ReadStamp(outDir)
	if err != nil {
		return st, err
	}
	st.Retired = filepath.Join(outDir, StateDir, "retired")
	if err := os.MkdirAll(st.Retired, 0o755); err != nil {
		return st, fmt.Errorf("postdedup: replace: %w", err)
	}
	// Check everything before the first swap.
	done := make([]bool, len(s.Files))
	for i, f := range s.Files {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		d, err := checkSwap(outDir, f)
		if err != nil {
			return st, err
		}
		done[i] = d
	}
	// Read every validated output before the first swap: the indexes are
	// updated from them right after each swap.
	var runCaps *RunCaptures
	if len(opts.Indexes) > 0 {
		if runCaps, err = readRunCaptures(ctx, outDir, s, done); err != nil {
			return st, fmt.Errorf("postdedup: replace: nothing replaced: %w", err)
		}
	}
	if err := fsutil.WriteFileAtomic(replacingPath(outDir), 0o644, func(io.Writer) error { return nil }); err != nil {
		return st, fmt.Errorf("postdedup: replace: %w", err)
	}
	for i, f := range s.Files {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		st.BytesBefore += f.InputSize
		st.BytesAfter += f.OutputSize
		if done[i] {
			st.Already++
			if err := swapCDXJ(outDir, f, &st, opts); err != nil {
				return st, err
			}
			// An earlier run may have died between swap and update.
			if err := updateIndexes(ctx, opts.Indexes, filepath.Base(f.Input), runCaps); err != nil {
				return st, err
			}
			continue
		}
		if err := retire(st.Retired, i, f.Input); err != nil {
			return st, err
		}
		if err := fsutil.SyncDir(st.Retired); err != nil {
			return st, err
		}
		if err := failpoint.Inject("postdedup.replace-before-swap"); err != nil {
			return st, err
		}
		if err := moveOver(filepath.Join(outDir, f.Output), f.Input); err != nil {
			return st, err
		}
		if err := failpoint.Inject("postdedup.replace-after-swap"); err != nil {
			return st, err
		}
		if err := updateIndexes(ctx, opts.Indexes, filepath.Base(f.Input), runCaps); err != nil {
			return st, err
		}
		st.Replaced++
		if err := swapCDXJ(outDir, f, &st, opts); err != nil {
			return st, err
		}
	}
	for _, u := range opts.Indexes {
		st.IndexesUpdated = append(st.IndexesUpdated, u.Name())
	}
	return st, nil
}

// retire keeps the input (the i-th file of the stamp) in dir as a hard
// link under a name no other file holds: NNNN-BASE, else NNNN-BASE.2, .3…
// A name already linked to this very input (an interrupted Replace run
// again) is kept; a name holding any other file (an original retired by an
// earlier run into the same output directory) is never reused or replaced.
func retire(dir string, i int, input string) error {
	ifi, err := os.Stat(input)
	if err != nil {
		return fmt.Errorf("postdedup: replace: keep %s: %w", input, err)
	}
	base := fmt.Sprintf("%04d-%s", i, filepath.Base(input))
	for n := 1; n <= 10000; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s.%d", base, n)
		}
		p := filepath.Join(dir, name)
		err := os.Link(input, p)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("postdedup: replace: keep %s: %w", input, err)
		}
		if fi, serr := os.Stat(p); serr == nil && os.SameFile(fi, ifi) {
			return nil // kept by an interrupted run
		}
	}
	return fmt.Errorf("postdedup: replace: keep %s: no free name for it in %s", input, dir)
}

// replacingPath marks an output directory whose outputs are being swapped
// in: a run of the same inputs finishes the swap instead of starting over.
func replacingPath(outDir string) string { return filepath.Join(outDir, StateDir, "replacing") }

// checkSwap reports whether f's input path already holds the validated
// output (done), or checks that the swap may go ahead.
func checkSwap(outDir string, f StampedFile) (bool, error) {
	ist, err := os.Stat(f.Input)
	if err != nil {
		return false, fmt.Errorf("postdedup: replace: %w", err)
	}
	if ist.Size() == f.OutputSize {
		if sum, err := fileXXH64(f.Input); err == nil && sum == f.OutputXXH64 {
			return true, nil
		}
	}
	if ist.Size() != f.InputSize || !ist.ModTime().UTC().Equal(f.InputMTime) {
		return false, fmt.Errorf("postdedup: replace: %s changed since it was validated: nothing replaced", f.Input)
	}
	out := filepath.Join(outDir, f.Output)
	sum, err := fileXXH64(out)
	if err != nil {
		return false, fmt.Errorf("postdedup: replace: %w", err)
	}
	if sum != f.OutputXXH64 {
		return false, fmt.Errorf("postdedup: replace: %s changed since it was validated: nothing replaced", out)
	}
	return false, nil
}

// moveOver renames src over dst, or (another file system) copies it
// beside dst, fsyncs and renames the copy: either way dst switches from
// the old content to the new in one rename(2).
func moveOver(src, dst string) error {
	err := os.Rename(src, dst)
	if errors.Is(err, syscall.EXDEV) {
		in, oerr := os.Open(src)
		if oerr != nil {
			return fmt.Errorf("postdedup: replace: %w", oerr)
		}
		defer in.Close()
		err = fsutil.WriteFileAtomic(dst, 0o644, func(w io.Writer) error {
			_, err := io.Copy(w, in)
			return err
		})
		if err == nil {
			os.Remove(src)
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("postdedup: replace: %w", err)
	}
	return fsutil.SyncDir(filepath.Dir(dst))
}

// swapCDXJ replaces a CDXJ file kept beside the input with the output's.
func swapCDXJ(outDir string, f StampedFile, st *ReplaceStats, opts ReplaceOptions) error {
	// Under either naming (cdxj.FindSideFile): the output's lines take
	// the place of the input's, wherever it was.
	beside, found, err := cdxj.FindSideFile(filepath.Dir(f.Input), f.Input)
	if err != nil || !found {
		return nil // the input had none
	}
	src := filepath.Join(outDir, f.CDXJ)
	if _, err := os.Stat(src); err != nil {
		return nil // already moved
	}
	if err := failpoint.Inject("postdedup.replace-before-cdxj"); err != nil {
		return err
	}
	if err := moveOver(src, beside); err != nil {
		return err
	}
	st.CDXJReplaced++
	return nil
}

// fileXXH64 is the checksum validation stamps carry (StampedFile.OutputXXH64).
func fileXXH64(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := xxhash.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
		return "", err
	}
	return strconv.FormatUint(h.Sum64(), 16), nil
}
