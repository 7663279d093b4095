package main

// The dedup index backends `wayside` links: each registers its URL scheme
// with dedupindex.OpenURL when linked (see dedupindex/registry.go).
import (
	_ "github.com/wayside-archive/wayside/client"            // sidecar:///SOCKET, sidecar://HOST:PORT
	_ "github.com/wayside-archive/wayside/dedupindex/pebble" // pebble:///DIR and bare paths
	_ "github.com/wayside-archive/wayside/dedupindex/redis"  // redis://HOST:PORT,...
)
