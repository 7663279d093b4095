package captureindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"
)

func timeOf(k parsedKey, v value) time.Time { return time.Unix(k.seconds, v.nanos).UTC() }

// ScopeStats counts the captures of one collection.
type ScopeStats struct {
	Scope    string `json:"scope"`
	Captures int64  `json:"captures"`
	Revisits int64  `json:"revisits"`
	// Unresolved counts revisits whose original the index does not hold.
	Unresolved int64 `json:"unresolved"`
}

// Stats describes the index.
type Stats struct {
	Scopes []ScopeStats `json:"scopes"`
	Files  int          `json:"files"`
	// DiskBytes is the size of the store's files (tables, logs, manifest);
	// TableBytes that of its tables alone.
	DiskBytes  uint64 `json:"disk_bytes"`
	TableBytes uint64 `json:"table_bytes"`
}

// Stats returns the counters and the size on disk.
func (ix *Index) Stats(ctx context.Context) (Stats, error) {
	if err := ix.begin(); err != nil {
		return Stats{}, err
	}
	defer ix.end()
	var st Stats
	ix.wmu.Lock()
	ix.nmu.RLock()
	for name, id := range ix.ids[kindScope] {
		c := ix.counters[id]
		st.Scopes = append(st.Scopes, ScopeStats{Scope: name, Captures: c[ctrCaptures], Revisits: c[ctrRevisits], Unresolved: c[ctrUnresolved]})
	}
	st.Files = len(ix.ids[kindFile])
	ix.nmu.RUnlock()
	ix.wmu.Unlock()
	sort.Slice(st.Scopes, func(i, j int) bool { return st.Scopes[i].Scope < st.Scopes[j].Scope })
	m := ix.db.Metrics()
	st.DiskBytes = m.DiskSpaceUsage()
	st.TableBytes = uint64(m.Total().Size)
	return st, nil
}

// Compact rewrites the whole store into its bottom level (for size
// measurements; the store compacts itself as it grows).
func (ix *Index) Compact(ctx context.Context) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	if err := ix.db.Flush(); err != nil {
		return fmt.Errorf("captureindex: compact: %w", err)
	}
	if err := ix.db.Compact([]byte{0}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("captureindex: compact: %w", err)
	}
	return nil
}

// maxCheckErrors bounds the violations Check lists.
const maxCheckErrors = 20

// Check verifies the index's invariants: every key is of a known kind and
// every value decodes; every capture names interned scope, file and MIME
// ids and is Indexable; every resolved revisit names a known file; every
// unresolved marker belongs to an unresolved revisit and every unresolved
// revisit has one; the counters match the entries.
func (ix *Index) Check(ctx context.Context) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	ix.wmu.Lock() // no writer may change entries and counters apart
	defer ix.wmu.Unlock()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(nil)
	if err != nil {
		return fmt.Errorf("captureindex: check: %w", err)
	}
	defer it.Close()
	var errs []error
	bad := func(format string, a ...any) {
		if len(errs) < maxCheckErrors {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	known := func(kind byte, id uint64) bool { _, ok := ix.name(kind, id); return ok }
	counts := map[uint64]map[byte]int64{}
	count := func(scope uint64, kind byte) {
		if counts[scope] == nil {
			counts[scope] = map[byte]int64{}
		}
		counts[scope][kind]++
	}
	markers := map[string]bool{}
	unresolved := map[string]bool{}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k, v := it.Key(), it.Value()
		switch k[0] {
		case tagMeta:
			if !bytes.Equal(k, versionKey) {
				bad("unknown meta key %x", k)
			}
		case tagName:
			id, n := binary.Uvarint(v)
			if len(k) < 2 || n <= 0 {
				bad("bad name entry %x", clipKey(k))
			} else if got, ok := ix.name(k[1], id); !ok || got != string(k[2:]) {
				bad("name %q (kind %c) maps to id %d, which names %q", k[2:], k[1], id, got)
			}
		case tagID:
			id, n := binary.Uvarint(k[min(2, len(k)):])
			if len(k) < 3 || n <= 0 {
				bad("bad id entry %x", clipKey(k))
			} else if got, ok := ix.lookupID(k[1], string(v)); !ok || got != id {
				bad("id %d (kind %c) names %q, which maps to id %d", id, k[1], v, got)
			}
		case tagCounter, tagResync:
		case tagCapture:
			pk, err := parseCaptureKey(k)
			if err != nil {
				bad("%v", err)
				continue
			}
			val, err := decodeValue(v)
			if err != nil {
				bad("entry %x: %v", clipKey(k), err)
				continue
			}
			if !known(kindScope, pk.scope) || !known(kindFile, pk.file) || (val.mime > 0 && !known(kindMIME, val.mime)) ||
				(val.mimeDetected > 0 && !known(kindMIME, val.mimeDetected)) {
				bad("entry %x names an unknown scope, file or MIME id", clipKey(k))
			}
			if val.uri == "" || URLKey(val.uri) != pk.urlkey {
				bad("entry %x: URI %q is not filed under its urlkey %q", clipKey(k), val.uri, pk.urlkey)
			}
			count(pk.scope, ctrCaptures)
			if val.typ == typeRevisit {
				count(pk.scope, ctrRevisits)
				if val.orig == nil {
					unresolved[string(k[1:])] = true
					count(pk.scope, ctrUnresolved)
				} else if !known(kindFile, val.orig.file) {
					bad("revisit %x: original in unknown file id %d", clipKey(k), val.orig.file)
				}
			} else if val.orig != nil {
				bad("entry %x is not a revisit but names an original", clipKey(k))
			}
		case tagUnresolved:
			markers[string(k[1:])] = true
		default:
			bad("unknown key %x", clipKey(k))
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("captureindex: check: %w", err)
	}
	for m := range markers {
		if !unresolved[m] {
			bad("unresolved marker %x without an unresolved revisit", clipKey([]byte(m)))
		}
	}
	for u := range unresolved {
		if !markers[u] {
			bad("unresolved revisit %x without a marker", clipKey([]byte(u)))
		}
	}
	for scope, c := range ix.counters {
		for _, kind := range []byte{ctrCaptures, ctrRevisits, ctrUnresolved} {
			if c[kind] != counts[scope][kind] {
				bad("scope %d counter %c is %d, entries say %d", scope, kind, c[kind], counts[scope][kind])
			}
		}
	}
	for scope := range counts {
		if ix.counters[scope] == nil {
			bad("scope %d has entries but no counters", scope)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("captureindex: check: %w", errors.Join(errs...))
	}
	return nil
}
