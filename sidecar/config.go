package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/fixity"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/warcfile"
	"gopkg.in/yaml.v3"
)

// Config is the daemon's configuration, read from a YAML file (see
// LoadConfig) and completed by Defaults. Field names in errors are the YAML
// keys ("listen.tcp").
type Config struct {
	// DataDir holds the index, checkpoints, CDXJ and the MementoMap unless
	// their own paths are set. Default "wayside-data".
	DataDir string       `yaml:"data_dir"`
	Listen  ListenConfig `yaml:"listen"`
	Index   IndexConfig  `yaml:"index"`
	CDX     CDXConfig    `yaml:"cdx"`
	Ingest  IngestConfig `yaml:"ingest"`
	Limits  LimitsConfig `yaml:"limits"`
	Map     MapConfig    `yaml:"mementomap"`
	Fixity  FixityConfig `yaml:"fixity"`
	Access  AccessConfig `yaml:"access"`
	Public  PublicConfig `yaml:"public"`
	// Aggregate lists upstream archives for the MementoMap-routed
	// aggregate routes (package aggregate).
	Aggregate aggregate.Config `yaml:"aggregate"`
	Log       LogConfig        `yaml:"log"`
	// Characterize identifies the format of every ingested capture.
	Characterize CharacterizeConfig `yaml:"characterize"`
}

// ListenConfig says where the daemon listens.
type ListenConfig struct {
	// Unix is the Unix socket path (mode 0600). Default DataDir/wayside.sock.
	// "-" disables the socket.
	Unix string `yaml:"unix"`
	// TCP is an optional loopback address ("127.0.0.1:8181").
	TCP string `yaml:"tcp"`
	// AllowNonLoopback permits a TCP address that is not loopback.
	AllowNonLoopback bool `yaml:"allow_non_loopback"`
	// Token is the bearer token every TCP request must carry
	// (Authorization: Bearer <token> or X-Wayside-Token). Required with TCP.
	Token string `yaml:"token"`
	// TokenFile reads Token from a file (first line) when Token is empty.
	TokenFile string `yaml:"token_file"`
	// CDXToken is a second, read-only token that may appear in the URL path
	// (/t/<cdx_token>/web/timemap/cdx) for clients configured with a URL
	// only (Heritrix, Zeno, warcprox), or in the X-Wayside-Token header. It
	// grants the CDX query routes only.
	CDXToken string `yaml:"cdx_token"`
	// AllowedHosts are extra Host header values accepted on TCP besides
	// the listen address, localhost:<port>, 127.0.0.1:<port> and [::1]:<port>.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are Origin header values accepted; a request carrying
	// any other Origin is refused (browsers send one, crawlers do not).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// ContentFront names a public front (its access point: public.access_point
	// or one of public.access_points) whose content origin serves the
	// mementos asked of listen.tcp: they are redirected there, so
	// archived content never runs on the origin of the API and its
	// tokens. Unset: listen.tcp serves mementos itself in an opaque
	// origin (CSP sandbox allow-scripts: scripts run, but cannot read
	// the origin's answers, submit forms, open windows or navigate the
	// top level).
	ContentFront string `yaml:"content_front"`
}

// IndexConfig selects the dedup index.
type IndexConfig struct {
	// URL names the index (see dedupindex.OpenURL): a directory or
	// pebble:///DIR (embedded), redis://HOST:PORT,HOST:PORT/?prefix=...
	// (a Redis Cluster shared by a fleet). Default: Path.
	URL string `yaml:"url"`
	// Path of the embedded (pebble) index when URL is not set. Default
	// DataDir/index.
	Path string `yaml:"path"`
	// Scope is the default dedup scope for API calls and ingest. Default "default".
	Scope string `yaml:"scope"`
	// Match is the dedup policy of the crawlers this daemon serves:
	// "digest" (URL-agnostic, default) or "url" (same URL). Originals the
	// daemon files (ingest, CDX POST) are keyed for it, one key each, as
	// `wayside index import --match` does. Heritrix's CDX queries find
	// originals by URL under either.
	Match string `yaml:"match"`
}

