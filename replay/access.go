package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/surt"
)

// Access is what a rule does to the captures it matches (pywb's access
// types).
type Access string

const (
	// Allow shows the captures (subject to an embargo a rule's date
	// conditions set).
	Allow Access = "allow"
	// AllowIgnoreEmbargo is Allow (pywb names it so; rules here carry
	// their own date conditions, so there is no separate embargo to skip).
	AllowIgnoreEmbargo Access = "allow_ignore_embargo"
	// Exclude hides the captures as if the archive did not hold them: not
	// listed in the CDX API or TimeMaps, a 404 on replay (pywb's exclude).
	Exclude Access = "exclude"
	// Block lists the captures but refuses their content: 451 with the
	// rule's message (pywb's block).
	Block Access = "block"
)

// Period is a time interval in calendar units (pywb's newer/older,
// OutbackCDX's period).
type Period struct {
	Years  int `json:"years,omitempty"`
	Months int `json:"months,omitempty"`
	Weeks  int `json:"weeks,omitempty"`
	Days   int `json:"days,omitempty"`
}

// IsZero reports whether the period is empty.
func (p *Period) IsZero() bool { return p == nil || *p == Period{} }

// Before returns now minus the period.
func (p *Period) Before(now time.Time) time.Time {
	return now.AddDate(-p.Years, -p.Months, -(7*p.Weeks + p.Days))
}

// ParsePeriod reads "1y", "6m", "2w", "30d" or a combination ("1y6m").
func ParsePeriod(s string) (Period, error) {
	var p Period
	rest := strings.TrimSpace(s)
	if rest == "" {
		return p, fmt.Errorf("period %q: empty (want e.g. 1y, 6m, 2w, 30d)", s)
	}
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) || i > 6 {
			return p, fmt.Errorf("period %q: want numbers followed by y, m, w or d (e.g. 1y6m)", s)
		}
		n := 0
		fmt.Sscanf(rest[:i], "%d", &n)
		switch rest[i] {
		case 'y':
			p.Years += n
		case 'm':
			p.Months += n
		case 'w':
			p.Weeks += n
		case 'd':
			p.Days += n
		default:
			return p, fmt.Errorf("period %q: unit %q: want y, m, w or d", s, rest[i])
		}
		rest = rest[i+1:]
	}
	return p, nil
}

// Rule is one access rule. It matches a capture whose urlkey starts with
// Key (equals it when Exact), at an access point (User "" matches every
// one) and, when it has date conditions, a capture date meeting all of
// them. Of the rules matching a capture the most specific decides: the
// longest key, then an exact rule, then one naming the access point, then
// the first listed.
type Rule struct {
	Key    string `json:"-"`
	Exact  bool   `json:"-"`
	Access Access `json:"access"`
	URL    string `json:"url,omitempty"`
	User   string `json:"user,omitempty"`
	// Before and After are 1 to 14-digit timestamps: the rule matches
	// captures before (after) them (pywb's before/after).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Newer and Older match captures newer (older) than the period
	// before now: an embargo is {"access": "exclude", "newer": {...}}.
	Newer *Period `json:"newer,omitempty"`
	Older *Period `json:"older,omitempty"`
	// Message is shown with a 451 (OutbackCDX's publicMessage).
	Message string `json:"message,omitempty"`
	// AccessedFrom and AccessedTo bound when the rule is in force
	// (OutbackCDX's accessed range); zero: always.
	AccessedFrom time.Time `json:"accessed_from,omitzero"`
	AccessedTo   time.Time `json:"accessed_to,omitzero"`
	// Source names where the rule was read (file:line).
	Source string `json:"-"`

	before, after time.Time
}

// ACLJKey is the rule's key as an .aclj line starts with it (### marks
// an exact rule).
func (r *Rule) ACLJKey() string {
	if r.Exact {
		return r.Key + exactSuffix
	}
	return r.Key
}

// ACLJ returns the rule as an .aclj line (without newline).
func (r *Rule) ACLJ() string {
	b, _ := json.Marshal(r)
	return r.ACLJKey() + " - " + string(b)
}

// Embargo reports whether the rule is an embargo (it hides or blocks
// captures newer than a period).
func (r *Rule) Embargo() bool {
	return !r.Newer.IsZero() && (r.Access == Exclude || r.Access == Block)
}

const exactSuffix = "###"

