package testenv

import (
	"fmt"
	"os"
	"testing"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// FailpointsEnv is the variable through which KillAt tells a crash child
// which failpoints to arm (ArmChildFailpoints): internal/failpoint.Arm's
// spec, e.g. "dedupindex.delete-batch=57*kill".
const FailpointsEnv = "WAYSIDE_FAILPOINTS"

// ArmChildFailpoints arms, in a crash child, the failpoints its parent
// named in FailpointsEnv.
func ArmChildFailpoints() (disarm func(), err error) {
	return failpoint.Arm(os.Getenv(FailpointsEnv))
}

// KillAt runs the crash child env (CrashChild: "NAME=VALUE" telling the
// package's TestMain what to run) with failpoint point armed to kill it
// (SIGKILL) at its nth hit, and fails t unless it died there. The point
// sits after a durable step, so what the child left is known exactly
// however fast or slow the machine is.
func KillAt(t testing.TB, env, point string, nth int) {
	t.Helper()
	t.Setenv(FailpointsEnv, fmt.Sprintf("%s=%d*kill", point, nth))
	if !CrashChild(t, env, func(string) bool { return false }) {
		t.Fatalf("the crash child (%s) was not killed at %s #%d", env, point, nth)
	}
}

// DeleteKill is the harness of the indexes' delete crash tests
// (dedupindex/pebble, dedupindex/redis, captureindex): a crash child
// deletes the entries of a selection, killed at a chosen durable step
// (KillAt); then Killed checks what the kill left and Finish that running
// the delete again completes it.
type DeleteKill[E any] struct {
	// Entries is everything the store held before the delete.
	Entries []E
	// Selected reports whether the delete selects e.
	Selected func(e E) bool
	// Present reports whether e is in the store after the kill, and an
	// error when it is there but changed (or the lookup failed).
	Present func(e E) (bool, error)
	// Check is the store's own invariant check (counters, secondary
	// entries, markers).
	Check func() error
}

// Killed checks the store after the kill: Check passes, every entry the
// delete does not select is there unchanged, every selected one is there
// unchanged or gone, and exactly wantGone selected ones are gone (the
// steps the child made durable before its kill). what prefixes each
// failure ("round 2"). It returns how many are gone.
func (d DeleteKill[E]) Killed(t testing.TB, what string, wantGone int) (gone int) {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatalf("%s: Check after SIGKILL mid-delete: %v", what, err)
	}
	selected := 0
	for _, e := range d.Entries {
		ok, err := d.Present(e)
		switch {
		case err != nil:
			t.Fatalf("%s: %+v: %v", what, e, err)
		case !ok && !d.Selected(e):
			t.Fatalf("%s: an entry the delete does not select is lost: %+v", what, e)
		case !ok:
			gone++
		}
		if d.Selected(e) {
			selected++
		}
	}
	if gone != wantGone {
		t.Fatalf("%s: %d of the %d selected entries gone after the kill, want %d", what, gone, selected, wantGone)
	}
	return gone
}

// Finish runs the delete again (del, returning how many entries it
// deleted) after a kill that left gone selected entries deleted: it
// deletes exactly the others, and Check passes.
func (d DeleteKill[E]) Finish(t testing.TB, what string, gone int, del func() (int64, error)) {
	t.Helper()
	want := -gone
	for _, e := range d.Entries {
		if d.Selected(e) {
			want++
		}
	}
	if n, err := del(); err != nil || int(n) != want {
		t.Fatalf("%s: finishing delete = %d, %v; want %d", what, n, err, want)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("%s: Check after the finishing delete: %v", what, err)
	}
}