// CDXConfig configures the CDX query endpoint.
type CDXConfig struct {
	// Scope answered by CDX queries without a scope parameter. Default Index.Scope.
	Scope string `yaml:"scope"`
	// MaxResults caps lines per answer. Default 10000.
	MaxResults int `yaml:"max_results"`
}

// IngestConfig configures the WARC directory watcher.
type IngestConfig struct {
	// Dirs are watched for *.warc, *.warc.gz and their ".open" forms. An
	// entry s3://BUCKET/PREFIX?endpoint=… is a bucket prefix, followed as
	// a directory is (its records are read by range; the capture index
	// stores their locations as URLs).
	Dirs []string `yaml:"dirs"`
	// PollInterval between directory scans. Default 2s.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Checkpoint file. Default DataDir/ingest-checkpoint.json.
	Checkpoint string `yaml:"checkpoint"`
	// CDXJDir receives one CDXJ file per WARC. Default DataDir/cdxj. "-" disables.
	CDXJDir string `yaml:"cdxj_dir"`
	// Scope the ingested originals are indexed into. Default Index.Scope.
	Scope string `yaml:"scope"`
	// CrawlLog is an optional Heritrix crawl.log to tail for capture status.
	CrawlLog string `yaml:"crawl_log"`
	// MinPayload is the smallest payload (bytes) indexed for dedup. Default 1.
	MinPayload int64 `yaml:"min_payload"`
	// MinFreeBytes pauses ingest while a disk it writes to (data_dir, the
	// checkpoint's, cdxj_dir, the embedded index, the capture index, the
	// map, characterization) has less free space than this, so that none
	// of them is cut short; it resumes by itself once space is freed, and
	// `wayside status` says why it waits. Default 64 MiB; -1 checks
	// nothing beforehand (a write that fails for want of space still
	// pauses ingest).
	MinFreeBytes int64 `yaml:"min_free_bytes"`
}

// LimitsConfig bounds requests.
type LimitsConfig struct {
	// MaxBodyBytes caps a request body. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxBatch caps the items of one batch request. Default 1000.
	MaxBatch int `yaml:"max_batch"`
	// MaxCDXPostBytes caps a CDX POST body. Default 64 MiB.
	MaxCDXPostBytes int64 `yaml:"max_cdx_post_bytes"`
	// ClaimTTL is how long a claim made over the API may stay pending
	// before the daemon cancels it (its crawler died). Default 10m.
	ClaimTTL time.Duration `yaml:"claim_ttl"`
	// ReadHeaderTimeout bounds the time a connection may take to send a
	// request's headers: a stalled or trickling client is disconnected.
	// Default 10s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds the time to read a whole request, body included
	// (the response may take longer). Default 1m.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// IdleTimeout closes a keep-alive connection idle this long.
	// Default 2m.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConns caps the connections each listener (the socket, TCP)
	// serves at once; further connections wait, unanswered, in the
	// kernel's accept queue until one closes. Default 256.
	MaxConns int `yaml:"max_conns"`
}

// MapConfig configures the live MementoMap.
type MapConfig struct {
	// Path of the map file. Default DataDir/mementomap.ukvs. "-" disables.
	Path string `yaml:"path"`
	// PublicURL, when set, is announced in Link: <url>; rel="mementomap"
	// (default: the relative </mementomap>).
	PublicURL string `yaml:"public_url"`
	// MergeInterval is how often captures held in memory are merged into
	// the map file. Default 1m.
	MergeInterval time.Duration `yaml:"merge_interval"`
	// Compact compacts the map on every merge (wildcard roll-ups, Alam et
	// al.) with threshold weight Weight (default 8: ~58% of the lines kept
	// at precision ~0.7 in the published measurements).
	Compact bool    `yaml:"compact"`
	Weight  float64 `yaml:"weight"`
	// Name is the archive name written in a new map's !meta header.
	Name string `yaml:"name"`
}

// FixityConfig configures replay-fixity sweeps.
type FixityConfig struct {
	// Dir holds manifests, history and reports. Default DataDir/fixity.
	Dir string `yaml:"dir"`
	// Browser is the Chromium binary. Default: found on PATH.
	Browser string `yaml:"browser"`
	// Archives optionally describes archives with alias host names and
	// exclusion rules (fixity.Archive). Without it, each host of a sweep's
	// archive_hosts is an archive of its own.
	Archives []fixity.Archive `yaml:"archives"`
	Sweeps   []SweepConfig    `yaml:"sweeps"`
}

