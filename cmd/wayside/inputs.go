package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// checkInputs checks, before a command creates or writes anything, that
// every input file it was given can be read: it exists, is a regular file
// (not a directory) and is not empty — an empty file given explicitly is
// an error, not an input that holds nothing. "-" (stdin) passes. The error
// names every bad input (exit status 1).
func checkInputs(cmd string, paths []string) error {
	var bad []string
	for _, p := range paths {
		if p == "-" {
			continue
		}
		if why := unreadable(p); why != "" {
			bad = append(bad, p+": "+why)
		}
	}
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: %s", cmd, bad[0])
	}
	return fmt.Errorf("%s: %d inputs cannot be read: %s", cmd, len(bad), strings.Join(bad, "; "))
}

// unreadable says why the input file p cannot be read, or "".
func unreadable(p string) string {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case err != nil:
		return err.Error()
	case fi.IsDir():
		return "is a directory, not a file"
	case !fi.Mode().IsRegular() && fi.Mode()&fs.ModeNamedPipe == 0:
		return "not a regular file"
	case fi.Mode().IsRegular() && fi.Size() == 0:
		return "empty file (0 bytes)"
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "permission denied"
		}
		return err.Error()
	}
	f.Close()
	return ""
}

// checkInputDir checks that the directory a flag or argument (what:
// "--store", "OUTDIR") names exists.
func checkInputDir(cmd, what, dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %s %s: no such directory", cmd, what, dir)
	case err != nil:
		return fmt.Errorf("%s: %s %w", cmd, what, err)
	case !fi.IsDir():
		return fmt.Errorf("%s: %s %s: not a directory", cmd, what, dir)
	}
	return nil
}

// outFile is one file a command will write: the flag or argument that
// names it (what: "-o", "--svg", "OUT") and its path.
type outFile struct{ what, path string }

// overwriteFlag registers --overwrite, the same for every command that
// writes files: without it, a command refuses to replace an existing file.
func overwriteFlag(fs *flagSet) *bool {
	return fs.Bool("overwrite", false, "replace output files that already exist (an input is never replaced)")
}

// checkOutput is the one check of what a command writes, made before any
// work: each output's directory exists and the output is not a directory;
// no output is one of the command's inputs (the same file, whatever the
// path: symlinks and hard links are resolved by os.SameFile), not even with
// --overwrite; no two outputs are the same file; and an existing output is
// refused unless overwrite (--overwrite) is set. Outputs "" and "-"
// (stdout) pass; inputs "-" (stdin) and directories are skipped. The error
// names the flag and path (exit status 1). When every output passes, the
// temporary files an earlier run killed before its rename left for them
// (".NAME.tmp-*" beside each, fsutil.WriteFileAtomic's) are removed.
func checkOutput(cmd string, inputs []string, overwrite bool, outs ...outFile) error {
	type ident struct {
		abs string
		fi  os.FileInfo
	}
	var ins []ident // path as given
	for _, p := range inputs {
		if p == "" || p == "-" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			ins = append(ins, ident{p, fi})
		}
	}
	var seen []ident
	for _, o := range outs {
		if o.path == "" || o.path == "-" {
			continue
		}
		abs, err := filepath.Abs(o.path)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", cmd, o.what, o.path, err)
		}
		fi, statErr := os.Stat(o.path)
		if statErr == nil && fi.IsDir() {
			return fmt.Errorf("%s: %s %s: is a directory, not a file", cmd, o.what, o.path)
		}
		if statErr == nil {
			for _, in := range ins {
				if os.SameFile(fi, in.fi) {
					if in.abs == o.path {
						return fmt.Errorf("%s: %s %s: is one of the inputs; refusing to write over it", cmd, o.what, o.path)
					}
					return fmt.Errorf("%s: %s %s: is the input %s (the same file); refusing to write over it", cmd, o.what, o.path, in.abs)
				}
			}
		}
		for _, s := range seen {
			if s.abs == abs || (statErr == nil && s.fi != nil && os.SameFile(fi, s.fi)) {
				return fmt.Errorf("%s: %s %s: the same file is written twice", cmd, o.what, o.path)
			}
		}
		if _, err := os.Lstat(o.path); err == nil && !overwrite {
			return fmt.Errorf("%s: %s %s: already exists (give --overwrite to replace it)", cmd, o.what, o.path)
		}
		dir := filepath.Dir(o.path)
		dfi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: %s %s: no such directory %s", cmd, o.what, o.path, dir)
		case err != nil:
			return fmt.Errorf("%s: %s %s: %w", cmd, o.what, o.path, err)
		case !dfi.IsDir():
			return fmt.Errorf("%s: %s %s: %s is not a directory", cmd, o.what, o.path, dir)
		}
		id := ident{abs: abs}
		if statErr == nil {
			id.fi = fi
		}
		seen = append(seen, id)
	}
	for _, s := range seen {
		if err := fsutil.RemoveStaleTemps(s.abs); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return nil
}
