// Package call carries what the layers below a call learn about it back up
// to the layer that retries it. retry.Do makes one Record per call (all of
// its attempts at one operation) and puts it in the context it hands each
// attempt; transport.Transport, which names a request's tenant from the
// request the SDK builds, writes the tenant into it. So retry.Do spends a
// tenant's retry budget without the caller naming the tenant: the SDK call
// that retry.Do wraps never shows it the request.
package call

import (
	"context"
	"sync"

	"github.com/tollgate-go/tollgate/quota"
)

// Record is what one call learned from below. It is safe for concurrent
// use: a call's attempts may run on other goroutines than the retrier's.
type Record struct {
	mu  sync.Mutex // guards key and set
	key quota.Key
	set bool
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
