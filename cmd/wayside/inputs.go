package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// checkOutput checks, before any work, that an output file can be
// created where a flag or argument says: its directory exists and the path
// is not a directory. "" and "-" (stdout) pass.
func checkOutput(cmd, what, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s: %s %s: is a directory, not a file", cmd, what, path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %s %s: no such directory %s", cmd, what, path, dir)
	case err != nil:
		return fmt.Errorf("%s: %s %s: %w", cmd, what, path, err)
	case !fi.IsDir():
		return fmt.Errorf("%s: %s %s: %s is not a directory", cmd, what, path, dir)
	}
	return nil
}
