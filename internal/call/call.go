// Package call carries what one call (all of its attempts at one
// operation) is, between the layer that retries it and the layers below.
// retry.Do makes one Record per call and puts it in the context it hands
// each attempt.
//
// Down, the Record says when the call's first attempt began and which
// attempt is under way, so that adaptive.Limiter.Wait puts a retry in its
// tenant's line where the first attempt arrived. Up,
// transport.Transport, which names a request's tenant from the request
// the SDK builds, writes the tenant into it. So retry.Do spends a tenant's
// retry budget without the caller naming the tenant: the SDK call that
// retry.Do wraps never shows it the request.
package call

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Record is what one call learned from below, and when it began. It is
// safe for concurrent use: a call's attempts may run on other goroutines
// than the retrier's.
type Record struct {
	first   time.Time    // when the call's first attempt began
	attempt atomic.Int32 // the attempt under way, from 1 (see Attempt)
	probe   atomic.Bool  // the attempt under way went as its tenant's probe (see Probed)
	mu      sync.Mutex   // guards key and set
	key     quota.Key
	set     bool
}

// New returns the Record of a call whose first attempt began at first.
func New(first time.Time) *Record { return &Record{first: first} }

// First returns when the first attempt of the call whose context is ctx
// began, or the zero time if ctx carries no Record: a retry takes its
// place in its tenant's line as of then (see adaptive.Limiter.Wait).
func First(ctx context.Context) time.Time {
	if r := From(ctx); r != nil {
		return r.first
	}
	return time.Time{}
}

// Attempt records that the call's next attempt begins: retry.Do calls
// it before each. A nil Record ignores it.
func (r *Record) Attempt() {
	if r != nil {
		r.attempt.Add(1)
		r.probe.Store(false)
	}
}

// Probed records that the attempt under way of the call whose context is
// ctx was admitted as its tenant limiter's probe: a request the limiter
// chose to send where it expected the server might throttle it, to learn
// when the quota refills (see adaptive.Ticket.Probe). A context without a
// Record ignores it.
func Probed(ctx context.Context) {
	if r := From(ctx); r != nil {
		r.probe.Store(true)
	}
}

// Probe reports whether the attempt under way went as its tenant's probe
// (see Probed). retry.Do does not count a throttled probe among the
// call's attempts: it is the limiter's test, not the call's failure.
func (r *Record) Probe() bool { return r != nil && r.probe.Load() }

// Attempts returns the number of the attempt under way of the call whose
// context is ctx: 1 on its first, 2 on its first retry, and 0 if ctx
// carries no Record. A retry keeps its place in its tenant's line, and a
// probe goes to the caller in line with the fewest attempts, so that no
// call takes every failed probe (see adaptive.Limiter.Wait).
func Attempts(ctx context.Context) int {
	if r := From(ctx); r != nil {
		return int(r.attempt.Load())
	}
	return 0
}

type recordCtx struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r *Record) context.Context {
	return context.WithValue(ctx, recordCtx{}, r)
}

// From returns the Record ctx carries, or nil.
func From(ctx context.Context) *Record {
	r, _ := ctx.Value(recordCtx{}).(*Record)
	return r
}

// SetKey records k as the tenant of the call whose context is ctx, if it
// carries a Record and none was recorded yet: a call's first request
// names its tenant.
func SetKey(ctx context.Context, k quota.Key) {
	r := From(ctx)
	if r == nil {
		return
	}
	r.mu.Lock()
	if !r.set {
		r.key, r.set = k, true
	}
	r.mu.Unlock()
}

// Key returns the tenant recorded, if any. A nil Record has none.
func (r *Record) Key() (quota.Key, bool) {
	if r == nil {
		return quota.Key{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.key, r.set
}
