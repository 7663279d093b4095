package main

import (
	"context"
	"errors"
)

// runCDXJ is owned by the cdxj work; it replaces this placeholder.
func runCDXJ(ctx context.Context, e *env, args []string) error {
	return errors.New("cdxj: not built yet")
}
