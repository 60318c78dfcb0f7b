package fakecloud

import (
	"math"
	"sync"
	"time"
)

// limitStatus is what a quota says after an admission decision.
type limitStatus struct {
	quota     Quota
	limit     int           // Limit, or Burst for a token bucket
	remaining int           // admissions possible right now
	reset     time.Duration // until the window ends / a slot frees / the bucket is full
	retry     time.Duration // until the next admission is possible; 0 if remaining > 0
}

// limiter is the state of one quota for one account. mu guards every field.
type limiter struct {
	mu sync.Mutex
	q  Quota // parameters in use

	// FixedWindow
	winStart int64 // Unix ns of the current window's start
	count    int
	open     bool // winStart holds: always after advanceLocked under AlignEpoch; under AlignFirst, from a request until its window ends

	// SlidingWindow: admission times (Unix ns), oldest first, from head.
	log  []int64
	head int

	// TokenBucket
	tokens float64
	last   int64 // Unix ns of the last refill

	// Concurrency
	inflight int

	unseenNext int64 // Unix ns of the unseen consumer's next request
	fresh      bool  // never used since (re)configured
}

// syncLocked adopts q (already normalised) at now.
func (l *limiter) syncLocked(q Quota, now int64) {
	if l.fresh || l.q.Policy != q.Policy {
		l.q = q
		l.count, l.winStart, l.open = 0, 0, false
		l.log, l.head = nil, 0
		l.tokens, l.last = float64(q.capacity()), now
		l.inflight = 0
		// The unseen consumer has spent its share of the window already;
		// a bucket starts full, with no past.
		switch {
		case q.Policy == FixedWindow && q.Align == AlignEpoch:
			l.unseenNext = windowStart(now, q.Window, q.Offset)
		case q.Policy == SlidingWindow:
			l.unseenNext = now - int64(q.Window)
		default:
			l.unseenNext = now
		}
		l.fresh = false
		return
	}
	if l.q == q {
		return
	}
	switch q.Policy {
	case FixedWindow:
		if q.Window != l.q.Window || q.Align != l.q.Align || q.Offset != l.q.Offset {
			l.count, l.winStart, l.open = 0, 0, false
		}
	case TokenBucket:
		l.refillLocked(now)
		l.tokens = min(l.tokens, float64(q.capacity()))
	}
	l.q = q
}

// refillLocked adds the tokens earned since l.last.
func (l *limiter) refillLocked(now int64) {
	if now > l.last {
		rate := float64(l.q.Limit) / float64(l.q.Window)
		l.tokens = min(float64(l.q.capacity()), l.tokens+float64(now-l.last)*rate)
		l.last = now
	}
}

// windowStart returns the start of the window containing now, of the
// windows that start at offset + k·w from the Unix epoch.
func windowStart(now int64, w, offset time.Duration) int64 {
	m := (now - int64(offset)) % int64(w)
	if m < 0 {
		m += int64(w)
	}
	return now - m
}

// nextOnGrid returns the first instant at or after t of the form
// gap/2 + k·gap from the Unix epoch, for an integer k.
func nextOnGrid(t, gap int64) int64 {
	d := t - gap/2
	k := d / gap // rounds toward zero: up for d < 0
	if d > 0 && d%gap != 0 {
		k++
	}
	return gap/2 + k*gap
}

// spendUnseenLocked admits, at their own instants, the unseen consumer's
// requests due up to now (see [Quota].Unseen), then brings the state
// forward to now. Requests due more than a window before they could still
// matter are skipped, uncounted: a window before the current fixed window
// or the trailing sliding window, or a window before the time a token
// bucket takes to fill. It returns how many were admitted and refused.
func (l *limiter) spendUnseenLocked(now int64) (admitted, refused int64) {
	q := l.q
	if q.Unseen > 0 {
		gap := int64(q.Window) / int64(q.Unseen)
		from := now - 2*int64(q.Window)
		switch {
		case q.Policy == FixedWindow && q.Align == AlignEpoch:
			from = windowStart(now, q.Window, q.Offset) - int64(q.Window)
		case q.Policy == TokenBucket:
			if q.Limit > 0 {
				from -= int64(float64(q.capacity()) * float64(q.Window) / float64(q.Limit))
			}
		}
		// The unseen requests fall at (k+½)·gap from the epoch.
		next := nextOnGrid(max(l.unseenNext, from), gap)
		for ; next <= now; next += gap {
			l.advanceLocked(next)
			if l.canAdmitLocked() {
				l.admitLocked(next)
				admitted++
			} else {
				refused++
			}
		}
		l.unseenNext = next
	}
	l.advanceLocked(now)
	return admitted, refused
}