// SweepConfig is one scheduled fixity sweep.
type SweepConfig struct {
	Name string `yaml:"name"`
	// URIMs lists the mementos to replay; URIMFile names a file with one per line.
	URIMs    []string `yaml:"urims"`
	URIMFile string   `yaml:"urim_file"`
	// Schedule is a standard 5-field cron expression ("0 3 * * *") or a
	// descriptor ("@daily", "@every 6h"). Empty: on demand only.
	Schedule string `yaml:"schedule"`
	// Parallelism is the number of concurrent replays. Default 2.
	Parallelism int `yaml:"parallelism"`
	// ArchiveHosts are the only hosts the sweep may fetch from.
	ArchiveHosts []string `yaml:"archive_hosts"`
	// Timeout per replay. Default 60s.
	Timeout time.Duration `yaml:"timeout"`
	// Evidence keeps each replay as WARC evidence: keep-all, on-change or
	// none (default none); EvidenceMaxBytes bounds the evidence kept
	// (default 1 GiB).
	Evidence         string `yaml:"evidence"`
	EvidenceMaxBytes int64  `yaml:"evidence_max_bytes"`
}

// LogConfig configures structured logs.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// ConfigError is a configuration problem attributed to a YAML key.
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("sidecar: config: %s: %v", e.Key, e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

func keyErr(key, format string, a ...any) error {
	return &ConfigError{Key: key, Err: fmt.Errorf(format, a...)}
}

// LoadConfig reads a YAML config file, expanding ${NAME} and ${NAME:-default}
// in scalar values with getenv ($$ is a literal $). Unknown keys are errors.
// The result still needs Defaults and Validate (flags go in between).
func LoadConfig(path string, getenv func(string) string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("sidecar: config: %w", err)
	}
	return ParseConfig(b, path, getenv)
}

// ParseConfig is LoadConfig on bytes; name is used in errors.
func ParseConfig(b []byte, name string, getenv func(string) string) (Config, error) {
	var c Config
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return c, fmt.Errorf("sidecar: config %s: %w", name, err)
	}
	if len(root.Content) == 0 {
		return c, nil
	}
	if err := expandNode(&root, "", getenv); err != nil {
		return c, err
	}
	// Re-encode the expanded tree and decode strictly so unknown keys fail.
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&root); err != nil {
		return c, fmt.Errorf("sidecar: config %s: %w", name, err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("sidecar: config %s: %w", name, err)
	}
	return c, nil
}

