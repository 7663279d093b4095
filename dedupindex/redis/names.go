package redis

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex/internal/record"
)

// maxInterned is the longest name interned; longer ones stay inline.
const maxInterned = 256

// nameWait bounds how long interning a name waits for a replica.
const nameWait = time.Second

// Ids are hashes of the name, so every process of a fleet derives the same
// id without coordination, in levels of growing width: a name takes the
// id of the first level whose id is free (or already its own), so the
// first names of a kind get one-byte ids (as varints) and later ones two,
// three or four bytes. A name whose ids are all taken by other names (hash
// collisions) is stored inline.
const (
	idLevels    = 4
	idLevelBits = 7 // level L ids are in [2^(7L), 2^(7(L+1))), level 0 from 1
)

// nameID returns the id of name s of kind k at level.
func nameID(k record.Kind, s string, level int) uint64 {
	h := sha256.Sum256(append([]byte{byte(k), byte(level)}, s...))
	lo := uint64(1) << (idLevelBits * level)
	hi := uint64(1) << (idLevelBits * (level + 1))
	if level == 0 {
		lo = 1
	}
	return lo + binary.BigEndian.Uint64(h[:8])%(hi-lo)
}

// idLevel returns the level of an id, or -1 for an id no level has.
func idLevel(id uint64) int {
	for l := range idLevels {
		if id >= 1 && id < 1<<(idLevelBits*(l+1)) {
			return l
		}
	}
	return -1
}

// nameField is the field of an id in its shard of the name table.
func nameField(k record.Kind, id uint64) string {
	return string(binary.AppendUvarint([]byte{byte(k)}, id))
}

// errUnknownName is wrapped when a stored original refers to an
// interned name the table does not hold.
var errUnknownName = errors.New("unknown interned name")

type nameRef struct {
	kind record.Kind
	id   uint64
}

type nameVal struct {
	kind record.Kind
	s    string
}

// names is the process's view of the interned-name table. An id is only
// used in a stored original once its name is in the table and — when the
// master has replicas — acknowledged by one, so a failover cannot lose a
// name that an original refers to. Known ids never change their name, so
// they are cached for good.
type names struct {
	mu     sync.RWMutex
	known  map[nameRef]string // ids whose name is in the table
	inline map[nameVal]bool   // names not to intern (every level's id taken)
}

func newNames() *names {
	return &names{known: map[nameRef]string{}, inline: map[nameVal]bool{}}
}

// internLua stores a name under its id unless the id is taken, and
// returns the name the id stands for.
const internLua = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then return v end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ARGV[2]
`

var internScript = goredis.NewScript(internLua)

// intern returns the id of s, storing it in the table if needed, or 0 to
// keep s inline.
func (ix *Index) intern(ctx context.Context, k record.Kind, s string) (uint64, error) {
	if s == "" || len(s) > maxInterned {
		return 0, nil
	}
	ix.names.mu.RLock()
	skip := ix.names.inline[nameVal{k, s}]
	ix.names.mu.RUnlock()
	if skip {
		return 0, nil
	}
	for level := range idLevels {
		id, taken, err := ix.internAt(ctx, k, s, nameID(k, s, level))
		if !taken || err != nil {
			return id, err
		}
	}
	ix.names.mu.Lock()
	ix.names.inline[nameVal{k, s}] = true
	ix.names.mu.Unlock()
	return 0, nil
}

// internAt returns id if s is (now) filed under it; 0 and taken if
// another name is; 0 if s is filed there but not yet safe to use.
func (ix *Index) internAt(ctx context.Context, k record.Kind, s string, id uint64) (_ uint64, taken bool, _ error) {
	ref := nameRef{k, id}
	ix.names.mu.RLock()
	have, ok := ix.names.known[ref]
	ix.names.mu.RUnlock()
	switch {
	case ok && have == s:
		return id, false, nil
	case ok:
		return 0, true, nil
	}
	key := ix.l.nameKey(id)
	var stored string
	a, err := ix.write(ctx, key, 1, nameWait, func(c goredis.Cmdable) error {
		var err error
		stored, err = internScript.Run(ctx, c, []string{key}, nameField(k, id), s).Text()
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("dedupindex/redis: intern %s %q: %w", k, s, err)
	}
	// Use the id once a replica has the name, or if the master has no
	// replica that could take over without it.
	safe := a.acked >= 1
	if !safe && stored == s {
		if safe, err = ix.hasNoReplica(ctx, key); err != nil {
			return 0, false, fmt.Errorf("dedupindex/redis: intern %s %q: %w", k, s, err)
		}
	}
	ix.names.mu.Lock()
	defer ix.names.mu.Unlock()
	switch {
	case stored != s:
		ix.names.known[ref] = stored
		return 0, true, nil
	case !safe:
		return 0, false, nil // inline for now; try again with the next original
	}
	ix.names.known[ref] = s
	return id, false, nil
}

// hasNoReplica reports whether the master serving key has no connected
// replica now.
func (ix *Index) hasNoReplica(ctx context.Context, key string) (bool, error) {
	node, err := ix.masterFor(ctx, key)
	if err != nil {
		return false, err
	}
	n, err := ix.connectedReplicas(ctx, node, node.Options().Addr, true)
	return n == 0, err
}

// name resolves an interned id.
func (ix *Index) name(ctx context.Context, k record.Kind, id uint64) (string, error) {
	ref := nameRef{k, id}
	ix.names.mu.RLock()
	s, ok := ix.names.known[ref]
	ix.names.mu.RUnlock()
	if ok {
		return s, nil
	}
	s, err := ix.c.HGet(ctx, ix.l.nameKey(id), nameField(k, id)).Result()
	if errors.Is(err, goredis.Nil) {
		return "", fmt.Errorf("%w: %s id %d", errUnknownName, k, id)
	}
	if err != nil {
		return "", fmt.Errorf("dedupindex/redis: resolve %s id %d: %w", k, id, ix.failed(err))
	}
	ix.names.mu.Lock()
	ix.names.known[ref] = s
	ix.names.mu.Unlock()
	return s, nil
}
