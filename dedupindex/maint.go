package dedupindex

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Selector chooses committed originals for index maintenance (`wayside
// index delete`, export). Every field that is set must match; the zero
// Selector matches every original.
type Selector struct {
	// Scope restricts to one scope ("" any).
	Scope string `json:"scope,omitempty"`
	// Files matches originals stored in one of these WARC files, by base
	// name (indexes store plain file names; `--file /data/X.warc.gz`
	// selects X.warc.gz).
	Files []string `json:"files,omitempty"`
	// URLPrefix matches originals whose target URI starts with it.
	URLPrefix string `json:"url_prefix,omitempty"`
	// From and To bound the original's date: From <= date < To (a zero
	// bound is open).
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
}

// IsZero reports whether s matches everything.
func (s Selector) IsZero() bool {
	return s.Scope == "" && len(s.Files) == 0 && s.URLPrefix == "" && s.From.IsZero() && s.To.IsZero()
}

// Match reports whether the original o of scope matches s.
func (s Selector) Match(scope string, o Original) bool {
	if s.Scope != "" && scope != s.Scope {
		return false
	}
	if len(s.Files) > 0 && !MatchFile(s.Files, o.File) {
		return false
	}
	if s.URLPrefix != "" && !strings.HasPrefix(o.TargetURI, s.URLPrefix) {
		return false
	}
	if !s.From.IsZero() && o.Date.Before(s.From) {
		return false
	}
	if !s.To.IsZero() && !o.Date.Before(s.To) {
		return false
	}
	return true
}

// MatchFile reports whether the stored file name file is one of names,
// compared by base name (a location URL's last path element, as
// warcfile.Base gives it: warcfile's tests import this package, so it
// cannot import warcfile).
func MatchFile(names []string, file string) bool {
	b := fileBase(file)
	for _, n := range names {
		if fileBase(n) == b {
			return true
		}
	}
	return false
}

func fileBase(file string) string {
	if strings.Contains(file, "://") {
		if u, err := url.Parse(file); err == nil && u.Scheme != "" {
			return path.Base(u.Path)
		}
	}
	return filepath.Base(file)
}

// Maintainer is implemented by every backend (the conformance suite,
// dedupindex/indextest, requires it): the operations an archive needs over
// years — listing, deleting and moving originals.
//
// Deletion and update are crash-safe per original: an interrupted call
// (killed process, lost connection) leaves each original either as it was
// or as asked, never a partial entry, and the backend's Check passes.
// Pending claims are not touched.
type Maintainer interface {
	// Scan calls fn for every committed original that sel matches. The
	// order is the backend's; fn must not call the index.
	Scan(ctx context.Context, sel Selector, fn func(Entry) error) error
	// Delete removes every committed original sel matches and reports
	// how many it removed. The zero Selector is refused (ErrEmptySelector):
	// deleting a whole index is done by removing it.
	Delete(ctx context.Context, sel Selector) (int64, error)
	// Update replaces, for each move, the stored original of its key with
	// To, if the key's original still has record id From (compare and
	// set): the record moved to another file or offset (`dedup --replace`
	// rewrote its WARC), or became a revisit and the key now points at
	// the record it refers to. It reports how many it replaced; moves
	// whose key no longer has that original are skipped.
	Update(ctx context.Context, moves []Move) (int64, error)
}

// Move is one replacement for Maintainer.Update.
type Move struct {
	Key  Key      `json:"key"`
	From string   `json:"from"` // record id of the original stored now
	To   Original `json:"to"`
}

// ErrEmptySelector is returned by Delete for the zero Selector.
var ErrEmptySelector = errors.New("dedupindex: delete needs a selector (file, scope, URL prefix or date range)")

// AsMaintainer returns idx as a Maintainer, or an error naming its type.
func AsMaintainer(idx Index) (Maintainer, error) {
	m, ok := idx.(Maintainer)
	if !ok {
		return nil, fmt.Errorf("dedupindex: %T does not support maintenance", idx)
	}
	return m, nil
}
