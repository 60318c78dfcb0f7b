package adaptive

import (
	"sync"
	"sync/atomic"
)

// places counts the requests sent and not yet answered, and keeps them
// under the learned cap on requests in flight (see flight) when one is in
// force: callers that find it reached wait in line, and each answer hands
// its place to the first of them. With no cap it costs one atomic add per
// request.
//
// The line is kept so that no wake is lost: a waiter counts itself
// (waiting) before it looks at the count, and a place given back looks at
// waiting after it lowers the count; one of the two sees the other.
type places struct {
	out     atomic.Int64 // requests sent and not yet answered, places handed included
	cap     atomic.Int64 // the cap on out; 0 for none
	waiting atomic.Int64 // callers in line, or about to be

	mu   sync.Mutex
	line []*waiter // the callers waiting, first come first
}

// waiter is a caller in line for a place.
type waiter struct {
	handed chan struct{} // closed when a place is handed to the caller
	level  int64         // the level of the place handed
}

// take takes a place (only checks there is one, without place), unless the
// cap is reached or others wait for one. It returns the request's level, how
// many are in flight with it, or 0.
func (p *places) take(place bool) int64 {
	if p.cap.Load() == 0 {
		if !place {
			return 1
		}
		return p.out.Add(1)
	}
	for {
		n := p.out.Load()
		if c := p.cap.Load(); c > 0 && (n >= c || p.waiting.Load() > 0) {
			return 0
		}
		if !place || p.out.CompareAndSwap(n, n+1) {
			return n + 1
		}
	}
}

// wait takes a place, returning its level, or joins the line for one,
// returning the caller's place in line: when its handed is closed, a place
// at its level is the caller's. A caller that stops waiting first calls
// leave.
func (p *places) wait() (level int64, w *waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting.Add(1)
	n := p.out.Load()
	if c := p.cap.Load(); c == 0 || n < c && len(p.line) == 0 {
		p.waiting.Add(-1)
		return p.out.Add(1), nil
	}
	w = &waiter{handed: make(chan struct{})}
	p.line = append(p.line, w)
	return 0, w
}

// leave takes w out of the line. It returns the level of the place handed
// to it meanwhile, which the caller must give back, or 0.
func (p *places) leave(w *waiter) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.line {
		if x == w {
			p.line = append(p.line[:i], p.line[i+1:]...)
			p.waiting.Add(-1)
			return 0
		}
	}
	return w.level // handed: no longer in line
}

// drop gives back the place of a request sent at level (0: none taken),
// answered or never sent, to the first in line if the cap allows.
func (p *places) drop(level int64) {
	if level == 0 {
		return
	}
	p.out.Add(-1)
	if p.waiting.Load() > 0 {
		p.hand()
	}
}

// setCap puts the cap c in force (0: none) and hands out the places it
// frees.
func (p *places) setCap(c int64) {
	p.cap.Store(c)
	if p.waiting.Load() > 0 {
		p.hand()
	}
}

// hand hands places to those in line, first come first, while the cap
// allows.
func (p *places) hand() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.line) > 0 {
		if c := p.cap.Load(); c > 0 && p.out.Load() >= c {
			return
		}
		w := p.line[0]
		w.level = p.out.Add(1)
		close(w.handed)
		p.line[0] = nil
		p.line = p.line[1:]
		p.waiting.Add(-1)
	}
}
