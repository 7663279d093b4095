package pebble_test

import (
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
)

func TestConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) indextest.Opener {
		dir := t.TempDir()
		return func() (dedupindex.Index, error) { return pebble.Open(dir) }
	})
}

func TestConformanceWithoutURLIndex(t *testing.T) {
	indextest.Run(t, func(t *testing.T) indextest.Opener {
		dir := t.TempDir()
		return func() (dedupindex.Index, error) { return pebble.Open(dir, pebble.WithoutURLIndex()) }
	})
}