// advanceLocked brings the state forward to now.
func (l *limiter) advanceLocked(now int64) {
	switch l.q.Policy {
	case FixedWindow:
		if l.q.Align == AlignFirst {
			// The window ends; the next request starts the next one.
			if l.open && now >= l.winStart+int64(l.q.Window) {
				l.open, l.count = false, 0
			}
		} else if ws := windowStart(now, l.q.Window, l.q.Offset); ws != l.winStart || !l.open {
			l.winStart, l.count, l.open = ws, 0, true
		}
	case SlidingWindow:
		cut := now - int64(l.q.Window)
		for l.head < len(l.log) && l.log[l.head] <= cut {
			l.head++
		}
		if l.head > 0 && l.head*2 >= len(l.log) {
			n := copy(l.log, l.log[l.head:])
			l.log, l.head = l.log[:n], 0
		}
	case TokenBucket:
		l.refillLocked(now)
	}
}

// canAdmitLocked reports whether one more request fits at now; call
// advanceLocked first.
func (l *limiter) canAdmitLocked() bool {
	switch l.q.Policy {
	case SlidingWindow:
		return len(l.log)-l.head < l.q.Limit
	case TokenBucket:
		return l.tokens >= 1
	case Concurrency:
		return l.inflight < l.q.Limit
	}
	return l.count < l.q.Limit
}

// admitLocked records one admission at now.
func (l *limiter) admitLocked(now int64) {
	switch l.q.Policy {
	case SlidingWindow:
		l.log = append(l.log, now)
	case TokenBucket:
		l.tokens--
	case Concurrency:
		l.inflight++
	default:
		if !l.open {
			// Only AlignFirst closes a window: this request starts one.
			l.winStart, l.open = now, true
		}
		l.count++
	}
}

// releaseLocked ends one admitted request of a Concurrency quota.
func (l *limiter) releaseLocked() {
	if l.q.Policy == Concurrency && l.inflight > 0 {
		l.inflight--
	}
}

// statusLocked describes the quota at now.
func (l *limiter) statusLocked(now int64) limitStatus {
	q := l.q
	st := limitStatus{quota: q, limit: q.Limit}
	switch q.Policy {
	case FixedWindow:
		st.remaining = max(q.Limit-l.count, 0)
		st.reset = time.Duration(l.winStart + int64(q.Window) - now)
		if !l.open {
			st.reset = q.Window // the next request starts a whole window
		}
		if st.remaining == 0 {
			st.retry = st.reset
		}
	case SlidingWindow:
		used := len(l.log) - l.head
		st.remaining = max(q.Limit-used, 0)
		if used > 0 {
			st.reset = time.Duration(l.log[l.head] + int64(q.Window) - now)
		}
		if st.remaining == 0 {
			if used >= q.Limit && q.Limit > 0 {
				// The slot that frees first is the one used Limit admissions ago.
				st.retry = time.Duration(l.log[len(l.log)-q.Limit] + int64(q.Window) - now)
			} else {
				st.retry = q.Window
			}
		}
	case Concurrency:
		st.remaining = max(q.Limit-l.inflight, 0)
	case TokenBucket:
		st.limit = q.capacity()
		st.remaining = max(int(math.Floor(l.tokens)), 0)
		if q.Limit > 0 {
			perToken := float64(q.Window) / float64(q.Limit)
			st.reset = time.Duration(math.Ceil((float64(st.limit) - l.tokens) * perToken))
			if st.remaining == 0 {
				st.retry = time.Duration(math.Ceil((1 - l.tokens) * perToken))
			}
		} else if st.remaining == 0 {
			st.reset, st.retry = q.Window, q.Window
		}
	}
	st.reset = max(st.reset, 0)
	st.retry = max(st.retry, 0)
	return st
}

