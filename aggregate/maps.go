package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/mementomap"
)

// Map states (ArchiveStats.MapState).
const (
	mapNone        = "none"
	mapWaiting     = "waiting"
	mapLoaded      = "loaded"
	mapUnavailable = "unavailable"
	mapFiltered    = "filtered"
)

// archiveMap is an archive's MementoMap as the aggregator holds it: memory
// mapped, replaced whole on refresh. Lookups hold the read lock, so a map
// is unmapped only once no lookup reads it.
type archiveMap struct {
	mu    sync.RWMutex
	m     *mementomap.Map // nil: ask the archive for everything
	state string
	url   string // where the map is read (configured or discovered)
	etag  string
	lmod  string
	fstat string // size and mtime of a local map file
	at    time.Time
	lines int64
	err   string

	// kick asks the refresh loop to fetch now (a map URL was discovered).
	kick chan struct{}
}

var scratchPool = sync.Pool{New: func() any { return new(mementomap.Scratch) }}

// mayHold answers whether the archive may hold captures under the HxPx
// key: true unless a loaded map says the key is absent (the most specific
// matching key is an exclusion, or no key matches). Without a map, or
// when the lookup fails, the answer is true: the archive is asked.
func (am *archiveMap) mayHold(key []byte) bool {
	am.mu.RLock()
	defer am.mu.RUnlock()
	if am.m == nil {
		return true
	}
	s := scratchPool.Get().(*mementomap.Scratch)
	defer scratchPool.Put(s)
	mt, err := am.m.Lookup(key, s)
	return err != nil || mt.Present
}

// status returns the map's part of the archive's status.
func (am *archiveMap) status() (state, u string, lines int64, at time.Time, errMsg string) {
	am.mu.RLock()
	defer am.mu.RUnlock()
	return am.state, am.url, am.lines, am.at, am.err
}

// install replaces the map (nil: none) and closes the old one.
func (am *archiveMap) install(m *mementomap.Map, state string, lines int64, errMsg string) {
	am.mu.Lock()
	old := am.m
	am.m, am.state, am.lines, am.err = m, state, lines, errMsg
	if state == mapLoaded {
		am.at = time.Now()
	}
	am.mu.Unlock()
	if old != nil && old != m {
		old.Close()
	}
}

// discovered records a map URL announced by the archive and asks for a
// fetch when it is new.
func (am *archiveMap) discovered(u string) {
	am.mu.Lock()
	changed := am.url != u
	if changed {
		am.url, am.etag, am.lmod = u, "", ""
	}
	am.mu.Unlock()
	if changed {
		select {
		case am.kick <- struct{}{}:
		default:
		}
	}
}

// refreshMap fetches the archive's map again (conditionally) and installs
// it. Any failure leaves the archive without a map — asked for every
// URI-R — until a later fetch succeeds: a stale or broken map could hide
// holdings.
func (a *Aggregator) refreshMap(ctx context.Context, up *upstream) error {
	am := up.amap
	if up.cfg.MementoMap == "" {
		return nil
	}
	am.mu.RLock()
	src, etag, lmod, fstat := am.url, am.etag, am.lmod, am.fstat
	am.mu.RUnlock()
	if src == "" {
		// Discovery: any answer of the archive announces its map.
		if err := a.probe(ctx, up); err != nil {
			return a.mapFailed(up, fmt.Errorf("discover the map: %w", err))
		}
		am.mu.RLock()
		src = am.url
		am.mu.RUnlock()
		if src == "" {
			am.install(nil, mapWaiting, 0, "the archive announces no rel=\"mementomap\" Link")
			return nil
		}
	}
	up.stats.mapFetches.Add(1)
	ctx, cancel := context.WithTimeout(ctx, max(up.cfg.Timeout, 5*time.Minute)) // maps may be large
	defer cancel()
	var body io.ReadCloser
	if isLocal(src) {
		path := strings.TrimPrefix(src, "file://")
		fi, err := os.Stat(path)
		if err != nil {
			return a.mapFailed(up, err)
		}
		st := fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
		if st == fstat && am.loaded() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return a.mapFailed(up, err)
		}
		body, fstat = f, st
	} else {
		hdr := http.Header{}
		if am.loaded() {
			if etag != "" {
				hdr.Set("If-None-Match", etag)
			}
			if lmod != "" {
				hdr.Set("If-Modified-Since", lmod)
			}
		}
		resp, err := a.get(ctx, up, src, hdr, true)
		if err != nil {
			return a.mapFailed(up, err)
		}
		defer resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotModified && am.loaded():
			am.mu.Lock()
			am.at = time.Now()
			am.mu.Unlock()
			return nil
		case resp.StatusCode != http.StatusOK:
			return a.mapFailed(up, fmt.Errorf("GET %s: HTTP %d", src, resp.StatusCode))
		}
		body, etag, lmod = resp.Body, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	}
	m, lines, err := a.loadMap(up, body)
	body.Close()
	if err != nil {
		return a.mapFailed(up, fmt.Errorf("%s: %w", src, err))
	}
	if filtered(m) {
		m.Close()
		up.stats.mapFailures.Add(1)
		am.install(nil, mapFiltered, lines, "the map declares capture filters (!meta filters): it cannot prove absence")
		return nil
	}
	am.mu.Lock()
	am.etag, am.lmod, am.fstat = etag, lmod, fstat
	am.mu.Unlock()
	am.install(m, mapLoaded, lines, "")
	a.log.Debug("aggregate: map loaded", "archive", up.cfg.Name, "url", redact(src), "lines", lines)
	return nil
}

