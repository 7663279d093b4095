package aggregate

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ArchiveConfig is one upstream archive, as listed in the `aggregate:`
// section of the serve YAML.
type ArchiveConfig struct {
	// Name identifies the archive in statistics, partial-answer markers
	// and labelled lookup sets ([A-Za-z0-9._-]).
	Name string `yaml:"name" json:"name"`
	// TimeMap is the URL prefix the URI-R is appended to for its
	// link-format TimeMap (MemGator's "timemap"), e.g.
	// "http://127.0.0.1:8181/t/<cdx_token>/default/timemap/link/".
	TimeMap string `yaml:"timemap" json:"timemap"`
	// TimeGate is the URL prefix of the archive's TimeGate (MemGator's
	// "timegate"). Optional: without it, TimeGate requests read the
	// archive's TimeMap instead.
	TimeGate string `yaml:"timegate" json:"timegate,omitempty"`
	// MementoMap is where the archive's MementoMap is read: an http(s)
	// URL, a local file path, "discover" (the URL the archive announces
	// in a Link: <…>; rel="mementomap" header, on its own host only) or
	// empty (no map: the archive is asked for every URI-R).
	MementoMap string `yaml:"mementomap" json:"mementomap,omitempty"`
	// Timeout bounds each request to this archive (default: the
	// aggregate deadline).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// Priority orders mementos with equal datetimes and breaks TimeGate
	// ties (higher first).
	Priority int `yaml:"priority" json:"priority,omitempty"`
	// Token, when set, is sent as "Authorization: Bearer <token>" to this
	// archive's host (a Wayside sidecar's read-only cdx_token keeps it out
	// of URLs).
	Token string `yaml:"token" json:"-"`
	// Refresh is how often the map is fetched again (default: the
	// aggregate refresh).
	Refresh time.Duration `yaml:"refresh" json:"refresh,omitempty"`
}

// Config configures an Aggregator.
type Config struct {
	Archives []ArchiveConfig `yaml:"archives"`
	// Deadline bounds a whole aggregated request: archives that have not
	// answered by then are left out and the answer is marked partial.
	// Default 10s.
	Deadline time.Duration `yaml:"deadline"`
	// Refresh is how often each MementoMap is fetched again. Default 5m.
	// A map fetched at time T does not know what the archive captured
	// after T: the refresh interval bounds how long such a capture can be
	// routed past.
	Refresh time.Duration `yaml:"refresh"`
	// MapDir holds the downloaded maps while they are memory-mapped
	// (unlinked once open). Default DATA_DIR/aggregate.
	MapDir string `yaml:"map_dir"`
	// SpillDir holds each request's upstream mementos while they are
	// merged (files unlinked at creation: nothing stays after a request
	// or a crash). Default DATA_DIR/aggregate-spill (the system's
	// temporary directory without a data directory). A request spills at
	// most twice what its archives send (MaxPages × MaxTimeMapBytes each).
	SpillDir string `yaml:"spill_dir"`
	// MaxTimeMapBytes caps one upstream TimeMap page (decoded). Default
	// 32 MiB.
	MaxTimeMapBytes int64 `yaml:"max_timemap_bytes"`
	// MaxMapBytes caps one downloaded MementoMap. Default 1 GiB.
	MaxMapBytes int64 `yaml:"max_map_bytes"`
	// MaxPages caps the pages of one upstream TimeMap followed through
	// Link: rel="next" (same host only). Default 10.
	MaxPages int `yaml:"max_pages"`
	// UserAgent is sent with every upstream request. Default
	// "wayside-aggregate".
	UserAgent string `yaml:"user_agent"`
	// Tolerance is the consecutive failures (errors, timeouts) after which
	// an archive is put to sleep for Dormant, doubling at each failure
	// after it wakes up to MaxDormant, until it answers again (MemGator's
	// dormant mode). Defaults 3, 15m, 24h.
	// CacheTTL is how long an archive's TimeMap answer is reused at most
	// (less when its Cache-Control says so; never with no-store,
	// no-cache or private). Default 5m; negative: no cache.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// CacheMementos bounds the mementos the cache holds in all (least
	// recently used out first). Default 1,000,000.
	CacheMementos int           `yaml:"cache_mementos"`
	Tolerance     int           `yaml:"tolerance"`
	Dormant       time.Duration `yaml:"dormant"`
	MaxDormant    time.Duration `yaml:"max_dormant"`
}

// Enabled reports whether any archive is configured.
func (c *Config) Enabled() bool { return len(c.Archives) > 0 }

