package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	"github.com/wayside-archive/wayside/digest"
)

// Index is a dedupindex.Index stored in Redis. It is safe for concurrent
// use; many processes may share one store.
type Index struct {
	c            goredis.UniversalClient
	closeClient  bool
	l            *layout
	lease        time.Duration
	waitReplicas int
	waitTimeout  time.Duration
	claimPath    claimPath // benchmarks compare the paths
	reads        readScore
	valueMax     int // longest value kept in a bucket hash
	log          *slog.Logger
	instance     string
	seq          atomic.Uint64
	closed       atomic.Bool
	names        *names

	stopRepair context.CancelFunc
	repairing  sync.WaitGroup

	mu      sync.Mutex
	active  map[string]claimState   // tokens issued by this Index, outstanding
	masters map[string]*masterState // by address
}

// claimState is what Commit needs to know about a claim of this Index.
type claimState struct {
	key dedupindex.Key // canonical
	// replaces is the stored value the claim may replace (an original
	// older than ClaimNewer's notBefore, or one that cannot be read), or
	// "" when the claim found no original.
	replaces string
}

var (
	_ dedupindex.Index         = (*Index)(nil)
	_ dedupindex.WindowClaimer = (*Index)(nil)
	_ dedupindex.Batcher       = (*Index)(nil)
	_ dedupindex.Checker       = (*Index)(nil)
)

// DefaultCapacity is the number of originals per scope a new index is
// laid out for when WithCapacity is not given.
const DefaultCapacity = 10_000_000

type options struct {
	prefix       string
	lease        time.Duration
	waitReplicas int
	waitTimeout  time.Duration
	capacity     int64
	noURLIndex   bool
	closeClient  bool
	claimPath    claimPath
	log          *slog.Logger
}

// claimPath chooses how Claim starts: by readScore (the default), always
// with the claim script, or always with a read.
type claimPath int

const (
	pathAdaptive claimPath = iota
	pathScript
	pathRead
)

// Option configures New.
type Option func(*options)

