package replay

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/surt"
)

// RuleSpec is a rule as people write it: a URL (or SURT) and how it
// matches, what access, for whom, and an embargo.
type RuleSpec struct {
	// URL is a URL, "*.example.org", a URL ending in "*", or a SURT
	// prefix ("com,example)/a").
	URL string `json:"url"`
	// Match is exact, prefix (the default), host or domain (the host and
	// its subdomains).
	Match string `json:"match,omitempty"`
	// Access is allow, block, exclude or embargo (exclude captures newer
	// than Embargo).
	Access string `json:"access"`
	// User is the access point the rule applies at ("" every one).
	User string `json:"user,omitempty"`
	// Embargo is a period ("1y", "6m", "30d") for access embargo.
	Embargo string `json:"embargo,omitempty"`
	// Message is sent with a 451.
	Message string `json:"message,omitempty"`
}

// Rules returns the rules the spec stands for (two for a domain).
func (s RuleSpec) Rules() ([]*Rule, error) {
	u := strings.TrimSpace(s.URL)
	if u == "" {
		return nil, errors.New("no URL")
	}
	var keys []string
	exact := false
	var err error
	canon := func(u string) (string, error) {
		if surt.LooksLikeSURT(u) || !strings.Contains(u, ".") && strings.HasSuffix(u, ",") {
			return u, nil
		}
		return surt.Canonicalize(u)
	}
	switch s.Match {
	case "", "prefix":
		var k string
		if k, err = canon(strings.TrimSuffix(u, "*")); err == nil {
			keys = []string{k}
		}
	case "exact":
		var k string
		if k, err = canon(u); err == nil {
			keys, exact = []string{k}, true
		}
	case "host", "domain":
		host := u
		if i := strings.Index(host, "://"); i >= 0 {
			host = host[i+3:]
		}
		host, _, _ = strings.Cut(host, "/")
		host = strings.TrimPrefix(host, "*.")
		var k string
		if k, err = surt.Canonicalize("http://" + host + "/"); err == nil {
			h := strings.TrimSuffix(k, ")/")
			keys = []string{h + ")/"}
			if s.Match == "domain" {
				keys = []string{h + ")", h + ","}
			}
		}
	default:
		return nil, fmt.Errorf("match %q: want exact, prefix, host or domain", s.Match)
	}
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", u, err)
	}
	base := Rule{Access: Access(s.Access), User: s.User, Message: s.Message, URL: u}
	switch s.Access {
	case "embargo":
		if s.Embargo == "" {
			return nil, errors.New("access embargo needs a period (e.g. 1y)")
		}
		base.Access = Exclude
	case string(Allow), string(AllowIgnoreEmbargo), string(Block), string(Exclude):
	default:
		return nil, fmt.Errorf("access %q: want allow, block, exclude or embargo", s.Access)
	}
	if s.Embargo != "" {
		p, err := ParsePeriod(s.Embargo)
		if err != nil {
			return nil, err
		}
		base.Newer = &p
	}
	var out []*Rule
	for _, k := range keys {
		r := base
		r.Key, r.Exact = k, exact
		if err := r.prepare(); err != nil {
			return nil, err
		}
		out = append(out, &r)
	}
	return out, nil
}

// sameSlot reports whether two rules occupy the same place (key, exact
// and access point): adding one replaces the other.
func sameSlot(a, b *Rule) bool { return a.Key == b.Key && a.Exact == b.Exact && a.User == b.User }

// RulesFile is the .aclj file edits go to: path itself, or
// path/wayside.aclj for a directory. An OutbackCDX .json file is not
// edited.
func RulesFile(path string) (string, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, "wayside.aclj"), nil
	}
	if strings.HasSuffix(path, ".json") {
		return "", fmt.Errorf("replay: %s holds OutbackCDX rules, which are not edited here (add an .aclj file beside it)", path)
	}
	return path, nil
}

// EditRules adds rules to (replacing those in the same place) and removes
// rules from the .aclj file RulesFile names, written to a temporary file
// and renamed into place. It returns how many rules were removed.
//
// A path ending in "/" names a directory of rules files: adding to one
// that does not exist yet creates it.
func EditRules(path string, add []*Rule, remove []*Rule) (int, error) {
	if strings.HasSuffix(path, "/") && len(add) > 0 {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return 0, fmt.Errorf("replay: %w", err)
		}
	}
	file, err := RulesFile(path)
	if err != nil {
		return 0, err
	}
	var cur []*Rule
	if data, err := os.ReadFile(file); err == nil {
		if cur, err = ParseACLJ(bytes.NewReader(data), file); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("replay: %w", err)
	}
	removed := 0
	var out []*Rule
	for _, r := range cur {
		drop := false
		for _, x := range append(append([]*Rule(nil), add...), remove...) {
			if sameSlot(r, x) {
				drop = true
			}
		}
		for _, x := range remove {
			if sameSlot(r, x) {
				removed++
				break
			}
		}
		if !drop {
			out = append(out, r)
		}
	}
	out = append(out, add...)
	var buf bytes.Buffer
	if err := WriteACLJ(&buf, out); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("replay: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("replay: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	os.Chmod(tmp.Name(), 0o644)
	if err := os.Rename(tmp.Name(), file); err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	return removed, nil
}
