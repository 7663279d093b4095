package main

import (
	"context"
	"errors"
)

// runFixity is owned by the fixity work; it replaces this placeholder.
func runFixity(ctx context.Context, e *env, args []string) error {
	return errors.New("fixity: not built yet")
}