func (r *Rule) prepare() error {
	switch r.Access {
	case Allow, AllowIgnoreEmbargo, Exclude, Block:
	default:
		return fmt.Errorf("access %q: want allow, allow_ignore_embargo, block or exclude", r.Access)
	}
	var err error
	if r.Before != "" {
		if r.before, err = ParseTimestamp(r.Before, false); err != nil {
			return fmt.Errorf("before: %w", err)
		}
	}
	if r.After != "" {
		if r.after, err = ParseTimestamp(r.After, true); err != nil {
			return fmt.Errorf("after: %w", err)
		}
	}
	return nil
}

// applies reports whether the rule's conditions other than the key hold.
func (r *Rule) applies(point string, t, now time.Time) bool {
	if r.User != "" && r.User != point {
		return false
	}
	if !r.AccessedFrom.IsZero() && now.Before(r.AccessedFrom) || !r.AccessedTo.IsZero() && now.After(r.AccessedTo) {
		return false
	}
	if !r.before.IsZero() && !t.Before(r.before) || !r.after.IsZero() && !t.After(r.after) {
		return false
	}
	if !r.Newer.IsZero() && !t.After(r.Newer.Before(now)) {
		return false
	}
	if !r.Older.IsZero() && !t.Before(r.Older.Before(now)) {
		return false
	}
	return true
}

// Rules is an immutable set of access rules, safe for concurrent use.
// Replace it as a whole (an atomic pointer) to change the rules.
type Rules struct {
	byKey   map[string][]*Rule // key → rules in precedence order
	lengths []int              // distinct key lengths, longest first
	list    []*Rule            // as read
	// Default is the access when no rule matches (pywb's default_access).
	Default Access
	// Source names the file or directory read (for messages).
	Source string
}

// NewRules indexes rules; def is the access when none matches (default
// allow).
func NewRules(rules []*Rule, def Access) (*Rules, error) {
	if def == "" {
		def = Allow
	}
	if def != Allow && def != Block && def != Exclude {
		return nil, fmt.Errorf("replay: default access %q: want allow, block or exclude", def)
	}
	rs := &Rules{byKey: map[string][]*Rule{}, Default: def}
	lens := map[int]bool{}
	for _, r := range rules {
		if err := r.prepare(); err != nil {
			return nil, fmt.Errorf("replay: access rule %s: %w", r.Source, err)
		}
		rs.byKey[r.Key] = append(rs.byKey[r.Key], r)
		lens[len(r.Key)] = true
		rs.list = append(rs.list, r)
	}
	for l := range lens {
		rs.lengths = append(rs.lengths, l)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(rs.lengths)))
	for _, l := range rs.byKey {
		sort.SliceStable(l, func(i, j int) bool {
			if l[i].Exact != l[j].Exact {
				return l[i].Exact
			}
			return l[i].User != "" && l[j].User == ""
		})
	}
	return rs, nil
}

// List returns the rules as read, in order.
func (rs *Rules) List() []*Rule {
	if rs == nil {
		return nil
	}
	return rs.list
}

// Len is the number of rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.list)
}

// Decision is the outcome of the rules for one capture.
type Decision struct {
	Access Access
	// Rule is the rule that decided (nil: the default).
	Rule *Rule
}

// Visible reports whether the capture is listed (not excluded).
func (d Decision) Visible() bool { return d.Access != Exclude }

// Replayable reports whether the capture's content may be served.
func (d Decision) Replayable() bool { return d.Access == Allow || d.Access == AllowIgnoreEmbargo }

// Reason is the message of a blocked capture.
func (d Decision) Reason() string {
	if d.Rule != nil && d.Rule.Message != "" {
		return d.Rule.Message
	}
	if d.Rule != nil {
		return fmt.Sprintf("access to this capture is blocked by the archive's access rules (%s %s)", d.Rule.Access, d.Rule.ACLJKey())
	}
	return "access to this capture is blocked by the archive's access rules"
}

// Decide returns the decision for a capture with urlkey key captured at t,
// requested through an access point, at now.
func (rs *Rules) Decide(key string, t time.Time, point string, now time.Time) Decision {
	if rs == nil {
		return Decision{Access: Allow}
	}
	for _, l := range rs.lengths {
		if l > len(key) {
			continue
		}
		for _, r := range rs.byKey[key[:l]] {
			if r.Exact && l != len(key) {
				continue
			}
			if r.applies(point, t, now) {
				return Decision{Access: r.Access, Rule: r}
			}
		}
	}
	return Decision{Access: rs.Default}
}

// Checker decides for the captures of one request: it keeps the rules
// that can match the last urlkey it saw, so a TimeMap or a CDX answer
// pays the key lookups once per URL, not per capture.
type Checker struct {
	rs    *Rules
	point string
	now   time.Time
	key   string
	cands []*Rule
	valid bool
}

// Checker returns a checker for one request at an access point.
func (rs *Rules) Checker(point string) *Checker {
	return &Checker{rs: rs, point: point, now: time.Now()}
}

