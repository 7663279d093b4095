package testenv

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// CrashChild runs the test binary again as a crash child: env
// ("NAME=VALUE") tells the package's TestMain what to run and which
// failpoints to arm (internal/failpoint.Arm). Each line the child prints
// goes to line; when line returns true (the child says it is done and
// waits) the child is killed at rest. The child's stdin stays open until
// then, so it can block reading it.
//
// CrashChild reports whether the child died by a SIGKILL it did not get
// from here — its armed failpoint — and fails t if it died any other way
// than by SIGKILL or a zero exit (a child that finished before reaching
// its point). A child still running after two minutes is killed and fails
// t: that bound only catches a hang.
func CrashChild(t testing.TB, env string, line func(string) (done bool)) (atPoint bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var hung atomic.Bool
	timer := time.AfterFunc(2*time.Minute, func() { hung.Store(true); cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	killedHere := false
	for sc.Scan() {
		if line(sc.Text()) {
			cmd.Process.Signal(syscall.SIGKILL)
			killedHere = true
			break
		}
	}
	stdin.Close()
	err = cmd.Wait()
	if !timer.Stop() && hung.Load() {
		t.Fatalf("crash child (%s) still running after 2 minutes", env)
	}
	if err == nil {
		return false
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return !killedHere
		}
	}
	t.Fatalf("crash child (%s): %v", env, err)
	return false
}
