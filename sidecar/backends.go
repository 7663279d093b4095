package sidecar

// The dedup index backends the daemon opens by index.url: each registers
// its URL scheme with dedupindex.OpenURL when linked; and the WARC location
// backends beyond file and http(s) (warcfile.RegisterScheme).
import (
	_ "github.com/wayside-archive/wayside/client"            // sidecar:///SOCKET (another daemon)
	_ "github.com/wayside-archive/wayside/dedupindex/pebble" // pebble:///DIR and bare paths
	_ "github.com/wayside-archive/wayside/dedupindex/redis"  // redis://HOST:PORT,...
	_ "github.com/wayside-archive/wayside/warcfile/s3"       // s3://BUCKET/KEY?endpoint=…
)
