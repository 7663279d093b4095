package redis

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

// Index is a dedupindex.Index stored in Redis. It is safe for concurrent
// use; many processes may share one store.
type Index struct {
	c        goredis.UniversalClient
	prefix   string
	lease    time.Duration
	instance string
	seq      atomic.Uint64
	closed   atomic.Bool

	mu     sync.Mutex
	active map[string]claimState // tokens issued by this Index, outstanding

	claimScript, commitScript, cancelScript *goredis.Script
}

type claimState struct {
	key       dedupindex.Key
	notBefore time.Time
}

var (
	_ dedupindex.Index         = (*Index)(nil)
	_ dedupindex.WindowClaimer = (*Index)(nil)
	_ dedupindex.Batcher       = (*Index)(nil)
	_ dedupindex.Checker       = (*Index)(nil)
)

type options struct {
	prefix string
	lease  time.Duration
}

// Option configures New.
type Option func(*options)

// WithPrefix namespaces every key (default "wayside:").
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithLease sets how long a pending claim lives if its claimer neither
// commits nor cancels it (default 10 minutes).
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// claimLua: KEYS original, pending; ARGV token, lease ms, notBefore µs (or
// empty). Returns {1, original} (Duplicate), {2} (Claimed) or {3} (Pending).
// A pending claim wins over an original, as in the pebble backend (an
// expired original may be being replaced).
const claimLua = `
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {3}
end
local d = redis.call('HGET', KEYS[1], 'd')
if d and (ARGV[3] == '' or tonumber(d) >= tonumber(ARGV[3])) then
  return {1, redis.call('HGET', KEYS[1], 'v')}
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {2}
end
return {3}
`

// commitLua stores an original unless one is kept; it drops the claim
// named by ARGV[1] (if any). Returns {0} when the existing original is
// kept, {1} when stored, {1, old} when an expired original was replaced.
const commitLua = `
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
local d = redis.call('HGET', KEYS[1], 'd')
if d and (ARGV[2] == '' or tonumber(d) >= tonumber(ARGV[2])) then
  return {0}
end
local old = false
if d then old = redis.call('HGET', KEYS[1], 'v') end
redis.call('HSET', KEYS[1], 'd', ARGV[3], 'v', ARGV[4], 's', ARGV[5], 'k', ARGV[6], 'u', ARGV[7])
if old then return {1, old} end
return {1}
`

