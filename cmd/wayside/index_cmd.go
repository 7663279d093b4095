package main

import (
	"context"
	"errors"
)

// runIndex is owned by the index work; it replaces this placeholder.
func runIndex(ctx context.Context, e *env, args []string) error {
	return errors.New("index: not built yet")
}
