// Package ddtest forwards to internal/ddtest, the project's data-driven
// test runner (kept so the profiler's tests import it unchanged).
package ddtest

import (
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

// Case is one test case of a file (see internal/ddtest).
type Case = ddtest.Case

// Run runs every case of the file at path through f (see internal/ddtest).
func Run(t *testing.T, path string, update bool, f func(t *testing.T, c *Case) string) {
	t.Helper()
	ddtest.Run(t, path, update, f)
}
