package main

import (
	"context"
	"errors"
)

// runServe is owned by the serve work; it replaces this placeholder.
func runServe(ctx context.Context, e *env, args []string) error {
	return errors.New("serve: not built yet")
}