var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`) })

func expandNode(n *yaml.Node, key string, getenv func(string) string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := expandNode(c, key, getenv); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if key != "" {
				k = key + "." + k
			}
			if err := expandNode(n.Content[i+1], k, getenv); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := expandNode(c, fmt.Sprintf("%s[%d]", key, i), getenv); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return nil
		}
		var missing string
		out := envRef().ReplaceAllStringFunc(n.Value, func(m string) string {
			if m == "$$" {
				return "$"
			}
			sub := envRef().FindStringSubmatch(m)
			v := getenv(sub[1])
			if v == "" && sub[2] != "" {
				return sub[3]
			}
			if v == "" && missing == "" {
				missing = sub[1]
			}
			return v
		})
		if missing != "" {
			return keyErr(key, "environment variable %s is not set (use ${%s:-default} for a default)", missing, missing)
		}
		n.Value = out
		if n.Tag == "" || n.Tag == "!" {
			n.Tag = ""
		}
	}
	return nil
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.DataDir == "" {
		c.DataDir = "wayside-data"
	}
	in := func(p *string, name string) {
		if *p == "" {
			*p = filepath.Join(c.DataDir, name)
		}
	}
	in(&c.Listen.Unix, "wayside.sock")
	in(&c.Index.Path, "index")
	if c.Index.URL == "" {
		c.Index.URL = c.Index.Path
	}
	if c.Index.Match == "" {
		c.Index.Match = "digest"
	}
	if c.Index.Scope == "" {
		c.Index.Scope = "default"
	}
	if c.CDX.Scope == "" {
		c.CDX.Scope = c.Index.Scope
	}
	if c.CDX.MaxResults == 0 {
		c.CDX.MaxResults = 10000
	}
	if c.Ingest.PollInterval == 0 {
		c.Ingest.PollInterval = 2 * time.Second
	}
	in(&c.Ingest.Checkpoint, "ingest-checkpoint.json")
	in(&c.Ingest.CDXJDir, "cdxj")
	if c.Ingest.Scope == "" {
		c.Ingest.Scope = c.Index.Scope
	}
	if c.Ingest.MinPayload == 0 {
		c.Ingest.MinPayload = 1
	}
	if c.Ingest.MinFreeBytes == 0 {
		c.Ingest.MinFreeBytes = 64 << 20
	}
	if c.Limits.MaxBodyBytes == 0 {
		c.Limits.MaxBodyBytes = 1 << 20
	}
	if c.Limits.MaxBatch == 0 {
		c.Limits.MaxBatch = 1000
	}
	if c.Limits.MaxCDXPostBytes == 0 {
		c.Limits.MaxCDXPostBytes = 64 << 20
	}
	if c.Limits.ClaimTTL == 0 {
		c.Limits.ClaimTTL = 10 * time.Minute
	}
	if c.Limits.ReadHeaderTimeout == 0 {
		c.Limits.ReadHeaderTimeout = 10 * time.Second
	}
	if c.Limits.ReadTimeout == 0 {
		c.Limits.ReadTimeout = time.Minute
	}
	if c.Limits.IdleTimeout == 0 {
		c.Limits.IdleTimeout = 2 * time.Minute
	}
	if c.Limits.MaxConns == 0 {
		c.Limits.MaxConns = 256
	}
	in(&c.Map.Path, "mementomap.ukvs")
	if c.Map.MergeInterval == 0 {
		c.Map.MergeInterval = time.Minute
	}
	if c.Map.Weight == 0 {
		c.Map.Weight = 8
	}
	in(&c.Fixity.Dir, "fixity")
	in(&c.Access.Index, "capture-index")
	c.Characterize.defaults(c.DataDir)
	c.Aggregate.Defaults(c.DataDir)
	for i := range c.Fixity.Sweeps {
		s := &c.Fixity.Sweeps[i]
		if s.Parallelism == 0 {
			s.Parallelism = 2
		}
		if s.Timeout == 0 {
			s.Timeout = 60 * time.Second
		}
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
}

// ResolveToken fills Listen.Token from Listen.TokenFile when needed.
func (c *Config) ResolveToken() error {
	if c.Listen.Token != "" || c.Listen.TokenFile == "" {
		return nil
	}
	b, err := os.ReadFile(c.Listen.TokenFile)
	if err != nil {
		return keyErr("listen.token_file", "%w", err)
	}
	c.Listen.Token = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if c.Listen.Token == "" {
		return keyErr("listen.token_file", "%s is empty", c.Listen.TokenFile)
	}
	return nil
}

// Validate checks the configuration; errors are *ConfigError naming the key.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if err := c.Characterize.validate(); err != nil {
		add(err)
	}
	if c.Listen.Unix != "-" && len(c.Listen.Unix) > 104 {
		add(keyErr("listen.unix", "%q is longer than the 104 bytes a Unix socket path may have", c.Listen.Unix))
	}
	if c.Listen.Unix == "-" && c.Listen.TCP == "" {
		add(keyErr("listen", "neither a Unix socket nor a TCP address is configured"))
	}
	if c.Listen.TCP != "" {
		host, port, err := net.SplitHostPort(c.Listen.TCP)
		if err != nil {
			add(keyErr("listen.tcp", "%q: %v", c.Listen.TCP, err))
		} else {
			if port == "" {
				add(keyErr("listen.tcp", "%q has no port", c.Listen.TCP))
			}
			if !c.Listen.AllowNonLoopback && !isLoopbackHost(host) {
				add(keyErr("listen.tcp", "%q is not a loopback address (set listen.allow_non_loopback: true to bind it anyway)", c.Listen.TCP))
			}
		}
		if c.Listen.Token == "" {
			add(keyErr("listen.token", "a token is required when listen.tcp is set (or set listen.token_file)"))
		} else if len(c.Listen.Token) < 16 {
			add(keyErr("listen.token", "too short: use at least 16 characters"))
		}
		if c.Listen.CDXToken != "" && len(c.Listen.CDXToken) < 16 {
			add(keyErr("listen.cdx_token", "too short: use at least 16 characters"))
		}
		if c.Listen.CDXToken != "" && c.Listen.CDXToken == c.Listen.Token {
			add(keyErr("listen.cdx_token", "must differ from listen.token (it appears in URLs and logs of crawlers)"))
		}
		if strings.ContainsAny(c.Listen.CDXToken, "/?#% ") {
			add(keyErr("listen.cdx_token", "must not contain '/', '?', '#', '%%' or spaces"))
		}
	}
	for i, o := range c.Listen.AllowedOrigins {
		if !strings.Contains(o, "://") {
			add(keyErr(fmt.Sprintf("listen.allowed_origins[%d]", i), "%q is not an origin (scheme://host[:port])", o))
		}
	}
	if c.Index.Scope == "" {
		add(keyErr("index.scope", "must not be empty"))
	}
	if _, err := dedupindex.ParseURL(c.Index.URL); err != nil {
		add(keyErr("index.url", "%v", err))
	}
	if _, err := dedupindex.ParseMatch(c.Index.Match); err != nil {
		add(keyErr("index.match", "%v", err))
	}
	if c.Map.Path != "-" && c.Ingest.CDXJDir == "-" {
		add(keyErr("mementomap.path", "the live MementoMap catches up from the CDXJ files: set ingest.cdxj_dir, or mementomap.path: - to disable the map"))
	}
	if c.CDX.MaxResults < 0 {
		add(keyErr("cdx.max_results", "must be positive"))
	}
	if c.Ingest.PollInterval < 10*time.Millisecond {
		add(keyErr("ingest.poll_interval", "%v is too short (minimum 10ms)", c.Ingest.PollInterval))
	}
	for i, d := range c.Ingest.Dirs {
		if d == "" {
			add(keyErr(fmt.Sprintf("ingest.dirs[%d]", i), "empty path"))
		} else if warcfile.IsURL(d) {
			if err := warcfile.CheckLocation(d); err != nil {
				add(keyErr(fmt.Sprintf("ingest.dirs[%d]", i), "%v", err))
			}
		}
	}
	if c.Ingest.MinPayload < 0 {
		add(keyErr("ingest.min_payload", "must not be negative"))
	}
	if c.Ingest.MinFreeBytes < -1 {
		add(keyErr("ingest.min_free_bytes", "%d: give a number of bytes, or -1 to check nothing beforehand", c.Ingest.MinFreeBytes))
	}
	if c.Limits.MaxBodyBytes < 1024 {
		add(keyErr("limits.max_body_bytes", "%d is too small (minimum 1024)", c.Limits.MaxBodyBytes))
	}
	if c.Limits.MaxBatch < 1 {
		add(keyErr("limits.max_batch", "must be at least 1"))
	}
	if c.Limits.MaxCDXPostBytes < 1024 {
		add(keyErr("limits.max_cdx_post_bytes", "%d is too small (minimum 1024)", c.Limits.MaxCDXPostBytes))
	}
	if c.Map.MergeInterval < time.Second {
		add(keyErr("mementomap.merge_interval", "%v is too short (minimum 1s)", c.Map.MergeInterval))
	}
	if c.Access.MaxResults < 0 {
		add(keyErr("access.max_results", "must not be negative"))
	}
	if c.Access.TimeMapPageSize < 0 {
		add(keyErr("access.timemap_page_size", "must not be negative"))
	}
	c.Access.check(func(k, msg string) { add(keyErr(k, "%s", msg)) })
	c.Public.check(c.Access.enabled(), func(k, msg string) { add(keyErr(k, "%s", msg)) })
	for i, at := range c.Access.Tokens {
		if at.Token != "" && (at.Token == c.Listen.Token || at.Token == c.Listen.CDXToken) {
			add(keyErr(fmt.Sprintf("access.tokens[%d].token", i), "must differ from listen.token and listen.cdx_token"))
		}
	}
	if cf := c.Listen.ContentFront; cf != "" && c.Public.point(cf) == nil {
		add(keyErr("listen.content_front", "%q is not the access point of a public front (public.access_point, public.access_points[].name)", cf))
	}
	if u := c.Access.PublicURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		add(keyErr("access.public_url", "%q is not an http(s) URL", u))
	}
	c.Aggregate.Check(func(k, msg string) { add(keyErr("aggregate."+k, "%s", msg)) })
	if c.Aggregate.Enabled() && (c.Ingest.Scope == "aggregate" || c.Index.Scope == "aggregate") {
		add(keyErr("ingest.scope", "the collection name \"aggregate\" is taken by the aggregate routes"))
	}
	if c.Map.Weight < 0 {
		add(keyErr("mementomap.weight", "must not be negative"))
	}
	if c.Limits.ClaimTTL < 100*time.Millisecond {
		add(keyErr("limits.claim_ttl", "%v is too short (minimum 100ms)", c.Limits.ClaimTTL))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"limits.read_header_timeout", c.Limits.ReadHeaderTimeout}, {"limits.read_timeout", c.Limits.ReadTimeout}, {"limits.idle_timeout", c.Limits.IdleTimeout}} {
		if d.v < 10*time.Millisecond {
			add(keyErr(d.key, "%v is too short (minimum 10ms)", d.v))
		}
	}
	if c.Limits.ReadTimeout < c.Limits.ReadHeaderTimeout {
		add(keyErr("limits.read_timeout", "%v is shorter than limits.read_header_timeout (%v): it covers the headers too", c.Limits.ReadTimeout, c.Limits.ReadHeaderTimeout))
	}
	if c.Limits.MaxConns < 1 {
		add(keyErr("limits.max_conns", "must be at least 1, got %d", c.Limits.MaxConns))
	}
	names := map[string]bool{}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for i, s := range c.Fixity.Sweeps {
		k := fmt.Sprintf("fixity.sweeps[%d]", i)
		if s.Name == "" || strings.ContainsAny(s.Name, "/ ?#") {
			add(keyErr(k+".name", "%q: a sweep needs a name without '/', '?', '#' or spaces", s.Name))
		} else if names[s.Name] {
			add(keyErr(k+".name", "duplicate sweep name %q", s.Name))
		}
		names[s.Name] = true
		if len(s.URIMs) == 0 && s.URIMFile == "" {
			add(keyErr(k+".urims", "a sweep needs urims or urim_file"))
		}
		if s.Schedule != "" {
			if _, err := parser.Parse(s.Schedule); err != nil {
				add(keyErr(k+".schedule", "%q: %v", s.Schedule, err))
			}
		}
		if s.Parallelism < 1 || s.Parallelism > 64 {
			add(keyErr(k+".parallelism", "%d is out of range 1..64", s.Parallelism))
		}
		if len(s.ArchiveHosts) == 0 {
			add(keyErr(k+".archive_hosts", "list the archive hosts the sweep may fetch from"))
		}
		if _, err := fixity.ParseRetention(s.Evidence); s.Evidence != "" && err != nil {
			add(keyErr(k+".evidence", "%v", err))
		}
		if s.EvidenceMaxBytes < 0 {
			add(keyErr(k+".evidence_max_bytes", "%d is negative", s.EvidenceMaxBytes))
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add(keyErr("log.level", "%q is not one of debug, info, warn, error", c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add(keyErr("log.format", "%q is not one of text, json", c.Log.Format))
	}
	return errors.Join(errs...)
}

// CheckDirs checks what Validate cannot see in the configuration alone:
// every WARC directory to ingest (ingest.dirs) exists and is a directory.
// A daemon watching a mistyped path would otherwise serve silently and
// ingest nothing; a directory the crawler creates later must be created
// (mkdir -p) before the daemon starts. New calls it; so does `wayside
// serve`, before it creates the data directory and the index.
func (c *Config) CheckDirs() error {
	var errs []error
	for i, d := range c.Ingest.Dirs {
		if warcfile.IsURL(d) {
			continue // a bucket prefix: ingest reports a store it cannot reach
		}
		fi, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, keyErr(fmt.Sprintf("ingest.dirs[%d]", i), "%s: no such directory (create it first if the crawler has not yet)", d))
		case err != nil:
			errs = append(errs, keyErr(fmt.Sprintf("ingest.dirs[%d]", i), "%v", err))
		case !fi.IsDir():
			errs = append(errs, keyErr(fmt.Sprintf("ingest.dirs[%d]", i), "%s: not a directory", d))
		}
	}
	return errors.Join(errs...)
}