// Decide returns the decision for one capture.
func (c *Checker) Decide(key string, t time.Time) Decision {
	if c == nil || c.rs == nil || len(c.rs.list) == 0 {
		d := Decision{Access: Allow}
		if c != nil && c.rs != nil {
			d.Access = c.rs.Default
		}
		return d
	}
	if !c.valid || key != c.key {
		c.key, c.cands, c.valid = key, c.cands[:0], true
		for _, l := range c.rs.lengths {
			if l > len(key) {
				continue
			}
			for _, r := range c.rs.byKey[key[:l]] {
				if (!r.Exact || l == len(key)) && (r.User == "" || r.User == c.point) {
					c.cands = append(c.cands, r)
				}
			}
		}
	}
	for _, r := range c.cands {
		if r.applies(c.point, t, c.now) {
			return Decision{Access: r.Access, Rule: r}
		}
	}
	return Decision{Access: c.rs.Default}
}

// Entry decides for an index entry.
func (c *Checker) Entry(e *captureindex.Entry) Decision { return c.Decide(e.Key, e.Date) }

// ParseACLJ reads pywb's .aclj format: one rule a line, "<SURT> - <JSON>"
// (a SURT ending in ### is an exact rule), blank lines and # comments
// skipped. name is used in errors.
func ParseACLJ(r io.Reader, name string) ([]*Rule, error) {
	var out []*Rule
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") && !strings.HasPrefix(line, exactSuffix) {
			continue
		}
		key, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("replay: %s line %d: want \"<SURT> - <JSON>\"", name, n)
		}
		rest = strings.TrimSpace(rest)
		if ts, js, ok := strings.Cut(rest, " "); ok && !strings.HasPrefix(rest, "{") {
			_ = ts // the timestamp field pywb reserves ("-")
			rest = strings.TrimSpace(js)
		}
		rule := &Rule{Source: fmt.Sprintf("%s:%d", name, n)}
		dec := json.NewDecoder(strings.NewReader(rest))
		if err := dec.Decode(rule); err != nil {
			return nil, fmt.Errorf("replay: %s line %d: %w", name, n, err)
		}
		rule.Key, rule.Exact = strings.CutSuffix(key, exactSuffix)
		if err := rule.prepare(); err != nil {
			return nil, fmt.Errorf("replay: %s line %d: %w", name, n, err)
		}
		out = append(out, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: %s: %w", name, err)
	}
	return out, nil
}

// outbackRule is an OutbackCDX access rule.
type outbackRule struct {
	ID          int64    `json:"id"`
	PolicyID    int64    `json:"policyId"`
	URLPatterns []string `json:"urlPatterns"`
	Captured    *struct {
		Start, End *time.Time
	} `json:"captured"`
	Accessed *struct {
		Start, End *time.Time
	} `json:"accessed"`
	Period        *Period `json:"period"`
	PublicMessage string  `json:"publicMessage"`
	Enabled       *bool   `json:"enabled"`
}

type outbackPolicy struct {
	ID           int64    `json:"id"`
	Name         string   `json:"name"`
	AccessPoints []string `json:"accessPoints"`
}

// outbackDefaultPolicies are OutbackCDX's policies when a file gives
// none.
var outbackDefaultPolicies = []outbackPolicy{
	{ID: 1, Name: "Public", AccessPoints: []string{"public", "staff"}},
	{ID: 2, Name: "Staff Only", AccessPoints: []string{"staff"}},
	{ID: 3, Name: "No Access"},
}

