package adaptive

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

// RegistryConfig configures a Registry. Zero fields mean the documented
// defaults.
type RegistryConfig struct {
	// Rules seeds each new tenant's Limiter: the rule with the longest
	// prefix of its key replaces Limiter.Rule. Nil means Limiter.Rule for
	// everyone. Rules may change while in use; a tenant keeps the rule it
	// was created with until it is evicted.
	Rules *quota.Rules

	// Limiter is the configuration of every tenant's Limiter.
	Limiter Config

	// MaxTenants bounds the number of limiters held. At it, creating one
	// evicts a tenant of the new one's shard (one of 64), unless it drops an
	// idle one: of 16 tenants of the shard, the least recently used with no
	// request in flight (or, if all 16 have some, the least recently used).
	// The 16 are consecutive in the shard map's order from a random start;
	// that order follows the keys' hashes, not their use, so the sample is
	// as good as a random one for this. As with Redis's sampled LRU, the
	// tenant evicted is then among the least recently used of its shard, at
	// a cost that does not grow with the number of tenants. Under
	// concurrent creations the count may pass MaxTenants by a few. Zero
	// means 100 000.
	MaxTenants int

	// IdleTTL is how long a tenant may go without an admission (or a
	// GetAt) before it is evicted (lazily: by later creations, or by
	// Sweep). A tenant with requests in flight is never evicted for
	// idleness. Zero means 10 min.
	IdleTTL time.Duration

	// Breaker, if set, makes each new tenant's circuit breaker, which
	// lives and is evicted with its Limiter (see Limiter.Breaker). Nil
	// means no tenant has one.
	Breaker func(quota.Key) *breaker.Breaker
}

const shardCount = 64

// Registry maps tenant keys to their Limiters. Lookups of existing tenants
// take only a shard's read lock, so they scale with cores; the map is split
// in 64 shards by a hash of the key.
//
// Eviction is amortised, with no background goroutine: each creation of a
// limiter looks at a few entries of its shard (4, or 16 at MaxTenants) and
// drops those idle for longer than IdleTTL, and at MaxTenants one more if
// none was; Sweep drops every idle one. A caller still holding an
// evicted Limiter may keep using it; the next Get of its key makes a fresh
// one, seeded again from the rules (so learned state is lost).
//
// The zero Registry is not usable; call NewRegistry. Registry is safe for
// concurrent use.
type Registry struct {
	rules  *quota.Rules
	p      *params
	rule   quota.Rule
	max    int64
	idle   int64
	brk    func(quota.Key) *breaker.Breaker
	seed   maphash.Seed
	n      atomic.Int64
	shards [shardCount]shard
}

type shard struct {
	mu sync.RWMutex
	m  map[quota.Key]*Limiter
	_  [40]byte // keep shards on their own cache lines
}

// NewRegistry returns an empty Registry.
func NewRegistry(cfg RegistryConfig) *Registry {
	r := &Registry{
		rules: cfg.Rules,
		p:     cfg.Limiter.params(),
		rule:  cfg.Limiter.Rule,
		idle:  int64(cfg.IdleTTL),
		brk:   cfg.Breaker,
		seed:  maphash.MakeSeed(),
	}
	r.max = int64(cfg.MaxTenants)
	if r.max <= 0 {
		r.max = 100_000
	}
	if r.idle <= 0 {
		r.idle = int64(10 * time.Minute)
	}
	for i := range r.shards {
		r.shards[i].m = make(map[quota.Key]*Limiter)
	}
	return r
}

func (r *Registry) shard(k quota.Key) *shard {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(k.Product)
	h.WriteByte(0)
	h.WriteString(k.Region)
	h.WriteByte(0)
	h.WriteString(k.Account)
	h.WriteByte(0)
	h.WriteString(k.API)
	return &r.shards[h.Sum64()%shardCount]
}

// Get returns the Limiter of tenant k, creating it if needed. It reads no
// clock for a tenant that exists: a tenant's use is stamped by its
// admissions, which read one anyway.
func (r *Registry) Get(k quota.Key) *Limiter {
	s := r.shard(k)
	s.mu.RLock()
	l := s.m[k]
	s.mu.RUnlock()
	if l != nil {
		return l
	}
	return r.create(s, k, time.Now().UnixNano())
}

