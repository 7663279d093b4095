package main

import (
	"context"
	"errors"
)

// runStatus is owned by the status work; it replaces this placeholder.
func runStatus(ctx context.Context, e *env, args []string) error {
	return errors.New("status: not built yet")
}