func (am *archiveMap) loaded() bool {
	am.mu.RLock()
	defer am.mu.RUnlock()
	return am.m != nil
}

func (a *Aggregator) mapFailed(up *upstream, err error) error {
	up.stats.mapFailures.Add(1)
	err = fmt.Errorf("aggregate: archive %s: map: %w", up.cfg.Name, err)
	up.amap.install(nil, mapUnavailable, 0, err.Error())
	a.log.Warn("aggregate: MementoMap unavailable; the archive is asked for every URI-R", "archive", up.cfg.Name, "err", err)
	return err
}

// loadMap copies a map (at most MaxMapBytes) into MapDir, memory-maps it,
// checks every line and unlinks the file (the mapping keeps it).
func (a *Aggregator) loadMap(up *upstream, r io.Reader) (*mementomap.Map, int64, error) {
	f, err := os.CreateTemp(a.cfg.MapDir, "."+up.cfg.Name+".tmp-*")
	if err != nil {
		return nil, 0, err
	}
	path := f.Name()
	defer os.Remove(path)
	n, err := io.Copy(f, io.LimitReader(r, a.cfg.MaxMapBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read: %w", err)
	}
	if n > a.cfg.MaxMapBytes {
		return nil, 0, fmt.Errorf("larger than %d bytes (max_map_bytes)", a.cfg.MaxMapBytes)
	}
	m, err := mementomap.OpenMap(path)
	if err != nil {
		return nil, 0, err
	}
	if err := m.Check(); err != nil {
		m.Close()
		return nil, 0, err
	}
	lines, _ := mementomap.DataSize(m)
	return m, lines, nil
}

// filtered reports whether a map says it counts only some captures
// (`!meta {"filters": …}`, as `wayside mementomap generate --status/--mime`
// writes): absence from it does not mean the archive holds nothing.
func filtered(m *mementomap.Map) bool {
	for _, h := range m.Headers() {
		if h.Name != "meta" {
			continue
		}
		var v map[string]json.RawMessage
		if json.Unmarshal(h.Value, &v) == nil {
			if f, ok := v["filters"]; ok && string(f) != "null" && string(f) != "{}" {
				return true
			}
		}
	}
	return false
}

// probe asks the archive for a TimeMap of a placeholder URI-R to read the
// rel="mementomap" Link every Wayside answer carries.
func (a *Aggregator) probe(ctx context.Context, up *upstream) error {
	ctx, cancel := context.WithTimeout(ctx, up.cfg.Timeout)
	defer cancel()
	resp, err := a.get(ctx, up, up.cfg.TimeMap+"http://example.com/", http.Header{}, true)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// noteMapLink reads a rel="mementomap" Link of an archive's answer (for
// archives configured to discover their map). Only a URL on one of the
// archive's own hosts is taken.
func (a *Aggregator) noteMapLink(up *upstream, resp *http.Response) {
	if up.cfg.MementoMap != Discover {
		return
	}
	for _, v := range resp.Header.Values("Link") {
		links, _ := ParseLinks(v)
		for _, l := range links {
			if !l.HasRel("mementomap") {
				continue
			}
			u, err := url.Parse(l.Target)
			if err != nil {
				continue
			}
			u = resp.Request.URL.ResolveReference(u)
			if !up.allowed(u) {
				a.log.Warn("aggregate: ignoring a MementoMap announced outside the archive's hosts", "archive", up.cfg.Name, "url", redact(u.String()))
				continue
			}
			up.amap.discovered(u.String())
			return
		}
	}
}

func isLocal(src string) bool {
	return strings.HasPrefix(src, "file://") || !strings.Contains(src, "://")
}

// runMaps refreshes one archive's map every Refresh (and when its URL is
// discovered) until ctx ends.
func (a *Aggregator) runMaps(ctx context.Context, up *upstream) {
	t := time.NewTicker(up.cfg.Refresh)
	defer t.Stop()
	for {
		if err := a.refreshMap(ctx, up); err != nil && ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-up.amap.kick:
		}
	}
}

// removeStaleTemps removes map downloads a crashed process left in dir
// (older than an hour: a running aggregator's downloads are younger).
func removeStaleTemps(dir string) {
	ms, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(m)
		}
	}
}

// redact removes a CDX token path segment (/t/<token>/) from a URL for
// logs.
func redact(u string) string {
	if i := strings.Index(u, "/t/"); i >= 0 {
		rest := u[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return u[:i] + "/t/…" + rest[j:]
		}
	}
	return u
}
