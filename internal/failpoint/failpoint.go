package failpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Action decides what a point does for an operation of n bytes (0 for a
// point that is not a write): k is how many bytes the operation may still
// complete, err the error it then fails with (nil: proceed normally).
type Action func(n int) (k int, err error)

var (
	armed atomic.Int32 // number of enabled points: 0 is the fast path
	mu    sync.RWMutex
	table = map[string]Action{}
)

// Inject evaluates the point name and returns the error its action
// injects, or nil when the point is not enabled.
func Inject(name string) error {
	if armed.Load() == 0 {
		return nil
	}
	_, err := eval(name, 0)
	return err
}

// Wait evaluates the point name where the caller can wait on ctx: a point
// armed with Hold blocks until ctx ends and returns ctx's error (a stage
// held in place until shutdown); other actions act as for Inject.
func Wait(ctx context.Context, name string) error {
	if armed.Load() == 0 {
		return nil
	}
	_, err := eval(name, 0)
	if errors.Is(err, errHold) {
		fmt.Fprintf(os.Stderr, "failpoint: %s: holding until cancelled\n", name)
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// Write evaluates the point name for a write of n bytes: it returns n and
// nil when the point is off, otherwise how many of the n bytes the caller
// writes before failing with err.
func Write(name string, n int) (int, error) {
	if armed.Load() == 0 {
		return n, nil
	}
	k, err := eval(name, n)
	if err == nil {
		return n, nil
	}
	return max(0, min(k, n)), err
}

func eval(name string, n int) (int, error) {
	mu.RLock()
	a := table[name]
	mu.RUnlock()
	if a == nil {
		return n, nil
	}
	return a(n)
}

// Enable arms the point name with a until the returned function is
// called. Arming a point that is already armed replaces its action.
func Enable(name string, a Action) (disable func()) {
	mu.Lock()
	if _, ok := table[name]; !ok {
		armed.Add(1)
	}
	table[name] = a
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			if _, ok := table[name]; ok {
				delete(table, name)
				armed.Add(-1)
			}
			mu.Unlock()
		})
	}
}

// ErrInjected is the error the Error and ShortWrite actions wrap.
var ErrInjected = errors.New("failpoint: injected fault")

// Error is an action that fails the operation with err (ErrInjected when
// nil) before any byte of it completes.
func Error(err error) Action {
	if err == nil {
		err = ErrInjected
	}
	return func(int) (int, error) { return 0, err }
}

// ShortWrite is an action that lets k bytes of the write complete and then
// fails it with err, as a file system that fills up does.
func ShortWrite(k int, err error) Action {
	if err == nil {
		err = ErrInjected
	}
	return func(n int) (int, error) { return min(k, n), err }
}

// Kill is an action that sends SIGKILL to the process itself: nothing
// after the point runs, no deferred function, no buffer is flushed.
func Kill() Action {
	return func(int) (int, error) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// errHold is what the Hold action returns: Wait turns it into a wait.
var errHold = errors.New("failpoint: hold")

// Hold is an action for points evaluated by Wait: the caller waits there
// until its context ends, after printing "failpoint: NAME: holding until
// cancelled" on stderr (so a test knows the process got there). At a
// point evaluated by Inject or Write it fails the operation.
func Hold() Action {
	return func(int) (int, error) { return 0, errHold }
}

// Nth fires a on the nth evaluation of the point (1-based) and lets every
// other evaluation proceed.
func Nth(nth int, a Action) Action {
	var hits atomic.Int64
	return func(n int) (int, error) {
		if hits.Add(1) == int64(nth) {
			return a(n)
		}
		return n, nil
	}
}

// Arm enables the points a spec names, for crash children started by a
// test: "name=action[;name=action]", where action is "kill", "error",
// "hold" (Hold), "short:K" (ShortWrite of K bytes with syscall.ENOSPC), each optionally
// prefixed by "N*" to fire on the Nth hit only ("3*kill"). It returns the
// function that disarms them all.
func Arm(spec string) (disable func(), err error) {
	var offs []func()
	off := func() {
		for _, f := range offs {
			f()
		}
	}
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, act, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			off()
			return nil, fmt.Errorf("failpoint: %q: want name=action", part)
		}
		nth := 0
		if a, b, ok := strings.Cut(act, "*"); ok {
			v, err := strconv.Atoi(a)
			if err != nil || v < 1 {
				off()
				return nil, fmt.Errorf("failpoint: %q: bad count %q", part, a)
			}
			nth, act = v, b
		}
		var a Action
		switch {
		case act == "kill":
			a = Kill()
		case act == "error":
			a = Error(nil)
		case act == "hold":
			a = Hold()
		case strings.HasPrefix(act, "short:"):
			k, err := strconv.Atoi(strings.TrimPrefix(act, "short:"))
			if err != nil || k < 0 {
				off()
				return nil, fmt.Errorf("failpoint: %q: bad byte count", part)
			}
			a = ShortWrite(k, syscall.ENOSPC)
		default:
			off()
			return nil, fmt.Errorf("failpoint: %q: unknown action %q", part, act)
		}
		if nth > 0 {
			a = Nth(nth, a)
		}
		offs = append(offs, Enable(name, a))
	}
	return off, nil
}