// ConsumersConfig is the consumers of the capture spine the daemon runs
// (see package consumers), catching up from the ingester's CDXJ files.
func (c *Config) ConsumersConfig(log *slog.Logger) consumers.Config {
	cc := consumers.Config{Logger: log}
	if c.Ingest.CDXJDir != "-" {
		cc.CDXJDirs = []string{c.Ingest.CDXJDir}
	}
	if c.Map.Path != "-" {
		cc.LiveMap = consumers.LiveMapConfig{Path: c.Map.Path, Name: c.Map.Name, MergeInterval: c.Map.MergeInterval,
			Compact: c.Map.Compact, Weight: c.Map.Weight}
	}
	if c.Access.enabled() {
		cc.CaptureIndex = consumers.CaptureIndexConfig{Dir: c.Access.Index, Scope: c.Ingest.Scope}
	}
	cc.Characterize = c.Characterize.consumer(c.localDirs())
	return cc
}

// IngestConfig is the ingester's configuration: originals are seeded under
// the index's scope and match policy; recovered is called once its CDXJ
// files agree with its checkpoint.
func (c *Config) IngestConfig(recovered func(context.Context) error, ctr *ingest.Counters, log *slog.Logger) ingest.Config {
	m, _ := dedupindex.ParseMatch(c.Index.Match) // validated
	ic := ingest.Config{Dirs: c.Ingest.Dirs, PollInterval: c.Ingest.PollInterval, Checkpoint: c.Ingest.Checkpoint,
		CDXJDir: c.Ingest.CDXJDir, CrawlLog: c.Ingest.CrawlLog, Recovered: recovered, Counters: ctr, Logger: log,
		Policy:       dedupindex.Policy{Scope: c.Ingest.Scope, Match: m, MinPayloadSize: c.Ingest.MinPayload},
		MinFreeBytes: max(c.Ingest.MinFreeBytes, 0), SpaceDirs: c.spaceDirs()}
	if ic.CDXJDir == "-" {
		ic.CDXJDir = ""
	}
	return ic
}