// idleLocked reports whether forgetting l changes nothing at now.
func (l *limiter) idleLocked(now int64) bool {
	l.advanceLocked(now)
	switch l.q.Policy {
	case SlidingWindow:
		return len(l.log) == l.head
	case TokenBucket:
		return l.tokens >= float64(l.q.capacity())
	case Concurrency:
		return l.inflight == 0
	}
	return l.count == 0
}

// limiters maps (account, api) to limiter state. mu guards m only; each
// limiter has its own mutex.
type limiters struct {
	mu  sync.Mutex
	m   map[ruleKey]*limiter
	max int
}

func (ls *limiters) init(max int) {
	ls.m = make(map[ruleKey]*limiter)
	ls.max = max
}

// get returns the limiter for k, creating it. When the table is full it
// first forgets idle limiters, then arbitrary ones (losing exactness only
// past MaxTenants active tenants).
func (ls *limiters) get(k ruleKey, now int64) *limiter {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l, ok := ls.m[k]; ok {
		return l
	}
	if len(ls.m) >= ls.max {
		for key, l := range ls.m {
			l.mu.Lock()
			idle := l.idleLocked(now)
			l.mu.Unlock()
			if idle {
				delete(ls.m, key)
			}
		}
		for key := range ls.m {
			if len(ls.m) < ls.max {
				break
			}
			delete(ls.m, key)
		}
	}
	l := &limiter{fresh: true}
	ls.m[k] = l
	return l
}

func (ls *limiters) reset() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	clear(ls.m)
}

// admission is the outcome of admitting one request.
type admission struct {
	ok               bool
	api, total       limitStatus
	hasAPI, hasTotal bool
	held             []*limiter // Concurrency quotas to release when the answer begins

	unseenAdmitted, unseenRefused int64 // the unseen consumer's requests decided first
}

// release ends the admission's hold on its Concurrency quotas; a second
// call does nothing.
func (a *admission) release() {
	for _, l := range a.held {
		l.mu.Lock()
		l.releaseLocked()
		l.mu.Unlock()
	}
	a.held = nil
}

// binding returns the status that decided: on a throttle the quota that
// refused (the longer wait if both did), otherwise the one with fewer
// remaining. ok is false when no quota applies.
func (a admission) binding() (limitStatus, bool) {
	switch {
	case a.hasAPI && a.hasTotal:
		if !a.ok {
			if a.total.retry > a.api.retry {
				return a.total, true
			}
			return a.api, true
		}
		if a.total.remaining < a.api.remaining {
			return a.total, true
		}
		return a.api, true
	case a.hasAPI:
		return a.api, true
	case a.hasTotal:
		return a.total, true
	}
	return limitStatus{}, false
}

// admit decides whether account may call action at now, atomically across
// its API quota and its account total.
func (c *Cloud) admit(account, action string, now time.Time) admission {
	rs := *c.rules.Load()
	apiQ, hasAPI := rs.lookup(account, action)
	totQ, hasTot := rs.lookup(account, "")
	a := admission{ok: true, hasAPI: hasAPI, hasTotal: hasTot}
	if !hasAPI && !hasTot {
		return a
	}
	ns := now.UnixNano()
	var la, lt *limiter
	// Lock order: API limiter, then total limiter.
	if hasAPI {
		la = c.lims.get(ruleKey{account, action}, ns)
		la.mu.Lock()
		defer la.mu.Unlock()
		la.syncLocked(apiQ, ns)
		n, m := la.spendUnseenLocked(ns)
		a.unseenAdmitted, a.unseenRefused = a.unseenAdmitted+n, a.unseenRefused+m
		a.ok = la.canAdmitLocked()
	}
	if hasTot {
		lt = c.lims.get(ruleKey{account, ""}, ns)
		lt.mu.Lock()
		defer lt.mu.Unlock()
		lt.syncLocked(totQ, ns)
		n, m := lt.spendUnseenLocked(ns)
		a.unseenAdmitted, a.unseenRefused = a.unseenAdmitted+n, a.unseenRefused+m
		a.ok = a.ok && lt.canAdmitLocked()
	}
	if a.ok {
		for _, l := range []*limiter{la, lt} {
			if l == nil {
				continue
			}
			l.admitLocked(ns)
			if l.q.Policy == Concurrency {
				a.held = append(a.held, l)
			}
		}
	}
	if la != nil {
		a.api = la.statusLocked(ns)
	}
	if lt != nil {
		a.total = lt.statusLocked(ns)
	}
	return a
}
