// Package failpoint is Wayside's one fault-injection mechanism: named
// points in production code where a crash or fault test makes the process
// fail the way a real disk, network or kill would (bbolt's failpoints, in
// the spirit of gofail).
//
// Production code marks a point with Inject or Write:
//
//	if err := failpoint.Inject("rewrite.before-rename"); err != nil {
//		return err
//	}
//	k, err := failpoint.Write("warc.write", len(b)) // k bytes then err, as ENOSPC does
//
// Points are off unless a test arms them with Enable (in its own process)
// or with Arm from a crash child's TestMain (reading the spec its parent
// passed, e.g. "rewrite.before-rename=kill"). No production code arms a
// point (TestNoProductionArming checks the tree), so in a production build
// every point costs one atomic load. The registry is the package's only
// state: failpoints are process-wide by nature, as in bbolt.
//
// A point where the caller can wait (a stage to hold in place until
// shutdown) is marked with Wait(ctx, name) instead of Inject.
//
// Names are "component.point" in lower case. The actions: Error (the point
// returns an error), Hold (Wait blocks until its context ends), ShortWrite (a write puts only the first k bytes on
// disk, then fails), Kill (SIGKILL to the process itself: the crash the
// tests recover from), and Nth (the action fires on the nth hit only).
package failpoint
