package sidecar

import (
	"strings"
	"testing"
	"time"
)

// TestNeedsRestart: the keys a reload applies may differ; any other names
// itself.
func TestNeedsRestart(t *testing.T) {
	old := Config{DataDir: "d", Ingest: IngestConfig{Dirs: []string{"a"}, PollInterval: time.Second}}
	old.Listen.Token = "t1"
	next := old
	next.Ingest.Dirs = []string{"a", "b"}
	next.Ingest.PollInterval = 2 * time.Second
	next.Listen.Token, next.Listen.AllowedOrigins = "t2", []string{"http://x"}
	next.Access.PublicURL = "http://y/"
	if k := needsRestart(old, next); k != "" {
		t.Errorf("reloadable keys changed: %q named as needing a restart", k)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.DataDir = "e" }, "data_dir"},
		{func(c *Config) { c.Listen.TCP = "127.0.0.1:1" }, "listen.tcp"},
		{func(c *Config) { c.Index.URL = "redis://x/" }, "index.url"},
		{func(c *Config) { c.Log.Level = "debug" }, "log.level"},
		{func(c *Config) { c.Ingest.Checkpoint = "cp" }, "ingest.checkpoint"},
	} {
		n := next
		tc.change(&n)
		if k := needsRestart(old, n); !strings.HasPrefix(k, tc.want) {
			t.Errorf("changed %s: needsRestart %q", tc.want, k)
		}
	}
}