const cancelLua = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`

// New returns an Index on c (a *ClusterClient, *Client or other
// UniversalClient). Close does not close c.
func New(c goredis.UniversalClient, opts ...Option) (*Index, error) {
	o := options{prefix: "wayside:", lease: 10 * time.Minute}
	for _, f := range opts {
		f(&o)
	}
	if o.lease < time.Millisecond {
		return nil, fmt.Errorf("dedupindex/redis: lease %s is too short", o.lease)
	}
	var inst [8]byte
	if _, err := rand.Read(inst[:]); err != nil {
		return nil, fmt.Errorf("dedupindex/redis: instance id: %w", err)
	}
	return &Index{
		c:            c,
		prefix:       o.prefix,
		lease:        o.lease,
		instance:     hex.EncodeToString(inst[:]),
		active:       map[string]claimState{},
		claimScript:  goredis.NewScript(claimLua),
		commitScript: goredis.NewScript(commitLua),
		cancelScript: goredis.NewScript(cancelLua),
	}, nil
}

// canonKey validates k and returns it with a canonical digest.
func canonKey(k dedupindex.Key) (dedupindex.Key, error) {
	if k.Scope == "" {
		return k, fmt.Errorf("dedupindex/redis: key has an empty scope")
	}
	d, err := digest.Normalize(k.Digest)
	if err != nil {
		return k, fmt.Errorf("dedupindex/redis: key digest: %w", err)
	}
	k.Digest = d
	return k, nil
}

func tag(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

func keyTag(k dedupindex.Key) string { return tag(k.Scope, k.Digest, k.URL) }

func (ix *Index) origKey(t string) string { return ix.prefix + "o{" + t + "}" }
func (ix *Index) pendKey(t string) string { return ix.prefix + "p{" + t + "}" }
func (ix *Index) urlKey(scope, surtKey string) string {
	return ix.prefix + "u{" + tag(scope, surtKey) + "}"
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

func (ix *Index) check(ctx context.Context) error {
	if ix.closed.Load() {
		return dedupindex.ErrClosed
	}
	return ctx.Err()
}

// Claim installs a pending claim for k unless k has a committed original
// (Duplicate) or another pending claim (Pending).
func (ix *Index) Claim(ctx context.Context, k dedupindex.Key) (dedupindex.ClaimResult, error) {
	return ix.claim(ctx, k, time.Time{})
}

// ClaimNewer is Claim, except that an original dated before notBefore
// counts as absent and is replaced by the claimer's Commit.
func (ix *Index) ClaimNewer(ctx context.Context, k dedupindex.Key, notBefore time.Time) (dedupindex.ClaimResult, error) {
	return ix.claim(ctx, k, notBefore)
}

func (ix *Index) claim(ctx context.Context, k dedupindex.Key, notBefore time.Time) (dedupindex.ClaimResult, error) {
	if err := ix.check(ctx); err != nil {
		return dedupindex.ClaimResult{}, err
	}
	k, err := canonKey(k)
	if err != nil {
		return dedupindex.ClaimResult{}, err
	}
	t := keyTag(k)
	token := ix.instance + "." + strconv.FormatUint(ix.seq.Add(1), 10)
	nb := ""
	if !notBefore.IsZero() {
		nb = micros(notBefore)
	}
	res, err := ix.claimScript.Run(ctx, ix.c, []string{ix.origKey(t), ix.pendKey(t)}, token, ix.lease.Milliseconds(), nb).Slice()
	if err != nil {
		return dedupindex.ClaimResult{}, fmt.Errorf("dedupindex/redis: claim: %w", err)
	}
	switch res[0].(int64) {
	case 1:
		o, err := decodeOriginal(res[1])
		if err != nil {
			return dedupindex.ClaimResult{}, err
		}
		return dedupindex.ClaimResult{State: dedupindex.Duplicate, Original: o}, nil
	case 2:
		ix.mu.Lock()
		if ix.closed.Load() {
			// Close ran meanwhile and will not see this claim: drop it.
			ix.mu.Unlock()
			if err := ix.cancelToken(context.WithoutCancel(ctx), k, token); err != nil {
				return dedupindex.ClaimResult{}, err
			}
			return dedupindex.ClaimResult{}, dedupindex.ErrClosed
		}
		ix.active[token] = claimState{key: k, notBefore: notBefore}
		ix.mu.Unlock()
		return dedupindex.ClaimResult{State: dedupindex.Claimed, Ticket: dedupindex.Ticket{Key: k, Token: token}}, nil
	}
	return dedupindex.ClaimResult{State: dedupindex.Pending}, nil
}

func decodeOriginal(v any) (dedupindex.Original, error) {
	s, ok := v.(string)
	if !ok {
		return dedupindex.Original{}, fmt.Errorf("dedupindex/redis: original is %T, not a string", v)
	}
	var o dedupindex.Original
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return dedupindex.Original{}, fmt.Errorf("dedupindex/redis: decode original: %w", err)
	}
	return o, nil
}

// Commit stores o for the ticket's key (see the package doc).
func (ix *Index) Commit(ctx context.Context, t dedupindex.Ticket, o dedupindex.Original) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	k, err := canonKey(t.Key)
	if err != nil {
		return err
	}
	inst, _, ok := strings.Cut(t.Token, ".")
	if !ok || inst == "" {
		return fmt.Errorf("%w: malformed token %q", dedupindex.ErrNoClaim, t.Token)
	}
	var st claimState
	if inst == ix.instance {
		ix.mu.Lock()
		st, ok = ix.active[t.Token]
		if ok && st.key == k {
			delete(ix.active, t.Token)
		}
		ix.mu.Unlock()
		if !ok || st.key != k {
			return fmt.Errorf("%w: commit %s in scope %q", dedupindex.ErrNoClaim, k.Digest, k.Scope)
		}
	}
	// A ticket from another process or an earlier run stores o if the key
	// has no original: the record is durable.
	o, err = dedupindex.CheckOriginal(k, o)
	if err != nil {
		if inst == ix.instance {
			ix.cancelToken(ctx, k, t.Token)
		}
		return err
	}
	_, err = ix.store(ctx, k, o, t.Token, st.notBefore)
	return err
}

// store runs the commit script and maintains the by-URL index.
func (ix *Index) store(ctx context.Context, k dedupindex.Key, o dedupindex.Original, token string, notBefore time.Time) (bool, error) {
	v, err := json.Marshal(o)
	if err != nil {
		return false, fmt.Errorf("dedupindex/redis: encode original: %w", err)
	}
	nb := ""
	if !notBefore.IsZero() {
		nb = micros(notBefore)
	}
	t := keyTag(k)
	res, err := ix.commitScript.Run(ctx, ix.c, []string{ix.origKey(t), ix.pendKey(t)},
		token, nb, micros(o.Date), string(v), k.Scope, k.Digest, k.URL).Slice()
	if err != nil {
		return false, fmt.Errorf("dedupindex/redis: commit %s: %w", k.Digest, err)
	}
	if res[0].(int64) == 0 {
		return false, nil
	}
	surtKey := dedupindex.URLKey(o.TargetURI)
	if len(res) > 1 {
		if old, err := decodeOriginal(res[1]); err == nil {
			if oldKey := dedupindex.URLKey(old.TargetURI); oldKey != surtKey {
				if err := ix.c.ZRem(ctx, ix.urlKey(k.Scope, oldKey), t).Err(); err != nil {
					return true, fmt.Errorf("dedupindex/redis: by-url remove: %w", err)
				}
			}
		}
	}
	if err := ix.c.ZAdd(ctx, ix.urlKey(k.Scope, surtKey), goredis.Z{Score: float64(o.Date.Unix()), Member: t}).Err(); err != nil {
		return true, fmt.Errorf("dedupindex/redis: by-url add: %w", err)
	}
	return true, nil
}

func (ix *Index) cancelToken(ctx context.Context, k dedupindex.Key, token string) error {
	t := keyTag(k)
	if err := ix.cancelScript.Run(ctx, ix.c, []string{ix.pendKey(t)}, token).Err(); err != nil {
		return fmt.Errorf("dedupindex/redis: cancel: %w", err)
	}
	return nil
}

// Cancel drops a pending claim issued by this Index.
func (ix *Index) Cancel(ctx context.Context, t dedupindex.Ticket) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	k, err := canonKey(t.Key)
	if err != nil {
		return err
	}
	ix.mu.Lock()
	st, ok := ix.active[t.Token]
	if ok && st.key == k {
		delete(ix.active, t.Token)
	}
	ix.mu.Unlock()
	if !ok || st.key != k {
		return fmt.Errorf("%w: cancel %s in scope %q", dedupindex.ErrNoClaim, k.Digest, k.Scope)
	}
	return ix.cancelToken(ctx, k, t.Token)
}

// Lookup returns the committed original for k.
func (ix *Index) Lookup(ctx context.Context, k dedupindex.Key) (dedupindex.Original, bool, error) {
	if err := ix.check(ctx); err != nil {
		return dedupindex.Original{}, false, err
	}
	k, err := canonKey(k)
	if err != nil {
		return dedupindex.Original{}, false, err
	}
	v, err := ix.c.HGet(ctx, ix.origKey(keyTag(k)), "v").Result()
	if errors.Is(err, goredis.Nil) {
		return dedupindex.Original{}, false, nil
	}
	if err != nil {
		return dedupindex.Original{}, false, fmt.Errorf("dedupindex/redis: lookup: %w", err)
	}
	o, err := decodeOriginal(v)
	return o, err == nil, err
}

// Put stores o under k unless k has an original (the first one wins).
func (ix *Index) Put(ctx context.Context, k dedupindex.Key, o dedupindex.Original) (bool, error) {
	if err := ix.check(ctx); err != nil {
		return false, err
	}
	k, err := canonKey(k)
	if err != nil {
		return false, err
	}
	o, err = dedupindex.CheckOriginal(k, o)
	if err != nil {
		return false, err
	}
	return ix.store(ctx, k, o, "", time.Time{})
}

// ByURL returns the originals in scope whose target URI has SURT key
// surtKey, oldest first.
func (ix *Index) ByURL(ctx context.Context, scope, surtKey string) ([]dedupindex.Original, error) {
	if err := ix.check(ctx); err != nil {
		return nil, err
	}
	tags, err := ix.c.ZRange(ctx, ix.urlKey(scope, surtKey), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("dedupindex/redis: by-url: %w", err)
	}
	var out []dedupindex.Original
	for _, t := range tags {
		vals, err := ix.c.HMGet(ctx, ix.origKey(t), "v", "s").Result()
		if err != nil {
			return nil, fmt.Errorf("dedupindex/redis: by-url: %w", err)
		}
		if vals[0] == nil || vals[1] != scope {
			continue
		}
		o, err := decodeOriginal(vals[0])
		if err != nil {
			return nil, err
		}
		// An expired original replaced by one of another URL may leave a
		// stale entry behind if its removal failed: filter it out.
		if dedupindex.URLKey(o.TargetURI) == surtKey {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out, nil
}

// Close drops the pending claims this Index holds. It does not close the
// Redis client.
func (ix *Index) Close() error {
	if ix.closed.Swap(true) {
		return dedupindex.ErrClosed
	}
	ix.mu.Lock()
	active := ix.active
	ix.active = map[string]claimState{}
	ix.mu.Unlock()
	var errs []error
	for tok, st := range active {
		if err := ix.cancelToken(context.Background(), st.key, tok); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// putConcurrency bounds the Puts PutBatch runs at once.
const putConcurrency = 16

// PutBatch stores entries like Put, several at a time; within the batch
// the first entry of a key wins.
func (ix *Index) PutBatch(ctx context.Context, entries []dedupindex.Entry) ([]bool, error) {
	if err := ix.check(ctx); err != nil {
		return nil, err
	}
	keys := make([]dedupindex.Key, len(entries))
	origs := make([]dedupindex.Original, len(entries))
	first := map[dedupindex.Key]bool{}
	run := make([]bool, len(entries))
	for i, e := range entries {
		k, err := canonKey(e.Key)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		o, err := dedupindex.CheckOriginal(k, e.Original)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		keys[i], origs[i] = k, o
		if !first[k] {
			first[k] = true
			run[i] = true
		}
	}
	added := make([]bool, len(entries))
	errs := make([]error, len(entries))
	sem := make(chan struct{}, putConcurrency)
	var wg sync.WaitGroup
	for i := range entries {
		if !run[i] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			added[i], errs[i] = ix.store(ctx, keys[i], origs[i], "", time.Time{})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return added, nil
}
