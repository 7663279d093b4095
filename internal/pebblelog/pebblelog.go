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

// Fatalf logs at error level and panics with a *FatalError, which the
// owner may recover from around a write to report it as an error (Pebble
// calls Fatalf when a commit fails, e.g. on a full disk).
func (p Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.L.Error(msg, "component", "pebble")
	fe := &FatalError{Msg: p.Owner + ": fatal: " + msg}
	for _, a := range args {
		if err, ok := a.(error); ok {
			fe.Err = err
			break
		}
	}
	panic(fe)
}

// FatalError is the panic value of Logger.Fatalf: the message, and the
// first error among its arguments (errors.Is(fe, syscall.ENOSPC) holds for
// a full disk).
type FatalError struct {
	Msg string
	Err error
}

func (f *FatalError) Error() string { return f.Msg }
func (f *FatalError) Unwrap() error { return f.Err }

// Recover, deferred around a write to a Pebble store, turns the panic of
// Fatalf into *err (other panics go on) and returns whether it did.
func Recover(r any, err *error) bool {
	fe, ok := r.(*FatalError)
	if !ok {
		if r != nil {
			panic(r)
		}
		return false
	}
	*err = fe
	return true
}
