package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// version prints the module version and VCS revision the binary was built
// from, and the Go version.
func runVersion(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.usagef("version: unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintln(e.stdout, versionString())
	return nil
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "wayside (unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	out := "wayside " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " " + rev
		if dirty {
			out += "+dirty"
		}
	}
	return out + " " + bi.GoVersion
}
