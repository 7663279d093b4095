package aggregate

import (
	"container/list"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cache holds archives' TimeMap answers (the mementos one archive listed
// for one URI-R) for as long as the archive's Cache-Control allows, at
// most Config.CacheTTL, bounded by Config.CacheMementos mementos in all
// (least recently used first out). A TimeGate answer depends on its
// datetime and is not cached.
type cache struct {
	mu    sync.Mutex
	max   int // mementos
	held  int
	ll    *list.List
	items map[string]*list.Element
}

type cacheEntry struct {
	key     string
	ms      []Memento
	expires time.Time
}

func newCache(maxMementos int) *cache {
	return &cache{max: maxMementos, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *cache) get(key string, now time.Time) ([]Memento, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.remove(el)
		return nil, false
	}
	c.ll.MoveToFront(el)
	return append([]Memento(nil), e.ms...), true
}

func (c *cache) put(key string, ms []Memento, ttl time.Duration, now time.Time) {
	if c == nil || ttl <= 0 || len(ms) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	c.items[key] = c.ll.PushFront(&cacheEntry{key: key, ms: append([]Memento(nil), ms...), expires: now.Add(ttl)})
	c.held += len(ms)
	for c.held > c.max {
		c.remove(c.ll.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.ll.Remove(el)
	delete(c.items, e.key)
	c.held -= len(e.ms)
}

// freshFor is how long a response may be reused under its Cache-Control
// (max-age, s-maxage; none with no-store, no-cache or private), at most
// limit; without Cache-Control, limit.
func freshFor(h http.Header, limit time.Duration) time.Duration {
	cc := strings.ToLower(strings.Join(h.Values("Cache-Control"), ","))
	if cc == "" {
		return limit
	}
	ttl := limit
	for _, d := range strings.Split(cc, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch name {
		case "no-store", "no-cache", "private":
			return 0
		case "max-age", "s-maxage":
			n, err := strconv.Atoi(strings.Trim(val, `"`))
			if err != nil || n < 0 {
				return 0
			}
			ttl = min(ttl, time.Duration(n)*time.Second)
		}
	}
	return ttl
}