// WithPrefix namespaces every key (default "wayside:"). It must not
// contain braces.
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithLease sets how long a pending claim lives if its claimer neither
// commits nor cancels it (default 10 minutes).
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithWait makes Commit and Put wait until replicas replicas (1 is enough
// for a replica to take over) acknowledged the original, at most timeout
// (default 1s); see ErrNotReplicated.
func WithWait(replicas int, timeout time.Duration) Option {
	return func(o *options) { o.waitReplicas, o.waitTimeout = replicas, timeout }
}

// WithCapacity lays a new index out for about n originals per scope (the
// number of buckets; default DefaultCapacity). It applies when the index
// is created; opening an existing index with a capacity that gives
// another layout is an error.
func WithCapacity(n int64) Option { return func(o *options) { o.capacity = n } }

// WithoutURLIndex creates the index without the by-URL index (ByURL then
// returns dedupindex.ErrNoURLIndex), saving its memory. Like WithCapacity
// it is fixed when the index is created.
func WithoutURLIndex() Option { return func(o *options) { o.noURLIndex = true } }

// WithClientClosed makes Close close the client too (for an Index that
// owns its client, as opened from a redis:// URL).
func WithClientClosed() Option { return func(o *options) { o.closeClient = true } }

// WithLogger receives warnings (server settings that cost memory).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// ErrOldLayout is returned by New for a prefix that holds an index in the
// layout of an earlier version (layout 1: one hash per digest; layout 2:
// the buckets of this one with larger values), which this version does not
// read.
var ErrOldLayout = errors.New("dedupindex/redis: the prefix holds an index in an older layout, which this version does not read")

// New opens the index under the prefix on c (a *ClusterClient, *Client or
// other UniversalClient), creating it if the prefix holds none. Close
// does not close c unless WithClientClosed is given.
func New(ctx context.Context, c goredis.UniversalClient, opts ...Option) (*Index, error) {
	o := options{prefix: "wayside:", lease: 10 * time.Minute, waitTimeout: time.Second}
	for _, f := range opts {
		f(&o)
	}
	switch {
	case o.lease < time.Millisecond:
		return nil, fmt.Errorf("dedupindex/redis: lease %s is too short", o.lease)
	case strings.ContainsAny(o.prefix, "{}"):
		return nil, fmt.Errorf("dedupindex/redis: prefix %q contains a brace", o.prefix)
	case o.waitReplicas < 0 || o.waitReplicas > 0 && o.waitTimeout < time.Millisecond:
		return nil, fmt.Errorf("dedupindex/redis: wait for %d replicas within %s", o.waitReplicas, o.waitTimeout)
	case o.capacity < 0:
		return nil, fmt.Errorf("dedupindex/redis: negative capacity %d", o.capacity)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	var inst [8]byte
	if _, err := rand.Read(inst[:]); err != nil {
		return nil, fmt.Errorf("dedupindex/redis: instance id: %w", err)
	}
	ix := &Index{
		c:            c,
		closeClient:  o.closeClient,
		lease:        o.lease,
		waitReplicas: o.waitReplicas,
		waitTimeout:  o.waitTimeout,
		claimPath:    o.claimPath,
		log:          o.log,
		instance:     hex.EncodeToString(inst[:]),
		names:        newNames(),
		active:       map[string]claimState{},
		masters:      map[string]*masterState{},
	}
	ix.reads.v.Store(readScoreMax / 2)
	if ix.waitReplicas > 0 {
		if err := ix.checkReplicas(ctx); err != nil {
			return nil, err
		}
	}
	entries, valueMax := ix.listpackLimits(ctx)
	ix.valueMax = valueMax
	capacity := o.capacity
	if capacity == 0 {
		capacity = DefaultCapacity
	}
	want := newLayout(o.prefix, bitsFor(capacity, entries/2), !o.noURLIndex)
	l, err := ix.openLayout(ctx, want)
	if err != nil {
		return nil, err
	}
	if o.capacity != 0 && l.bits != want.bits {
		return nil, fmt.Errorf("dedupindex/redis: the index under %q has 2^%d buckets, laid out when it was created; capacity %d asks for 2^%d (the layout cannot change: create a new prefix and import)", o.prefix, l.bits, o.capacity, want.bits)
	}
	if o.noURLIndex && l.byURL {
		return nil, fmt.Errorf("dedupindex/redis: the index under %q keeps a by-URL index (fixed when it was created)", o.prefix)
	}
	ix.l = l
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ix.stopRepair = cancel
	ix.repairing.Add(1)
	go func() {
		defer ix.repairing.Done()
		if n, err := ix.Repair(rctx); err != nil && rctx.Err() == nil {
			ix.log.Warn("dedupindex/redis: repair of queued by-url entries failed", "err", err)
		} else if n > 0 {
			ix.log.Info("dedupindex/redis: wrote queued by-url entries", "entries", n)
		}
	}()
	return ix, nil
}

// listpackLimits reads hash-max-listpack-entries and -value from a master
// (Redis's defaults, 128 and 64, when the server does not say) and warns
// when values of typical originals would not fit.
func (ix *Index) listpackLimits(ctx context.Context) (entries, value int) {
	entries, value = 128, 64
	get := func(c goredis.Cmdable) {
		m, err := c.ConfigGet(ctx, "hash-max-listpack-*").Result()
		if err != nil {
			return
		}
		if n, err := strconv.Atoi(m["hash-max-listpack-entries"]); err == nil && n > 0 {
			entries = n
		}
		if n, err := strconv.Atoi(m["hash-max-listpack-value"]); err == nil && n > 0 {
			value = n
		}
	}
	switch c := ix.c.(type) {
	case *goredis.ClusterClient:
		var once sync.Once
		c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
			once.Do(func() { get(n) })
			return nil
		})
	default:
		get(c)
	}
	if value < recommendedValueMax {
		ix.log.Warn("dedupindex/redis: hash-max-listpack-value is below the recommended value: most originals are stored in overflow keys, at about twice the memory",
			"hash-max-listpack-value", value, "recommended", recommendedValueMax)
	}
	return entries, value
}

// recommendedValueMax is the hash-max-listpack-value that keeps typical
// originals (50-120 bytes) inside their bucket hash.
const recommendedValueMax = 128

