// Package backend opens a dedup index named by URL, so every place that
// names an index (`--index` of crawl and index, `index.url` in the serve
// config, library users) takes the same spelling and any backend:
//
//	pebble:///var/lib/wayside/index   embedded pebble (the default; a bare
//	                                  path means the same)
//	redis://h1:6379,h2:6379/?prefix=wayside:&wait=1&wait_timeout=500ms
//	                                  Redis Cluster shared by a fleet; also
//	                                  lease=10m, capacity=N and byurl=0 (when
//	                                  the index is created), password=…,
//	                                  cluster=0 (one server)
//	sidecar:///run/wayside/wayside.sock
//	sidecar://127.0.0.1:8181          a running `wayside serve` (token from
//	                                  Options.Token or WAYSIDE_TOKEN)
//
// The table of schemes is the registry: one entry per backend subpackage,
// each opened by a small function here, so the backends do not know about
// URLs and the callers do not know about backends.
package backend
