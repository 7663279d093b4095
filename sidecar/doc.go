// Package sidecar is the `wayside serve` daemon: Wayside's dedup index, CDX
// endpoint, WARC ingest, live MementoMap and fixity sweeps for crawlers not
// written in Go (Heritrix above all), over a Unix socket or loopback HTTP.
//
// It owns:
//   - the configuration (Config: YAML with ${ENV} expansion, defaults,
//     validation whose errors name the key, and CheckDirs: every WARC
//     directory to ingest must exist, so a mistyped path is refused at
//     start-up instead of watched in silence);
//   - the data directory, created 0700 before anything is opened in it
//     (PrepareDirs: one others may write is refused, one they may read is
//     tightened);
//   - the listeners, their limits (Config.Limits: header, body and idle
//     timeouts, a connection limit per listener, a body bound per route;
//     a refused request is answered without reading its body, and its
//     connection closed at once) and their access control: a Unix socket created with
//     mode 0600 (no token), and an optional TCP listener bound to loopback
//     unless explicitly allowed, where every request needs the bearer token,
//     a Host header naming the listener (DNS-rebinding defence) and no
//     foreign Origin (CSRF defence, as caddy's admin API); a second,
//     read-only token opens the CDX query routes only, in the path
//     (/t/<cdx_token>/, for clients configured with a bare URL) or a header;
//   - the JSON dedup API over any dedupindex.Index (lookup, claim, commit,
//     cancel, their batch forms, put, by-URL) with request size limits and
//     {"error": "..."} answers;
//   - the CDX endpoint answering Heritrix's WbmPersistLoadProcessor,
//     Zeno/IA gowarc and warcprox --cdxserver-dedup unchanged, from original
//     captures only, plus OutbackCDX-style POSTs of CDX/CDXJ lines;
//   - the daemon's lifecycle: it opens the dedup index named by index.url
//     (Config.OpenIndex, any dedupindex.OpenURL URL: backends.go links
//     pebble, redis and sidecar), assembles the
//     consumers of the capture spine with package consumers (the live
//     MementoMap, format characterization with its /v1/characterize/
//     query routes when characterize.enabled, and on its store format
//     migration jobs, /v1/migrate (migrate.go), the capture index), runs
//     the WARC ingester of package ingest feeding them,
//     serves the live map (lookup, merge, download) and reports ingest and
//     consumer progress in /v1/status (`wayside status`) and /metrics;
//     on shutdown it stops ingest after its batch, lets the consumers
//     drain and fails the run if one failed;
//   - the fixity scheduler (fixity.Sweeper on cron schedules, on demand,
//     HTML report);
//   - the access routes (package replay: CDX API, Memento TimeMaps and
//     TimeGate, raw and rewritten replay) over the capture index the
//     consumers keep (access.index), for every collection it holds, at
//     /<coll>/...: read-only like the CDX routes (the socket, or the CDX
//     token on TCP);
//   - access rules (access.rules: pywb .aclj files, OutbackCDX JSON;
//     package replay decides) applied on every access route, held in an
//     atomic pointer that the file watcher, the /v1/access/rules routes
//     and a config reload (SetAccessRules, ReloadAccessRules) swap;
//   - the public fronts (public.listen, public.access_points): token-free,
//     read-only listeners, each an access point, serving the CDX API,
//     TimeMaps, TimeGate and the MementoMap, with archived content on an
//     origin of its own (public.content_listen) and nothing else;
//   - the aggregate routes (/aggregate/timemap/{link,json}/<URI-R> and the
//     TimeGate /aggregate/<URI-R>, read-only like the access routes) over
//     the archives of the config's aggregate section, asked only when
//     their MementoMap may hold the URI-R (package aggregate), with the
//     aggregator's counters in /v1/status and /metrics; the live map is
//     served at /mementomap to the read-only CDX token too, and announced
//     in every answer's Link: <…>; rel="mementomap";
//   - what the daemon cannot do, at start-up (a part it cannot open fails
//     New; a fixity browser missing is reported) and while it runs (ingest
//     paused on a full disk, failing consumers): Status.Problems;
//   - Prometheus metrics through prometheus/client_golang from a registry
//     of the Server's own (Metrics: the handlers' counters, latency
//     histograms, the Go and process collectors, and the parts' state read
//     at scrape time). Another part of the daemon registers its own
//     collectors on Metrics().Registerer() (the aggregator's among them).
//
// Server.Reload (SIGHUP in `wayside serve`, POST /v1/admin/reload) reads
// the configuration again through Options.LoadConfig, validates it whole
// and applies the keys that may change while the daemon runs (tokens,
// allowed hosts and origins, watched directories, access settings, fixity
// sweeps, aggregate archives; reload.go lists them): the ingester and the
// fixity scheduler hand over to successors through their supervisors (the
// ingester at its checkpoint), the replay handler and the aggregator are
// swapped. Anything else changed, or an invalid config, is refused: the old
// configuration keeps serving and the refusal is a Status.Problems line.
//
// Server.Backup (POST /v1/admin/backup, `wayside backup`) writes a
// consistent snapshot of every store while the daemon runs: the ingester
// stops at its checkpoint through the same hand-over (its successor held
// until the copy is done), the consumers drain, the pebble indexes are
// checkpointed and the other stores copied under their writers' locks;
// the snapshot is laid out as data_dir (backup.go).
// Ready is closed once Run serves (systemd's READY=1).
//
// WARC file names taken from requests (put, commit, CDX lines, ?file=)
// must be plain base names (warcio.CheckFileName).
//
// The Go client lives in client, the wire types in api and
// the load generator in sidecar/loadgen.
package sidecar
