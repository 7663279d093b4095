package main

import (
	"context"
	"errors"
)

// runDemo is owned by the demo work; it replaces this placeholder.
func runDemo(ctx context.Context, e *env, args []string) error {
	return errors.New("demo: not built yet")
}
