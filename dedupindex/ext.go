package dedupindex

import (
	"context"
	"time"
)

// DefaultDir is the index directory used by `wayside index` and `wayside
// crawl` when no --index flag is given, relative to the working directory.
const DefaultDir = "wayside-index"

// DefaultScope is the read-write scope used when none is configured.
const DefaultScope = "default"

// Entry is one key and original, as stored by PutBatch.
type Entry struct {
	Key      Key      `json:"key"`
	Original Original `json:"original"`
}

// Batcher is implemented by indexes that can seed many originals at once
// with one durable sync per batch instead of one per entry. Import uses it
// when available and falls back to Put.
type Batcher interface {
	// PutBatch stores each entry like Put (the first original of a key wins,
	// also within the batch) and reports per entry whether it was added. The
	// whole batch is durable when PutBatch returns without error; on error
	// any subset of the entries may be stored, never a partial entry.
	PutBatch(ctx context.Context, entries []Entry) (added []bool, err error)
}

// PutEntries stores entries durably like Put, in one batch when idx is a
// Batcher, and reports per entry whether it was added (the first original
// of a key wins).
func PutEntries(ctx context.Context, idx Index, entries []Entry) ([]bool, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if b, ok := idx.(Batcher); ok {
		return b.PutBatch(ctx, entries)
	}
	added := make([]bool, len(entries))
	for i, e := range entries {
		a, err := idx.Put(ctx, e.Key, e.Original)
		if err != nil {
			return added[:i], err
		}
		added[i] = a
	}
	return added, nil
}

// WindowClaimer is implemented by indexes that support a dedup time window:
// ClaimNewer is Claim, except that a committed original dated before
// notBefore counts as absent: the caller gets Claimed, and its Commit
// replaces the old original (unless another Commit already replaced it with
// one dated at or after notBefore, which is then kept). Until that Commit,
// ClaimNewer calls with the window report Pending; a plain Claim may
// report Pending or return the old original, which is still committed and
// durable (the Redis index answers it from the stored original alone).
type WindowClaimer interface {
	ClaimNewer(ctx context.Context, k Key, notBefore time.Time) (ClaimResult, error)
}

// Checker is implemented by indexes with internal invariants they can
// verify (bbolt style). Check returns nil or an error describing every
// violation found.
type Checker interface {
	Check(ctx context.Context) error
}