// metaLua creates the meta hash unless it exists and returns it.
const metaLua = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'bits', ARGV[2], 'byurl', ARGV[3])
end
return redis.call('HGETALL', KEYS[1])
`

var metaScript = goredis.NewScript(metaLua)

// openLayout reads the layout from the meta key, creating it as want when
// the prefix holds no index.
func (ix *Index) openLayout(ctx context.Context, want *layout) (*layout, error) {
	meta, err := ix.c.HGetAll(ctx, want.metaKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("dedupindex/redis: read %s: %w", want.metaKey(), err)
	}
	if len(meta) == 0 {
		found, err := ix.hasOldLayout(ctx, want.prefix)
		if err != nil {
			return nil, err
		}
		if found != "" {
			return nil, oldLayout("layout 1, found " + found)
		}
		byURL := "1"
		if !want.byURL {
			byURL = "0"
		}
		_, err = ix.write(ctx, want.metaKey(), 1, nameWait, func(c goredis.Cmdable) error {
			var err error
			meta, err = scriptMap(metaScript.Run(ctx, c, []string{want.metaKey()}, layoutVersion, want.bits, byURL))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("dedupindex/redis: create %s: %w", want.metaKey(), err)
		}
	}
	if v := meta["layout"]; v != strconv.Itoa(layoutVersion) {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n < layoutVersion {
			return nil, oldLayout(fmt.Sprintf("layout %d, says %s", n, want.metaKey()))
		}
		return nil, fmt.Errorf("dedupindex/redis: %s says layout %q; this version reads layout %d (a later version of wayside wrote it?)", want.metaKey(), v, layoutVersion)
	}
	bits, err := strconv.ParseUint(meta["bits"], 10, 8)
	if err != nil || bits < minBits || bits > maxBits || (meta["byurl"] != "0" && meta["byurl"] != "1") {
		return nil, fmt.Errorf("dedupindex/redis: %s is damaged: %v", want.metaKey(), meta)
	}
	return newLayout(want.prefix, uint(bits), meta["byurl"] == "1"), nil
}

// oldLayout is the error for an index in an earlier layout.
func oldLayout(what string) error {
	return fmt.Errorf("%w (%s; this version reads layout %d): re-import it from its WARC or CDXJ files with `wayside index import --index redis://…?prefix=NEW`, or keep running the earlier version on it", ErrOldLayout, what, layoutVersion)
}

func scriptMap(cmd *goredis.Cmd) (map[string]string, error) {
	vals, err := cmd.StringSlice()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for i := 0; i+1 < len(vals); i += 2 {
		m[vals[i]] = vals[i+1]
	}
	return m, nil
}

