package sidecar

// The dedup index backends the daemon opens by index.url: each registers
// its URL scheme with dedupindex.OpenURL when linked.
import (
	_ "github.com/wayside-archive/wayside/client"            // sidecar:///SOCKET (another daemon)
	_ "github.com/wayside-archive/wayside/dedupindex/pebble" // pebble:///DIR and bare paths
	_ "github.com/wayside-archive/wayside/dedupindex/redis"  // redis://HOST:PORT,...
)
