package fixity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// PolicyVersion names the hashing and exclusion policy implemented by this
// package. It changes whenever the construction documented in the package
// doc changes, so a comparison can tell whether two roots were built alike.
const PolicyVersion = "wayside-fixity/2"

// Archive describes one web archive whose mementos may be replayed.
type Archive struct {
	// Name identifies the archive in manifests and reports.
	Name string `json:"name" yaml:"name"`
	// Hosts lists the archive's host names (with a port when not 80/443).
	// The first is canonical; the others are aliases that canonicalise to
	// it (e.g. archive.today, archive.is, archive.li).
	Hosts []string `json:"hosts" yaml:"hosts"`
	// Exclude lists extra rules for archive banner and replay
	// infrastructure resources. Resources on an archive host whose path is
	// not a URI-M are always excluded as replay infrastructure.
	Exclude []Rule `json:"exclude,omitempty" yaml:"exclude,omitempty"`
	// NoRaw is set when the archive cannot serve raw mementos (the id_
	// modifier); the raw capture is then empty.
	NoRaw bool `json:"no_raw,omitempty" yaml:"no_raw,omitempty"`
}

// Rule excludes resources whose URL (as loaded) matches Pattern.
type Rule struct {
	// Pattern is a Go regular expression matched against the full URL.
	Pattern string `json:"pattern" yaml:"pattern"`
	// Reason is recorded in the manifest, e.g. "banner".
	Reason string `json:"reason" yaml:"reason"`
	re     *regexp.Regexp
}

// Config is the set of archives fixity may replay from.
type Config struct {
	Archives []Archive `json:"archives" yaml:"archives"`
}

// LoadConfig reads a YAML or JSON archive configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fixity: load config: %w", err)
	}
	var c Config
	if strings.EqualFold(filepath.Ext(path), ".json") {
		err = json.Unmarshal(b, &c)
	} else {
		err = yaml.Unmarshal(b, &c)
	}
	if err != nil {
		return nil, fmt.Errorf("fixity: load config %s: %w", path, err)
	}
	if err := c.compile(); err != nil {
		return nil, fmt.Errorf("fixity: load config %s: %w", path, err)
	}
	return &c, nil
}

// NewConfig validates archives and returns a Config.
func NewConfig(archives ...Archive) (*Config, error) {
	c := &Config{Archives: archives}
	if err := c.compile(); err != nil {
		return nil, fmt.Errorf("fixity: config: %w", err)
	}
	return c, nil
}

func (c *Config) compile() error {
	seen := map[string]string{}
	for i := range c.Archives {
		a := &c.Archives[i]
		if len(a.Hosts) == 0 {
			return fmt.Errorf("archive %d (%q) has no hosts", i, a.Name)
		}
		if a.Name == "" {
			a.Name = a.Hosts[0]
		}
		for j, h := range a.Hosts {
			n, err := normHost(h)
			if err != nil {
				return fmt.Errorf("archive %q: host %q: %w", a.Name, h, err)
			}
			if other, dup := seen[n]; dup {
				return fmt.Errorf("archive %q: host %q already belongs to archive %q", a.Name, h, other)
			}
			seen[n] = a.Name
			a.Hosts[j] = n
		}
		for j := range a.Exclude {
			re, err := regexp.Compile(a.Exclude[j].Pattern)
			if err != nil {
				return fmt.Errorf("archive %q: exclude rule %d: %w", a.Name, j, err)
			}
			a.Exclude[j].re = re
			if a.Exclude[j].Reason == "" {
				a.Exclude[j].Reason = "rule"
			}
		}
	}
	return nil
}

// Digest is a SHA-256 over the policy version and the configuration, so
// manifests record exactly which exclusion rules produced them.
func (c *Config) Digest() string {
	b, _ := json.Marshal(c)
	h := sha256.Sum256(append([]byte(PolicyVersion+"\n"), b...))
	return hex.EncodeToString(h[:])
}

// ArchiveFor returns the archive serving host (host or host:port), or nil.
func (c *Config) ArchiveFor(host string) *Archive {
	n, err := normHost(host)
	if err != nil {
		return nil
	}
	for i := range c.Archives {
		for _, h := range c.Archives[i].Hosts {
			if h == n {
				return &c.Archives[i]
			}
		}
	}
	return nil
}

// CheckTarget reports whether raw may be replayed: an http or https URL on
// a configured archive host. Everything else (file:, data:, other hosts,
// private-network addresses outside the list) is refused.
func (c *Config) CheckTarget(raw string) (*Archive, *url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("fixity: target %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, nil, fmt.Errorf("fixity: target %q: scheme %q refused: only http and https URI-Ms are replayed", raw, u.Scheme)
	}
	a := c.ArchiveFor(u.Host)
	if a == nil {
		return nil, nil, fmt.Errorf("fixity: target %q: host %q is not a configured archive host", raw, u.Host)
	}
	return a, u, nil
}

// normHost lowercases a host, strips a trailing dot and the default ports.
func normHost(h string) (string, error) {
	h = strings.ToLower(strings.TrimSpace(h))
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = h, ""
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", fmt.Errorf("empty host")
	}
	if port == "80" || port == "443" {
		port = ""
	}
	if strings.ContainsAny(host, "/?#@ ") {
		return "", fmt.Errorf("not a host name")
	}
	if port != "" {
		return net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]", nil
	}
	return host, nil
}
