package dedupindex

import (
	"context"
	"errors"
	"time"
)

// Errors returned by Index implementations. Implementations wrap them with
// context using %w.
var (
	// ErrNoClaim is returned by Commit and Cancel for a ticket that is not
	// (or no longer) the pending claim of its key.
	ErrNoClaim = errors.New("dedupindex: no such pending claim")
	// ErrReadOnly is returned when writing to a read-only scope.
	ErrReadOnly = errors.New("dedupindex: scope is read-only")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("dedupindex: index is closed")
	// ErrNoURLIndex is returned by ByURL of an index configured without
	// the by-URL index.
	ErrNoURLIndex = errors.New("dedupindex: index keeps no by-URL index")
)

// Key names one dedup slot: a canonical payload digest within a scope, and
// for the same-URL policy also the target URI (its SURT form, so http/https
// and www variants match). URL is empty under the URL-agnostic policy.
type Key struct {
	Scope  string `json:"scope"`
	Digest string `json:"digest"` // canonical, see package digest
	URL    string `json:"url,omitempty"`
}

// Original is a committed original capture: a full response record that is
// durably written. Revisits point at it.
type Original struct {
	Digest        string    `json:"digest"`
	TargetURI     string    `json:"target_uri"`
	Date          time.Time `json:"date"`
	RecordID      string    `json:"record_id"`
	File          string    `json:"file"`
	Offset        int64     `json:"offset"`
	Length        int64     `json:"length"`
	PayloadLength int64     `json:"payload_length"`
	Status        int       `json:"status,omitempty"`
	MIME          string    `json:"mime,omitempty"`
	ETag          string    `json:"etag,omitempty"`
	LastModified  string    `json:"last_modified,omitempty"`
}

// State is the outcome of Claim.
type State int

const (
	// Claimed: the caller holds a pending claim and must write a full
	// response, make it durable, then Commit (or Cancel on failure).
	Claimed State = iota + 1
	// Duplicate: a committed original exists; the caller may write a revisit
	// pointing at it (after its own collision checks).
	Duplicate
	// Pending: another writer holds a pending claim; the caller writes a full
	// response and does not commit it (a missed dedup costs bytes, a
	// dangling revisit would lose data).
	Pending
)

func (s State) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case Duplicate:
		return "duplicate"
	case Pending:
		return "pending"
	}
	return "unknown"
}

// Ticket identifies a pending claim. It is opaque to callers and survives a
// round trip through JSON (the sidecar hands tickets to crawlers).
type Ticket struct {
	Key   Key    `json:"key"`
	Token string `json:"token"`
}

// ClaimResult is returned by Claim.
type ClaimResult struct {
	State    State
	Original Original // set when State == Duplicate
	Ticket   Ticket   // set when State == Claimed
}

// Index is a payload-digest index with claim → write → durable → commit
// semantics. Implementations: dedupindex/pebble (embedded, the default) and,
// for fleets, a networked store. Every implementation passes the suite in
// dedupindex/indextest.
//
// Invariant: Lookup and Claim only ever return an Original that a caller
// committed, i.e. whose record the caller had made durable before Commit.
type Index interface {
	// Claim atomically returns the committed original for k (Duplicate),
	// or reports that another claim is pending (Pending), or installs a
	// pending claim for the caller (Claimed).
	Claim(ctx context.Context, k Key) (ClaimResult, error)
	// Commit turns a pending claim into a committed original.
	Commit(ctx context.Context, t Ticket, o Original) error
	// Cancel drops a pending claim without committing.
	Cancel(ctx context.Context, t Ticket) error
	// Lookup returns the committed original for k without claiming.
	Lookup(ctx context.Context, k Key) (Original, bool, error)
	// Put stores o under k unconditionally unless k already has a committed
	// original (then it is kept: the first original wins). It is used to seed
	// the index from earlier crawls. It reports whether o was added.
	Put(ctx context.Context, k Key, o Original) (bool, error)
	// ByURL returns the committed originals whose target URI has the given
	// SURT key in scope, oldest first. It serves CDX queries (Heritrix
	// same-URL dedup) and conditional requests.
	ByURL(ctx context.Context, scope, surtKey string) ([]Original, error)
	// Stats reports counts for inspection.
	Stats(ctx context.Context) (Stats, error)
	// Close releases resources; pending claims held by this process are
	// dropped.
	Close() error
}

// Stats describes an index.
type Stats struct {
	Originals int64            `json:"originals"`
	Pending   int64            `json:"pending"`
	Scopes    map[string]int64 `json:"scopes,omitempty"`
	DiskBytes int64            `json:"disk_bytes,omitempty"`
}