// Defaults fills unset fields; dataDir is the directory MapDir defaults
// under.
func (c *Config) Defaults(dataDir string) {
	if c.Deadline == 0 {
		c.Deadline = 10 * time.Second
	}
	if c.Refresh == 0 {
		c.Refresh = 5 * time.Minute
	}
	if c.MapDir == "" {
		c.MapDir = filepath.Join(dataDir, "aggregate")
	}
	if c.SpillDir == "" {
		c.SpillDir = os.TempDir()
		if dataDir != "" {
			c.SpillDir = filepath.Join(dataDir, "aggregate-spill")
		}
	}
	if c.MaxTimeMapBytes == 0 {
		c.MaxTimeMapBytes = 32 << 20
	}
	if c.MaxMapBytes == 0 {
		c.MaxMapBytes = 1 << 30
	}
	if c.MaxPages == 0 {
		c.MaxPages = 10
	}
	if c.UserAgent == "" {
		c.UserAgent = "wayside-aggregate"
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = 5 * time.Minute
	}
	if c.CacheMementos == 0 {
		c.CacheMementos = 1000000
	}
	if c.Tolerance == 0 {
		c.Tolerance = 3
	}
	if c.Dormant == 0 {
		c.Dormant = 15 * time.Minute
	}
	if c.MaxDormant == 0 {
		c.MaxDormant = 24 * time.Hour
	}
	if c.MaxDormant < c.Dormant {
		c.MaxDormant = c.Dormant
	}
	for i := range c.Archives {
		a := &c.Archives[i]
		// As MemGator does: the URI-R is appended after a slash.
		if a.TimeMap != "" && !strings.HasSuffix(a.TimeMap, "/") {
			a.TimeMap += "/"
		}
		if a.TimeGate != "" && !strings.HasSuffix(a.TimeGate, "/") {
			a.TimeGate += "/"
		}
		if a.Timeout == 0 || a.Timeout > c.Deadline {
			a.Timeout = c.Deadline
		}
		if a.Refresh == 0 {
			a.Refresh = c.Refresh
		}
	}
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// Discover is the ArchiveConfig.MementoMap value that finds the map
// through the archive's rel="mementomap" Link header.
const Discover = "discover"

// Check reports each problem of a defaulted configuration with the YAML
// key it concerns (relative to the aggregate section, e.g.
// "archives[1].timemap").
func (c *Config) Check(report func(key, msg string)) {
	if !c.Enabled() {
		return
	}
	if c.Deadline < 10*time.Millisecond {
		report("deadline", fmt.Sprintf("%v is too short (minimum 10ms)", c.Deadline))
	}
	if c.Refresh < time.Second {
		report("refresh", fmt.Sprintf("%v is too short (minimum 1s)", c.Refresh))
	}
	if c.MaxTimeMapBytes < 1024 {
		report("max_timemap_bytes", fmt.Sprintf("%d is too small (minimum 1024)", c.MaxTimeMapBytes))
	}
	if c.MaxMapBytes < 1024 {
		report("max_map_bytes", fmt.Sprintf("%d is too small (minimum 1024)", c.MaxMapBytes))
	}
	if c.MaxPages < 1 || c.MaxPages > 1000 {
		report("max_pages", fmt.Sprintf("%d is out of range 1..1000", c.MaxPages))
	}
	names := map[string]bool{}
	for i, a := range c.Archives {
		k := fmt.Sprintf("archives[%d]", i)
		switch {
		case !nameRE().MatchString(a.Name):
			report(k+".name", fmt.Sprintf("%q: want 1 to 64 letters, digits, '.', '_' or '-'", a.Name))
		case names[a.Name]:
			report(k+".name", fmt.Sprintf("duplicate archive name %q", a.Name))
		}
		names[a.Name] = true
		if a.TimeMap == "" {
			report(k+".timemap", "missing: the URL prefix of the archive's link-format TimeMaps")
		} else if err := checkPrefix(a.TimeMap); err != nil {
			report(k+".timemap", err.Error())
		}
		if a.TimeGate != "" {
			if err := checkPrefix(a.TimeGate); err != nil {
				report(k+".timegate", err.Error())
			}
		}
		if m := a.MementoMap; m != "" && m != Discover && strings.Contains(m, "://") {
			if u, err := url.Parse(m); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") || (u.Scheme != "file" && u.Host == "") {
				report(k+".mementomap", fmt.Sprintf("%q: want an http(s) URL, a file path or %q", m, Discover))
			}
		}
		if a.Timeout < 0 {
			report(k+".timeout", "must not be negative")
		}
		if a.Refresh < time.Second {
			report(k+".refresh", fmt.Sprintf("%v is too short (minimum 1s)", a.Refresh))
		}
		if strings.ContainsAny(a.Token, "\r\n") {
			report(k+".token", "must not contain line breaks")
		}
	}
}

// checkPrefix checks a TimeMap or TimeGate URL prefix.
func checkPrefix(p string) error {
	u, err := url.Parse(p)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %v", p, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http(s) URL", p)
	case u.Host == "":
		return fmt.Errorf("%q has no host", p)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: a prefix the URI-R is appended to cannot hold a query or fragment", p)
	}
	return nil
}