// ParseOutbackCDX reads OutbackCDX's access rules as JSON: an array of
// rules, or {"rules": [...], "policies": [...]} (OutbackCDX's default
// policies when none are given: 1 public and staff, 2 staff, 3 none). A
// rule's captures are excluded at the access points its policy does not
// list (blocked with its publicMessage when it has one) and allowed at
// the others; its url patterns are pywb's CDX url forms (*.example.org,
// http://example.org/*, an exact URL), its captured range and period
// (an embargo: captures newer than it) restrict it by capture date, its
// accessed range by the time of access.
func ParseOutbackCDX(data []byte, name string) ([]*Rule, error) {
	var doc struct {
		Rules    []outbackRule   `json:"rules"`
		Policies []outbackPolicy `json:"policies"`
	}
	trimmed := bytes.TrimSpace(data)
	var err error
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(trimmed, &doc.Rules)
	} else {
		err = json.Unmarshal(trimmed, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %s: OutbackCDX rules: %w", name, err)
	}
	if len(doc.Policies) == 0 {
		doc.Policies = outbackDefaultPolicies
	}
	pol := map[int64]outbackPolicy{}
	for _, p := range doc.Policies {
		pol[p.ID] = p
	}
	var out []*Rule
	for i, or := range doc.Rules {
		src := fmt.Sprintf("%s rule %d (id %d)", name, i+1, or.ID)
		if or.Enabled != nil && !*or.Enabled {
			continue
		}
		p, ok := pol[or.PolicyID]
		if !ok {
			return nil, fmt.Errorf("replay: %s: policyId %d is not a policy", src, or.PolicyID)
		}
		base := Rule{Source: src, Message: or.PublicMessage}
		if or.Period != nil && !or.Period.IsZero() {
			pp := *or.Period
			base.Newer = &pp
		}
		if or.Captured != nil {
			if or.Captured.Start != nil {
				base.After = Timestamp(or.Captured.Start.Add(-time.Second))
			}
			if or.Captured.End != nil {
				base.Before = Timestamp(or.Captured.End.Add(time.Second))
			}
		}
		if or.Accessed != nil {
			if or.Accessed.Start != nil {
				base.AccessedFrom = *or.Accessed.Start
			}
			if or.Accessed.End != nil {
				base.AccessedTo = *or.Accessed.End
			}
		}
		deny := Exclude
		if or.PublicMessage != "" {
			deny = Block
		}
		for _, pat := range or.URLPatterns {
			keys, exact, err := PatternKeys(pat)
			if err != nil {
				return nil, fmt.Errorf("replay: %s: %w", src, err)
			}
			for _, k := range keys {
				for _, ap := range p.AccessPoints {
					r := base
					r.Key, r.Exact, r.Access, r.User, r.URL = k, exact, Allow, ap, pat
					out = append(out, &r)
				}
				r := base
				r.Key, r.Exact, r.Access, r.URL = k, exact, deny, pat
				out = append(out, &r)
			}
		}
	}
	return out, nil
}

// PatternKeys turns a URL pattern into the rule keys it stands for:
// "*.example.org" (the host and its subdomains: two keys), a URL ending
// in "*" (a prefix), a SURT prefix as it is ("com,example)/a" or "com,"),
// else a URL matched exactly.
func PatternKeys(pat string) (keys []string, exact bool, err error) {
	pat = strings.TrimSpace(pat)
	switch {
	case pat == "":
		return nil, false, errors.New("empty URL pattern")
	case strings.HasPrefix(pat, "*."):
		host := strings.TrimPrefix(pat, "*.")
		k, err := surt.Canonicalize("http://" + host + "/")
		if err != nil {
			return nil, false, fmt.Errorf("URL pattern %q: %w", pat, err)
		}
		h := strings.TrimSuffix(k, ")/")
		return []string{h + ")", h + ","}, false, nil
	case strings.HasSuffix(pat, "*"):
		k, err := surt.Canonicalize(strings.TrimSuffix(pat, "*"))
		if err != nil {
			return nil, false, fmt.Errorf("URL pattern %q: %w", pat, err)
		}
		return []string{k}, false, nil
	case surt.LooksLikeSURT(pat) || !strings.Contains(pat, ".") && strings.HasSuffix(pat, ","):
		return []string{pat}, false, nil
	}
	k, err := surt.Canonicalize(pat)
	if err != nil {
		return nil, false, fmt.Errorf("URL pattern %q: %w", pat, err)
	}
	return []string{k}, true, nil
}

// LoadRules reads the rules of a file or of every .aclj and .json file of
// a directory (in name order): .aclj files in pywb's format, .json files
// in OutbackCDX's.
func LoadRules(path string, def Access) (*Rules, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("replay: access rules: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		files = nil
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("replay: access rules: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".aclj") || strings.HasSuffix(e.Name(), ".json")) {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	var all []*Rule
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("replay: access rules: %w", err)
		}
		var rules []*Rule
		if strings.HasSuffix(f, ".json") {
			rules, err = ParseOutbackCDX(data, f)
		} else {
			rules, err = ParseACLJ(bytes.NewReader(data), f)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, rules...)
	}
	rs, err := NewRules(all, def)
	if err != nil {
		return nil, err
	}
	rs.Source = path
	return rs, nil
}

// WriteACLJ writes rules as an .aclj file in pywb's order (reverse
// sorted by key, so pywb's binary search finds them too).
func WriteACLJ(w io.Writer, rules []*Rule) error {
	sorted := append([]*Rule(nil), rules...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ACLJKey() > sorted[j].ACLJKey() })
	bw := bufio.NewWriter(w)
	for _, r := range sorted {
		bw.WriteString(r.ACLJ())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
