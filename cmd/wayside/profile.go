package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the environment variable that makes any subcommand
// write a CPU profile of its whole run (for `go tool pprof`; the
// benchmark scripts set it with PROFILE=DIR).
const cpuProfileEnv = "WAYSIDE_CPUPROFILE"

// startCPUProfile starts writing a CPU profile to path and returns the
// function that stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
		}
		return nil
	}, nil
}