// GetAt is Get that also marks the tenant used at now.
func (r *Registry) GetAt(k quota.Key, now time.Time) *Limiter {
	ns := now.UnixNano()
	s := r.shard(k)
	s.mu.RLock()
	l := s.m[k]
	s.mu.RUnlock()
	if l != nil {
		touch(l, ns)
		return l
	}
	return r.create(s, k, ns)
}

// Entries of a shard a creation looks at.
const (
	idleSample  = 4  // for idle tenants
	evictSample = 16 // at MaxTenants, for the tenant to evict
)

// create returns the Limiter of tenant k in shard s, making it if it is
// still missing, after evicting what is idle at now and, at MaxTenants, one
// more tenant of s if none was.
func (r *Registry) create(s *shard, k quota.Key, ns int64) *Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.m[k]; l != nil {
		touch(l, ns)
		return l
	}
	full := r.n.Load() >= r.max
	n := idleSample
	if full {
		n = evictSample
	}
	r.evict(s, ns, n, full)
	rule := r.rule
	if rr, _, ok := r.rules.Lookup(k); ok {
		rule = rr
	}
	l := newWithParams(r.p, rule)
	if r.brk != nil {
		l.brk = r.brk(k)
	}
	l.used.Store(ns)
	s.m[k] = l
	r.n.Add(1)
	return l
}

// touch records a use, writing only when the stamp moved by a second, so
// that hot tenants do not bounce a cache line between cores. An evicted
// Limiter keeps its mark.
func touch(l *Limiter, now int64) {
	if u := l.used.Load(); u != evictedMark && now-u > int64(time.Second) {
		l.used.CompareAndSwap(u, now)
	}
}

// evictedMark in Limiter.used: a Registry dropped the Limiter.
const evictedMark = math.MinInt64

// drop deletes k's Limiter l from s and marks it evicted. s.mu is held.
func (r *Registry) drop(s *shard, k quota.Key, l *Limiter) {
	delete(s.m, k)
	l.used.Store(evictedMark)
	r.n.Add(-1)
}

// Evicted reports whether the Registry that made l has dropped it (idle for
// IdleTTL, or to make room under MaxTenants). A caller that keeps a Limiter
// across lookups should look its key up again once it is evicted, so as to
// share the tenant's state with everyone else.
func (l *Limiter) Evicted() bool { return l.used.Load() == evictedMark }

// evict looks at up to n entries of s (map order, from a random start;
// n < 0 looks at all) and drops the idle ones. If none was idle and full is
// set, it drops the least recently used of those it looked at, one with no
// request in flight if it can. It returns how many it dropped. s.mu is held.
func (r *Registry) evict(s *shard, now int64, n int, full bool) int {
	dropped := 0
	var oldK quota.Key
	var old *Limiter
	oldBusy := false
	for k, l := range s.m {
		if n == 0 {
			break
		}
		n--
		used, busy := l.used.Load(), l.inflight.Load() > 0
		switch {
		case now-used > r.idle && !busy:
			r.drop(s, k, l)
			dropped++
		case old == nil || (oldBusy && !busy) || (busy == oldBusy && used < old.used.Load()):
			oldK, old, oldBusy = k, l, busy
		}
	}
	if full && dropped == 0 && old != nil {
		r.drop(s, oldK, old)
		dropped++
	}
	return dropped
}

// Sweep drops every tenant idle at now for longer than IdleTTL and returns
// how many it dropped.
func (r *Registry) Sweep(now time.Time) int {
	ns := now.UnixNano()
	dropped := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		dropped += r.evict(s, ns, -1, false)
		s.mu.Unlock()
	}
	return dropped
}

// Len returns the number of tenants held.
func (r *Registry) Len() int { return int(r.n.Load()) }

// Range calls f for each tenant until f returns false. It copies one shard
// at a time and calls f with no lock held, so f may call Get; tenants added
// or evicted meanwhile may or may not be seen.
func (r *Registry) Range(f func(quota.Key, *Limiter) bool) {
	type entry struct {
		k quota.Key
		l *Limiter
	}
	var buf []entry
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.RLock()
		buf = buf[:0]
		for k, l := range s.m {
			buf = append(buf, entry{k, l})
		}
		s.mu.RUnlock()
		for _, e := range buf {
			if !f(e.k, e.l) {
				return
			}
		}
	}
}