// localDirs are the watched entries that are local directories (not
// bucket prefixes).
func (c *Config) localDirs() []string {
	var out []string
	for _, d := range c.Ingest.Dirs {
		if !warcfile.IsURL(d) {
			out = append(out, d)
		}
	}
	return out
}

// spaceDirs are the directories the daemon writes to besides the
// ingester's own (checkpoint, CDXJ): the data directory, the embedded
// index, the capture index, the map's directory and the characterization
// store.
func (c *Config) spaceDirs() []string {
	dirs := []string{c.DataDir}
	if u, err := dedupindex.ParseURL(c.Index.URL); err == nil && u.Path != "" && u.Scheme == "pebble" {
		dirs = append(dirs, u.Path)
	}
	if c.Access.enabled() {
		dirs = append(dirs, c.Access.Index)
	}
	if c.Map.Path != "-" {
		dirs = append(dirs, filepath.Dir(c.Map.Path))
	}
	if c.Characterize.Enabled {
		dirs = append(dirs, c.Characterize.Store)
	}
	return dirs
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// OpenIndex opens the dedup index the configuration names (index.url, or
// the embedded index at index.path) through the backend registry. The
// caller closes it. token authenticates to a sidecar reached over TCP.
func (c *Config) OpenIndex(ctx context.Context, token string, log *slog.Logger) (dedupindex.Index, error) {
	ix, err := dedupindex.OpenURL(ctx, c.Index.URL, dedupindex.OpenOptions{Logger: log, Token: token})
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	return ix, nil
}
