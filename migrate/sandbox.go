package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits bound one converter run.
type Limits struct {
	// Timeout is the wall-clock limit of one run (default 2 minutes).
	Timeout time.Duration
	// Memory is the address-space limit in bytes (default 2 GiB).
	Memory int64
	// Output is the largest result accepted, in bytes, also the file-size
	// limit of the process (default 1 GiB).
	Output int64
}

func (l *Limits) defaults() {
	if l.Timeout <= 0 {
		l.Timeout = 2 * time.Minute
	}
	if l.Memory <= 0 {
		l.Memory = 2 << 30
	}
	if l.Output <= 0 {
		l.Output = 1 << 30
	}
}

// Sandbox runs converters: each in a private temporary directory with an
// empty environment, in a new process group killed as a whole at the time
// limit, under prlimit's memory, file-size, CPU and open-file limits, and
// without network: in a new network namespace (unshare --net, or as an
// unprivileged user with --map-root-user).
type Sandbox struct {
	lim     Limits
	dir     string   // parent of the private directories
	wrapper []string // prlimit and unshare prefix
	// Isolated tells whether runs have no network.
	Isolated bool
}

// NewSandbox checks what the machine allows. Without a way to take the
// network away it fails, unless allowNetwork is set (then Isolated is
// false and the caller says so).
func NewSandbox(ctx context.Context, lim Limits, tmpDir string, allowNetwork bool) (*Sandbox, error) {
	lim.defaults()
	s := &Sandbox{lim: lim, dir: tmpDir}
	prl, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, errors.New("migrate: sandbox: prlimit (util-linux) is not installed: converters cannot be given memory limits")
	}
	cpu := int64(lim.Timeout/time.Second) + 1
	s.wrapper = []string{prl, "--as=" + strconv.FormatInt(lim.Memory, 10), "--fsize=" + strconv.FormatInt(lim.Output, 10),
		"--cpu=" + strconv.FormatInt(cpu, 10), "--nofile=256", "--core=0", "--"}
	if un, err := exec.LookPath("unshare"); err == nil {
		for _, try := range [][]string{{un, "--net", "--"}, {un, "--net", "--map-root-user", "--"}} {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := exec.CommandContext(cctx, try[0], append(try[1:], "true")...).Run()
			cancel()
			if err == nil {
				s.wrapper = append(s.wrapper, try...)
				s.Isolated = true
				break
			}
		}
	}
	if !s.Isolated && !allowNetwork {
		return nil, errors.New("migrate: sandbox: cannot run converters without network here (unshare --net refused); --allow-network accepts that")
	}
	return s, nil
}

// RunError is a converter run that did not succeed.
type RunError struct {
	Tool   string
	Reason string // "timed out", "killed by signal 9", "exit status 1", ...
	Stderr string // its last lines
}

func (e *RunError) Error() string {
	s := e.Tool + ": " + e.Reason
	if e.Stderr != "" {
		s += ": " + e.Stderr
	}
	return s
}

// Convert runs tool with args on in and returns the output file's bytes.
// In args, {in} is the input file, {out} the output file, {dir} the
// private directory of the run (e.g. for a converter's profile) and
// {outdir} an empty directory the converter writes its output into under
// a name of its own choosing (LibreOffice): the output is then the one
// file found there. The output must be a regular, non-empty file no
// larger than the output limit.
func (s *Sandbox) Convert(ctx context.Context, tool Tool, args []string, in []byte, outExt string) ([]byte, error) {
	dir, err := os.MkdirTemp(s.dir, "wayside-migrate-*")
	if err != nil {
		return nil, fmt.Errorf("migrate: sandbox: %w", err)
	}
	defer os.RemoveAll(dir)
	inPath := filepath.Join(dir, "source")
	outPath := filepath.Join(dir, "result."+outExt)
	outDir := filepath.Join(dir, "out")
	if err := os.WriteFile(inPath, in, 0o600); err != nil {
		return nil, fmt.Errorf("migrate: sandbox: %w", err)
	}
	if argsHave(args, "{outdir}") {
		if err := os.Mkdir(outDir, 0o700); err != nil {
			return nil, fmt.Errorf("migrate: sandbox: %w", err)
		}
	}
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = strings.NewReplacer("{in}", inPath, "{out}", outPath, "{outdir}", outDir, "{dir}", dir).Replace(a)
	}
	if _, err := s.run(ctx, tool, argv, dir); err != nil {
		return nil, err
	}
	if argsHave(args, "{outdir}") {
		ents, err := os.ReadDir(outDir)
		if err != nil || len(ents) != 1 {
			return nil, &RunError{Tool: tool.Name, Reason: fmt.Sprintf("exited 0 but wrote %d files into its output directory, want 1", len(ents))}
		}
		outPath = filepath.Join(outDir, ents[0].Name())
	}
	fi, err := os.Lstat(outPath)
	switch {
	case err != nil:
		return nil, &RunError{Tool: tool.Name, Reason: "exited 0 but wrote no output"}
	case !fi.Mode().IsRegular():
		return nil, &RunError{Tool: tool.Name, Reason: "output is not a regular file"}
	case fi.Size() == 0:
		return nil, &RunError{Tool: tool.Name, Reason: "output is empty"}
	case fi.Size() > s.lim.Output:
		return nil, &RunError{Tool: tool.Name, Reason: fmt.Sprintf("output of %d bytes is over the limit of %d", fi.Size(), s.lim.Output)}
	}
	return os.ReadFile(outPath)
}

// Probe runs an inspection tool (ffprobe, gs) on data in the sandbox and
// returns its standard output (bounded).
func (s *Sandbox) Probe(ctx context.Context, tool Tool, args []string, data []byte) ([]byte, error) {
	dir, err := os.MkdirTemp(s.dir, "wayside-probe-*")
	if err != nil {
		return nil, fmt.Errorf("migrate: sandbox: %w", err)
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "object")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return nil, fmt.Errorf("migrate: sandbox: %w", err)
	}
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = strings.ReplaceAll(a, "{in}", p)
	}
	return s.run(ctx, tool, argv, dir)
}

// run runs one process in dir and returns its standard output (at most
// 1 MiB kept).
func (s *Sandbox) run(ctx context.Context, tool Tool, argv []string, dir string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.lim.Timeout)
	defer cancel()
	full := append(append(append([]string(nil), s.wrapper...), tool.Path), argv...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "MAGICK_TMPDIR=" + dir, "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr capped
	stdout.max, stderr.max = 1<<20, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, &RunError{Tool: tool.Name, Reason: err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	timedOut := false
	select {
	case err = <-done:
	case <-ctx.Done():
		timedOut = ctx.Err() == context.DeadlineExceeded
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group
		err = <-done
	}
	// Children left behind by a converter that exited are killed too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == nil && ctx.Err() == nil {
		return stdout.Bytes(), nil
	}
	re := &RunError{Tool: tool.Name, Stderr: lastLines(stderr.String(), 3)}
	var ee *exec.ExitError
	switch {
	case timedOut:
		re.Reason = fmt.Sprintf("timed out after %s (killed)", s.lim.Timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			re.Reason = "killed by signal " + ws.Signal().String()
		} else {
			re.Reason = "exit status " + strconv.Itoa(ee.ExitCode())
		}
	default:
		re.Reason = err.Error()
	}
	return nil, re
}

// capped is a buffer keeping at most max bytes (the rest is dropped).
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
