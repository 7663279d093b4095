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

// idBits is the width of the ids of each kind of name: ids are hashes of
// the name, so every process of a fleet derives the same id without
// coordination. MIME types are few and get short ids.
func idBits(k record.Kind) uint {
	if k == record.KindMIME {
		return 14
	}
	return 28
}

// nameID returns the id of name s of kind k, in [1, 2^idBits).
func nameID(k record.Kind, s string) uint64 {
	h := sha256.Sum256(append([]byte{byte(k)}, s...))
	return binary.BigEndian.Uint64(h[:8])%(1<<idBits(k)-1) + 1
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
// name that an original refers to; a name whose id is taken by another
// name (a hash collision) is stored inline. Known ids never change their
// name, so they are cached for good.
type names struct {
	mu     sync.RWMutex
	known  map[nameRef]string // ids whose name is in the table
	inline map[nameVal]bool   // names not to intern (collision or unacknowledged)
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
	id := nameID(k, s)
	ref := nameRef{k, id}
	ix.names.mu.RLock()
	have, ok := ix.names.known[ref]
	skip := ix.names.inline[nameVal{k, s}]
	ix.names.mu.RUnlock()
	switch {
	case ok && have == s:
		return id, nil
	case ok || skip:
		return 0, nil
	}
	key := ix.l.nameKey(id)
	var stored string
	a, err := ix.write(ctx, key, 1, nameWait, func(c goredis.Cmdable) error {
		var err error
		stored, err = internScript.Run(ctx, c, []string{key}, nameField(k, id), s).Text()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("dedupindex/redis: intern %s %q: %w", k, s, err)
	}
	// Use the id once a replica has the name, or if the master has no
	// replica that could take over without it.
	safe := a.acked >= 1
	if !safe {
		if safe, err = ix.hasNoReplica(ctx, key); err != nil {
			return 0, fmt.Errorf("dedupindex/redis: intern %s %q: %w", k, s, err)
		}
	}
	ix.names.mu.Lock()
	defer ix.names.mu.Unlock()
	switch {
	case stored != s:
		ix.names.known[ref] = stored
		ix.names.inline[nameVal{k, s}] = true
		return 0, nil
	case !safe:
		return 0, nil // try again with the next original
	}
	ix.names.known[ref] = s
	return id, nil
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
