package aggregate

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// dormancy is MemGator's dormant mode for one archive: after Tolerance
// consecutive failures it is not asked for a period, which doubles at
// each failure after waking (up to MaxDormant) and ends with a success.
type dormancy struct {
	mu       sync.Mutex
	failures int
	until    time.Time
	period   time.Duration
}

// asleep reports whether the archive is dormant at now, and until when.
func (d *dormancy) asleep(now time.Time) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.until, now.Before(d.until)
}

// record notes an answer (failed or not) and returns the time the archive
// sleeps until when it has just been put to sleep.
func (d *dormancy) record(failed bool, now time.Time, c *Config) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !failed {
		d.failures, d.period, d.until = 0, 0, time.Time{}
		return time.Time{}, false
	}
	d.failures++
	if d.failures < c.Tolerance {
		return time.Time{}, false
	}
	switch {
	case d.period == 0:
		d.period = c.Dormant
	case d.period < c.MaxDormant:
		d.period = min(2*d.period, c.MaxDormant)
	}
	d.until = now.Add(d.period)
	return d.until, true
}

// normalizeURIR removes dot segments from a URI-R's path, so that the
// URI-R appended to an archive's prefix (with its token) cannot climb out
// of the prefix ("http://x/../../admin"); a host made of dots is refused.
func normalizeURIR(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("URI-R %q: %v", s, err)
	}
	if h := u.Hostname(); strings.Trim(h, ".") == "" || strings.Contains(h, "..") {
		return "", fmt.Errorf("URI-R %q: no valid host", s)
	}
	if !strings.Contains(u.Path, ".") && !strings.Contains(strings.ToLower(u.EscapedPath()), "%2e") {
		return s, nil
	}
	base := &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User, Path: "/"}
	// The decoded path, re-escaped: "%2e%2e" is a dot segment too.
	out := base.ResolveReference(&url.URL{Path: u.Path, RawQuery: u.RawQuery})
	for _, seg := range strings.Split(out.Path, "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("URI-R %q: dot segments", s)
		}
	}
	return out.String(), nil
}

// redactToken keeps an archive's secrets out of the URI-Ms it lists: the
// bearer token and a path token ("/t/<token>/", as a Wayside daemon takes
// its read-only token) of its configured prefixes are cut out; a URI-M
// still holding one is dropped (ok false).
func (up *upstream) redactToken(uriM string) (string, bool) {
	for _, seg := range up.pathTokens {
		uriM = strings.Replace(uriM, "/t/"+seg+"/", "/", 1)
	}
	for _, s := range up.secrets {
		if strings.Contains(uriM, s) {
			return "", false
		}
	}
	return uriM, true
}

// secretsOf lists an archive's secrets: its bearer token and the path
// tokens of its prefixes.
func secretsOf(c ArchiveConfig) (pathTokens, secrets []string) {
	if c.Token != "" {
		secrets = append(secrets, c.Token)
	}
	for _, p := range []string{c.TimeMap, c.TimeGate, c.MementoMap} {
		u, err := url.Parse(p)
		if err != nil {
			continue
		}
		if rest, ok := strings.CutPrefix(u.Path, "/t/"); ok {
			if tok, _, ok := strings.Cut(rest, "/"); ok && tok != "" {
				pathTokens = append(pathTokens, tok)
				secrets = append(secrets, tok)
			}
		}
	}
	return pathTokens, secrets
}