// hasOldLayout returns the name of a key of the earlier layout under
// prefix, or "".
func (ix *Index) hasOldLayout(ctx context.Context, prefix string) (string, error) {
	var found string
	errFound := errors.New("found")
	err := ix.scanAll(ctx, globEscape(prefix)+"o{*", func(_ *goredis.Client, keys []string) error {
		found = keys[0]
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", fmt.Errorf("dedupindex/redis: look for an old layout: %w", err)
	}
	return found, nil
}

// The scripts. KEYS are a slot's digest bucket, pending claim and
// overflow key (one hash tag, so one Redis Cluster slot); a value equal to
// overflow is read from the overflow key.

// claimLua: ARGV field, token, lease ms, replaceable value (or "").
// Returns {1, value} (Duplicate), {2} (Claimed, also when the claim is
// already the caller's: a retried call) or {3} (Pending). A stored value
// equal to the replaceable one is claimed over.
const claimLua = `
local p = redis.call('GET', KEYS[2])
if p then
  if p == ARGV[2] then return {2} end
  return {3}
end
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == '\0' then v = redis.call('GET', KEYS[3]) or '\0' end
if v and v ~= ARGV[4] then return {1, v} end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return {2}
`

// commitLua: ARGV field, token (or ""), value, replaceable value (or ""),
// "1" if the value goes to the overflow key, "1" if the by-URL entry is
// queued in the todo hash (KEYS[4]). Drops the claim named by the token,
// then stores the value unless another is kept. Returns {0} (kept), {1}
// (stored; also when this value was already stored: a retried call) or
// {2, old} (replaced old).
const commitLua = `
if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('DEL', KEYS[2])
end
local v = redis.call('HGET', KEYS[1], ARGV[1])
local long = v == '\0'
if long then v = redis.call('GET', KEYS[3]) or '\0' end
if v then
  if v == ARGV[3] then return {1} end
  if ARGV[4] == '' or v ~= ARGV[4] then return {0} end
end
if ARGV[5] == '1' then
  redis.call('SET', KEYS[3], ARGV[3])
  redis.call('HSET', KEYS[1], ARGV[1], '\0')
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  if long then redis.call('DEL', KEYS[3]) end
end
if ARGV[6] == '1' then redis.call('HSET', KEYS[4], ARGV[1], v or '') end
if v then return {2, v} end
return {1}
`

const cancelLua = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`

// prefixLua returns the fields (and values) of hash KEYS[1] that start
// with ARGV[1].
const prefixLua = `
local out = {}
local all = redis.call('HGETALL', KEYS[1])
local n = #ARGV[1]
for i = 1, #all, 2 do
  if string.sub(all[i], 1, n) == ARGV[1] then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
`

var (
	claimScript  = goredis.NewScript(claimLua)
	commitScript = goredis.NewScript(commitLua)
	cancelScript = goredis.NewScript(cancelLua)
	prefixScript = goredis.NewScript(prefixLua)
)

func (ix *Index) slotKeys(s slot) []string {
	return []string{ix.l.digestKey(s.scope, s.bucket), ix.l.claimKey(s.scope, s.bucket, s.field),
		ix.l.overflowKey(s.scope, s.bucket, s.field), ix.l.todoKey(s.scope, s.bucket)}
}

func (ix *Index) check(ctx context.Context) error {
	if ix.closed.Load() {
		return dedupindex.ErrClosed
	}
	return ctx.Err()
}

// locate validates k and returns it with a canonical digest, and its
// slot.
func (ix *Index) locate(k dedupindex.Key) (dedupindex.Key, slot, error) {
	s, err := ix.l.locate(k)
	if err != nil {
		return k, slot{}, err
	}
	k.Digest = s.digest
	return k, s, nil
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

// errUnusable is wrapped by decode errors of stored values: such an
// original counts as absent and the next Commit of its key replaces it.
var errUnusable = errors.New("stored original cannot be read")

func (ix *Index) claim(ctx context.Context, k dedupindex.Key, notBefore time.Time) (dedupindex.ClaimResult, error) {
	if err := ix.check(ctx); err != nil {
		return dedupindex.ClaimResult{}, err
	}
	k, s, err := ix.locate(k)
	if err != nil {
		return dedupindex.ClaimResult{}, err
	}
	r, err := ix.claimSlot(ctx, k, s, notBefore)
	if err == nil {
		ix.reads.observe(r.State == dedupindex.Duplicate)
	}
	return r, err
}

// readScore follows how many recent claims found a committed original,
// in [0, readScoreMax]: a re-crawl, where most do, reads first (one HGET
// answers a duplicate); a first crawl, where most digests are new, goes
// straight to the claim script, which a new digest needs anyway (a read
// first would cost it a second round trip, and with appendfsync always a
// second wait for the disk). Either way the answer is the same.
type readScore struct{ v atomic.Int32 }

const readScoreMax = 1 << 10

func (r *readScore) first() bool { return r.v.Load() >= readScoreMax/2 }

// observe moves the score 1/16 of the way towards readScoreMax after a
// duplicate and towards 0 otherwise. Concurrent updates may be lost: it
// only chooses a path.
func (r *readScore) observe(dup bool) {
	v := r.v.Load()
	if dup {
		v += (readScoreMax - v) >> 4
	} else {
		v -= v >> 4
	}
	r.v.Store(v)
}

func (ix *Index) claimSlot(ctx context.Context, k dedupindex.Key, s slot, notBefore time.Time) (dedupindex.ClaimResult, error) {
	replaces := ""
	if ix.claimPath == pathRead || ix.claimPath == pathAdaptive && ix.reads.first() {
		// A committed original is answered by one HGET: the bucket holds
		// committed originals only, so what it returns may be pointed at
		// (it stays durable in its WARC even if a Commit replaces it
		// meanwhile). Everything else takes the claim script.
		v, err := ix.c.HGet(ctx, ix.l.digestKey(s.scope, s.bucket), s.field).Result()
		switch {
		case errors.Is(err, goredis.Nil) || err == nil && v == overflow:
		case err != nil:
			return dedupindex.ClaimResult{}, fmt.Errorf("dedupindex/redis: claim %s: %w", s.digest, ix.failed(err))
		default:
			if r, ok, err := ix.judge(ctx, s, v, notBefore); ok || err != nil {
				return r, err
			}
			replaces = v // too old or unreadable: claim over it
		}
	}
	token := ix.instance + "." + strconv.FormatUint(ix.seq.Add(1), 10)
	keys := ix.slotKeys(s)[:3] // the claim script needs no queue key
	// A second round claims over an original found too old or unreadable
	// in the first, unless it changed meanwhile (then it is judged again).
	for range 3 {
		res, err := claimScript.Run(ctx, ix.c, keys, s.field, token, ix.lease.Milliseconds(), replaces).Slice()
		if err != nil {
			return dedupindex.ClaimResult{}, fmt.Errorf("dedupindex/redis: claim %s: %w", s.digest, ix.failed(err))
		}
		switch res[0].(int64) {
		case 1:
			v, _ := res[1].(string)
			if r, ok, err := ix.judge(ctx, s, v, notBefore); ok || err != nil {
				return r, err
			}
			replaces = v
			continue
		case 2:
			ix.mu.Lock()
			if ix.closed.Load() {
				// Close ran meanwhile and will not see this claim: drop it.
				ix.mu.Unlock()
				if err := ix.cancelToken(context.WithoutCancel(ctx), s, token); err != nil {
					return dedupindex.ClaimResult{}, err
				}
				return dedupindex.ClaimResult{}, dedupindex.ErrClosed
			}
			ix.active[token] = claimState{key: k, replaces: replaces}
			ix.mu.Unlock()
			return dedupindex.ClaimResult{State: dedupindex.Claimed, Ticket: dedupindex.Ticket{Key: k, Token: token}}, nil
		}
		return dedupindex.ClaimResult{State: dedupindex.Pending}, nil
	}
	return dedupindex.ClaimResult{}, fmt.Errorf("dedupindex/redis: claim %s: the stored original keeps changing", s.digest)
}

// judge returns Duplicate with the original stored as v (ok), unless it
// is dated before notBefore or cannot be read: then the claim goes on
// (not ok, no error), claiming over v.
func (ix *Index) judge(ctx context.Context, s slot, v string, notBefore time.Time) (_ dedupindex.ClaimResult, ok bool, _ error) {
	o, err := ix.decode(ctx, s, v)
	switch {
	case err == nil && (notBefore.IsZero() || !o.Date.Before(notBefore)):
		return dedupindex.ClaimResult{State: dedupindex.Duplicate, Original: o}, true, nil
	case err != nil && !errors.Is(err, errUnusable):
		return dedupindex.ClaimResult{}, false, err
	}
	return dedupindex.ClaimResult{}, false, nil
}

// decode turns a stored value into the original of slot s; errors about
// the value itself wrap errUnusable.
func (ix *Index) decode(ctx context.Context, s slot, v string) (dedupindex.Original, error) {
	r, err := record.DecodePacked([]byte(v))
	if err != nil {
		return dedupindex.Original{}, fmt.Errorf("dedupindex/redis: %s in scope %q: %w: %v", s.digest, s.scope, errUnusable, err)
	}
	o, err := r.Original(s.digest, func(k record.Kind, id uint64) (string, error) { return ix.name(ctx, k, id) })
	if errors.Is(err, errUnknownName) {
		return dedupindex.Original{}, fmt.Errorf("dedupindex/redis: %s in scope %q: %w: %v", s.digest, s.scope, errUnusable, err)
	}
	return o, err
}

// Commit stores o for the ticket's key (see the package doc).
func (ix *Index) Commit(ctx context.Context, t dedupindex.Ticket, o dedupindex.Original) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	k, s, err := ix.locate(t.Key)
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
			ix.cancelToken(ctx, s, t.Token)
		}
		return err
	}
	_, err = ix.store(ctx, s, o, t.Token, st.replaces)
	return err
}

// store runs the commit script (waiting for replicas if configured) and
// maintains the by-URL index. It reports whether o was stored.
func (ix *Index) store(ctx context.Context, s slot, o dedupindex.Original, token, replaces string) (bool, error) {
	r, err := record.FromOriginal(o, func(k record.Kind, name string) (uint64, error) { return ix.intern(ctx, k, name) })
	if err != nil {
		return false, err
	}
	v := string(record.AppendPacked(nil, r))
	long, todo := "0", "0"
	if len(v) > ix.valueMax {
		long = "1"
	}
	if ix.l.byURL {
		todo = "1"
	}
	keys := ix.slotKeys(s)
	var res []any
	a, err := ix.write(ctx, keys[0], ix.waitReplicas, ix.waitTimeout, func(c goredis.Cmdable) error {
		var err error
		res, err = commitScript.Run(ctx, c, keys, s.field, token, v, replaces, long, todo).Slice()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("dedupindex/redis: commit %s: %w", s.digest, err)
	}
	if res[0].(int64) == 0 {
		return false, nil
	}
	var err2 error
	if a.acked < ix.waitReplicas {
		err2 = ix.notReplicated("commit", s.digest, a)
	}
	if ix.l.byURL {
		var old string
		if len(res) > 1 {
			old, _ = res[1].(string)
		}
		if err := ix.addURLEntry(ctx, s, o, old); err != nil {
			// The original is committed; its by-URL entry stays queued
			// for Repair.
			ix.log.Warn("dedupindex/redis: by-url entry queued", "digest", s.digest, "uri", o.TargetURI, "err", err)
		}
	}
	return true, err2
}

func (ix *Index) notReplicated(what, dig string, a ack) error {
	return fmt.Errorf("dedupindex/redis: %s %s: stored on the master, %w (%d of %d within %s; the master has %d): a failover may lose it",
		what, dig, ErrNotReplicated, a.acked, ix.waitReplicas, ix.waitTimeout, a.replicas)
}

// addURLEntry files o under its URL, after dropping the entry of the
// replaced original old (if any) when its URL differs. The entry is
// written after the original, so ByURL never finds an entry whose
// original is not stored.
func (ix *Index) addURLEntry(ctx context.Context, s slot, o dedupindex.Original, old string) error {
	surtKey := dedupindex.URLKey(o.TargetURI)
	if old != "" {
		if oo, err := ix.decode(ctx, s, old); err == nil {
			if oldKey := dedupindex.URLKey(oo.TargetURI); oldKey != surtKey {
				if err := ix.dropURLEntry(ctx, s, oldKey); err != nil {
					return fmt.Errorf("dedupindex/redis: by-url remove %s: %w", oo.TargetURI, err)
				}
			}
		}
	}
	key, field := ix.l.urlEntry(s.scope, surtKey, s.sum)
	a, err := ix.write(ctx, key, ix.waitReplicas, ix.waitTimeout, func(c goredis.Cmdable) error { return c.HSet(ctx, key, field, "").Err() })
	if err != nil {
		return fmt.Errorf("dedupindex/redis: by-url add %s: %w", o.TargetURI, err)
	}
	if a.acked < ix.waitReplicas && a.replicas > 0 {
		// A failover could lose the entry: it stays queued, for Repair.
		return ix.notReplicated("by-url entry of", s.digest, a)
	}
	if err := ix.c.HDel(ctx, ix.l.todoKey(s.scope, s.bucket), s.field).Err(); err != nil {
		return fmt.Errorf("dedupindex/redis: by-url done %s: %w", o.TargetURI, ix.failed(err))
	}
	return nil
}

// dropURLEntry removes the by-URL entry of a replaced original of slot s
// whose target URI had SURT key oldKey, unless an original still stored
// has the same entry (entries are short hashes, so two originals can
// share one).
func (ix *Index) dropURLEntry(ctx context.Context, s slot, oldKey string) error {
	key, field := ix.l.urlEntry(s.scope, oldKey, s.sum)
	found, err := ix.originalsByRef(ctx, s.scope, s.sum[:refLen])
	if err != nil {
		return err
	}
	for _, o := range found {
		if k, f := ix.l.urlEntry(s.scope, dedupindex.URLKey(o.TargetURI), s.sum); k == key && f == field {
			return nil
		}
	}
	_, err = ix.write(ctx, key, 0, 0, func(c goredis.Cmdable) error { return c.HDel(ctx, key, field).Err() })
	return err
}

// Repair writes the by-URL entries left queued by commits that failed
// half-way (the original was committed, its by-URL entry not: a failover
// or connection loss between the two writes). New runs it once in the
// background; it reports how many entries it wrote.
func (ix *Index) Repair(ctx context.Context) (int, error) {
	if err := ix.check(ctx); err != nil {
		return 0, err
	}
	if !ix.l.byURL {
		return 0, nil
	}
	n := 0
	err := ix.scanAll(ctx, ix.pattern('q'), func(c *goredis.Client, keys []string) error {
		for _, key := range keys {
			bucket, scope, err := ix.l.parseBucketKey(key, 'q')
			if err != nil {
				continue // reported by Check
			}
			todo, err := c.HGetAll(ctx, key).Result()
			if err != nil {
				return err
			}
			for field, old := range todo {
				sum, alg, _, err := ix.l.parseField(bucket, field)
				if err != nil {
					continue
				}
				s := slot{scope: scope, digest: digest.Digest{Alg: alg, Sum: sum}.String(), sum: sum, bucket: bucket, field: field}
				v, err := ix.get(ctx, s)
				if err != nil {
					return err
				}
				o, err := ix.decode(ctx, s, v)
				if v != "" && err == nil {
					err := ix.addURLEntry(ctx, s, o, old)
					switch {
					case errors.Is(err, ErrNotReplicated):
						// Written, not yet acknowledged: stays queued.
					case err != nil:
						return err
					default:
						n++
					}
					continue
				}
				if v != "" && !errors.Is(err, errUnusable) {
					return err
				}
				// Gone or unreadable: nothing to file.
				if err := c.HDel(ctx, key, field).Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("dedupindex/redis: repair: %w", ix.failed(err))
	}
	return n, nil
}

func (ix *Index) cancelToken(ctx context.Context, s slot, token string) error {
	if err := cancelScript.Run(ctx, ix.c, []string{ix.l.claimKey(s.scope, s.bucket, s.field)}, token).Err(); err != nil {
		return fmt.Errorf("dedupindex/redis: cancel: %w", ix.failed(err))
	}
	return nil
}

// Cancel drops a pending claim issued by this Index.
func (ix *Index) Cancel(ctx context.Context, t dedupindex.Ticket) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	k, s, err := ix.locate(t.Key)
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
	return ix.cancelToken(ctx, s, t.Token)
}

// get reads the stored value of slot s ("" if none), following an
// overflow marker.
func (ix *Index) get(ctx context.Context, s slot) (string, error) {
	v, err := ix.c.HGet(ctx, ix.l.digestKey(s.scope, s.bucket), s.field).Result()
	if err == nil && v == overflow {
		v, err = ix.c.Get(ctx, ix.l.overflowKey(s.scope, s.bucket, s.field)).Result()
	}
	if errors.Is(err, goredis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("dedupindex/redis: read %s: %w", s.digest, ix.failed(err))
	}
	return v, nil
}

// Lookup returns the committed original for k. An original that cannot
// be read counts as absent, as for Claim (Check reports it).
func (ix *Index) Lookup(ctx context.Context, k dedupindex.Key) (dedupindex.Original, bool, error) {
	if err := ix.check(ctx); err != nil {
		return dedupindex.Original{}, false, err
	}
	_, s, err := ix.locate(k)
	if err != nil {
		return dedupindex.Original{}, false, err
	}
	v, err := ix.get(ctx, s)
	if err != nil || v == "" {
		return dedupindex.Original{}, false, err
	}
	o, err := ix.decode(ctx, s, v)
	if errors.Is(err, errUnusable) {
		return dedupindex.Original{}, false, nil
	}
	return o, err == nil, err
}

// Put stores o under k unless k has an original (the first one wins).
func (ix *Index) Put(ctx context.Context, k dedupindex.Key, o dedupindex.Original) (bool, error) {
	if err := ix.check(ctx); err != nil {
		return false, err
	}
	k, s, err := ix.locate(k)
	if err != nil {
		return false, err
	}
	o, err = dedupindex.CheckOriginal(k, o)
	if err != nil {
		return false, err
	}
	return ix.store(ctx, s, o, "", "")
}

// ByURL returns the originals in scope whose target URI has SURT key
// surtKey, oldest first.
func (ix *Index) ByURL(ctx context.Context, scope, surtKey string) ([]dedupindex.Original, error) {
	if err := ix.check(ctx); err != nil {
		return nil, err
	}
	if !ix.l.byURL {
		return nil, dedupindex.ErrNoURLIndex
	}
	key, p := ix.l.urlQuery(scope, surtKey)
	entries, err := ix.prefixScan(ctx, key, p)
	if err != nil {
		return nil, fmt.Errorf("dedupindex/redis: by-url: %w", err)
	}
	var out []dedupindex.Original
	seen := map[string]bool{}
	for i := 0; i < len(entries); i += 2 {
		ref := entries[i][len(p):]
		if len(ref) != refLen || seen[ref] {
			continue
		}
		seen[ref] = true
		found, err := ix.originalsByRef(ctx, scope, []byte(ref))
		if err != nil {
			return nil, err
		}
		for _, o := range found {
			if dedupindex.URLKey(o.TargetURI) == surtKey {
				out = append(out, o)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out, nil
}

// originalsByRef returns the readable originals in scope whose digest
// starts with ref.
func (ix *Index) originalsByRef(ctx context.Context, scope string, ref []byte) ([]dedupindex.Original, error) {
	bucket := ix.l.bucketOf(ref)
	entries, err := ix.prefixScan(ctx, ix.l.digestKey(scope, bucket), string(ref[ix.l.drop:]))
	if err != nil {
		return nil, fmt.Errorf("dedupindex/redis: by-url: %w", err)
	}
	var out []dedupindex.Original
	for i := 0; i+1 < len(entries); i += 2 {
		field, v := entries[i], entries[i+1]
		sum, alg, _, err := ix.l.parseField(bucket, field)
		if err != nil {
			continue // reported by Check
		}
		s := slot{scope: scope, digest: digest.Digest{Alg: alg, Sum: sum}.String(), sum: sum, bucket: bucket, field: field}
		if v == overflow {
			if v, err = ix.get(ctx, s); err != nil {
				return nil, err
			}
		}
		o, err := ix.decode(ctx, s, v)
		if errors.Is(err, errUnusable) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func (ix *Index) prefixScan(ctx context.Context, key, prefix string) ([]string, error) {
	v, err := prefixScript.Run(ctx, ix.c, []string{key}, prefix).StringSlice()
	return v, ix.failed(err)
}

// Close drops the pending claims this Index holds, and closes the Redis
// client if the Index owns it (WithClientClosed).
func (ix *Index) Close() error {
	if ix.closed.Swap(true) {
		return dedupindex.ErrClosed
	}
	ix.stopRepair()
	ix.repairing.Wait()
	ix.mu.Lock()
	active := ix.active
	ix.active = map[string]claimState{}
	ix.mu.Unlock()
	var errs []error
	for tok, st := range active {
		s, err := ix.l.locate(st.key)
		if err == nil {
			err = ix.cancelToken(context.Background(), s, tok)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if ix.closeClient {
		errs = append(errs, ix.c.Close())
	}
	return errors.Join(errs...)
}

// putConcurrency bounds the Puts PutBatch runs at once.
const putConcurrency = 16

// PutBatch stores entries like Put, several at a time; within the batch
// the first entry of a key wins. Every entry is validated before any is
// written.
func (ix *Index) PutBatch(ctx context.Context, entries []dedupindex.Entry) ([]bool, error) {
	if err := ix.check(ctx); err != nil {
		return nil, err
	}
	slots := make([]slot, len(entries))
	origs := make([]dedupindex.Original, len(entries))
	first := map[dedupindex.Key]bool{}
	run := make([]bool, len(entries))
	for i, e := range entries {
		k, s, err := ix.locate(e.Key)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		o, err := dedupindex.CheckOriginal(k, e.Original)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		slots[i] = s
		origs[i] = o
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
			added[i], errs[i] = ix.store(ctx, slots[i], origs[i], "", "")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return added, nil
}
