// Package pebblelog routes the log messages of a Pebble store to slog, for
// the stores that embed Pebble (the dedup index, the capture index).
package pebblelog

import (
	"fmt"
	"log/slog"
)

// Logger is a pebble.Logger writing to L: informational messages at debug
// level, errors at error level, each with component=pebble; Fatalf logs and
// panics with the owner's name.
type Logger struct {
	L     *slog.Logger
	Owner string // prefixes the panic of Fatalf, e.g. "dedupindex/pebble"
}

// Infof logs at debug level (compactions, flushes).
func (p Logger) Infof(format string, args ...any) {
	p.L.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

// Errorf logs at error level.
func (p Logger) Errorf(format string, args ...any) {
	p.L.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf logs at error level and panics.
func (p Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.L.Error(msg, "component", "pebble")
	panic(p.Owner + ": fatal: " + msg)
}
