package crawl

import (
	"fmt"
	"net/url"
	"strings"
)

// Scope decides which URLs a crawl may fetch: by default URLs on the hosts
// of the seeds; with prefixes, URLs starting with one of them.
type Scope struct {
	hosts    map[string]bool // seed hosts (same-host rule)
	robots   map[string]bool // hosts whose /robots.txt may be fetched
	prefixes []string
}

// ParseSeed parses a seed URL, with a clear error naming it.
func ParseSeed(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("crawl: bad URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("crawl: bad URL %q: scheme must be http or https", s)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("crawl: bad URL %q: no host", s)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// NewScope returns the scope of a crawl of seeds. prefixes, if any,
// replace the same-host rule: a URL is in scope when it starts with one.
func NewScope(seeds []*url.URL, prefixes []string) (*Scope, error) {
	s := &Scope{hosts: map[string]bool{}, robots: map[string]bool{}}
	for _, u := range seeds {
		s.hosts[strings.ToLower(u.Host)] = true
		s.robots[strings.ToLower(u.Host)] = true
	}
	for _, p := range prefixes {
		u, err := ParseSeed(p)
		if err != nil {
			return nil, fmt.Errorf("crawl: bad --prefix: %w", err)
		}
		s.prefixes = append(s.prefixes, u.String())
		s.robots[strings.ToLower(u.Host)] = true
	}
	return s, nil
}

// Allow returns nil for an in-scope URL and an error naming it otherwise.
func (s *Scope) Allow(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("crawl: %s is out of scope: not http(s)", u)
	}
	if u.Path == "/robots.txt" && u.RawQuery == "" && s.robots[strings.ToLower(u.Host)] {
		return nil
	}
	if len(s.prefixes) > 0 {
		str := u.String()
		for _, p := range s.prefixes {
			if strings.HasPrefix(str, p) {
				return nil
			}
		}
		return fmt.Errorf("crawl: %s is out of scope: no prefix matches", u)
	}
	if !s.hosts[strings.ToLower(u.Host)] {
		return fmt.Errorf("crawl: %s is out of scope: host %s is not a seed host", u, u.Host)
	}
	return nil
}
