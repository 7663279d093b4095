package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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

// inputFlags are the flags every command that reads WARC/ARC files takes
// besides its file arguments: -r (recurse into directory arguments) and
// --from-list FILE ("-": stdin), a list of paths one a line.
type inputFlags struct {
	recurse  bool
	fromList string
	only     string // "arc": a directory means its ARC files only (convert arc2warc)
	// fetched is the directory the objects of s3:// inputs were copied to
	// (removed by close).
	fetched string
}

// close removes what expand fetched.
func (f *inputFlags) close() {
	if f.fetched != "" {
		os.RemoveAll(f.fetched)
		f.fetched = ""
	}
}

func (f *inputFlags) register(fs *flagSet) {
	fs.BoolVar(&f.recurse, "r", false, "recurse into subdirectories of a directory argument")
	fs.StringVar(&f.fromList, "from-list", "", "read input paths from `FILE`, one a line (\"-\": stdin; blank lines and # comments skipped); a directory there is expanded too")
}

// given reports whether any input came from the flags.
func (f *inputFlags) given() bool { return f.fromList != "" }

// expand returns the input files of cmd: the arguments, then the lines of
// --from-list, each directory among them replaced by the WARC and ARC
// files it holds (with -r, in its subdirectories too), sorted by path.
// Whether a file in a directory is a WARC or ARC file is decided by its
// content, not its name; files that are neither are skipped, with a line
// on stderr naming how many (a file named explicitly that is neither stays
// an input: the command's own check names it as an error). A directory
// with no WARC or ARC file is an error naming it.
//
// An s3://BUCKET/PREFIX?endpoint=… input is object storage: an object URL
// one file, a prefix URL a directory (its WARC, ARC and WACZ objects by
// name). The objects are copied to a private temporary directory, under
// their own names, and read from there; close removes it.
func (f *inputFlags) expand(ctx context.Context, e *env, cmd string, args []string) ([]string, error) {
	all := append([]string(nil), args...)
	if f.fromList != "" {
		list, err := readInputList(e, cmd, f.fromList)
		if err != nil {
			return nil, err
		}
		all = append(all, list...)
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range all {
		if isRemote(p) {
			if f.fetched == "" {
				d, err := os.MkdirTemp("", "wayside-s3-")
				if err != nil {
					return nil, fmt.Errorf("%s: %w", cmd, err)
				}
				f.fetched = d
			}
			files, err := fetchRemote(ctx, cmd, p, f.fetched)
			if err != nil {
				f.close()
				return nil, err
			}
			for _, q := range files {
				add(q)
			}
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			add(p) // checkInputs names what is wrong with it
			continue
		}
		files, skipped, err := archiveFilesIn(p, f.recurse, f.only)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		if skipped > 0 && e.stderr != nil {
			fmt.Fprintf(e.stderr, "%s: %s: skipped %d file(s) that are not %s files\n", cmd, p, skipped, f.kinds())
		}
		if len(files) == 0 {
			hint := ""
			if !f.recurse {
				hint = " (-r looks in subdirectories)"
			}
			return nil, fmt.Errorf("%s: %s: directory holds no %s file%s", cmd, p, f.kinds(), hint)
		}
		for _, q := range files {
			add(q)
		}
	}
	return out, nil
}

// kinds names the files a directory is searched for.
func (f *inputFlags) kinds() string {
	if f.only == "arc" {
		return "ARC"
	}
	return "WARC or ARC"
}

// readInputList reads --from-list: paths one a line.
func readInputList(e *env, cmd, path string) ([]string, error) {
	var r io.Reader
	name := path
	if path == "-" {
		if e.stdin == nil {
			return nil, fmt.Errorf("%s: --from-list -: no standard input", cmd)
		}
		r, name = e.stdin, "(stdin)"
	} else {
		if why := unreadable(path); why != "" {
			return nil, fmt.Errorf("%s: --from-list %s: %s", cmd, path, why)
		}
		fh, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: --from-list: %w", cmd, err)
		}
		defer fh.Close()
		r = fh
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.Contains(line, "://") && !isRemote(line) {
			return nil, fmt.Errorf("%s: --from-list %s line %d: %q is a URL; local paths and s3:// URLs only", cmd, name, n, line)
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: --from-list %s: %w", cmd, name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: --from-list %s: no paths in it", cmd, name)
	}
	return out, nil
}

// archiveFilesIn lists the WARC and ARC files in dir (recursively with
// recurse), sorted (only: of that kind alone), and counts the regular files skipped as neither.
// Hidden files and unfinished ".open" files are not inputs.
func archiveFilesIn(dir string, recurse bool, only string) (files []string, skipped int, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (!recurse || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".open") {
			return nil
		}
		kind, err := sniffArchive(p)
		if err != nil {
			return err
		}
		if kind == "" || only != "" && kind != only {
			skipped++
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	sort.Strings(files)
	return files, skipped, nil
}

// sniffArchive says from its first bytes whether the file at p is a WARC
// ("warc") or ARC ("arc") file, gzip-compressed or not, or neither ("").
func sniffArchive(p string) (string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(fh, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			return "", nil
		}
		head = make([]byte, 64)
		n, _ := io.ReadFull(zr, head)
		head = head[:n]
	}
	switch {
	case bytes.HasPrefix(head, []byte("WARC/")):
		return "warc", nil
	case bytes.HasPrefix(head, []byte("filedesc://")):
		return "arc", nil
	}
	return "", nil
}
