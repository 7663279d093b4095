package main

import (
	"context"
	"errors"
)

// runCrawl is owned by the crawl work; it replaces this placeholder.
func runCrawl(ctx context.Context, e *env, args []string) error {
	return errors.New("crawl: not built yet")
}
