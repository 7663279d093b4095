package main

import (
	"context"
	"errors"
)

// runMementoMap is owned by the mementomap work; it replaces this placeholder.
func runMementoMap(ctx context.Context, e *env, args []string) error {
	return errors.New("mementomap: not built yet")
}
