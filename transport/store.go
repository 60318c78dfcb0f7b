package transport

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/quotastore"
)

// defaultStoreRetry is how long a Transport whose Store failed goes on
// without it before one request tries it again.
const defaultStoreRetry = time.Second

// reasonShared is the WaitError reason of a request the shared pacer would
// have held past its deadline.
const reasonShared = "shared rate"

// storeHealth is whether a Transport's Store answers, for all tenants: one
// backend serves them all. While it does not, one request per retry
// period tries it; the others go on without it.
type storeHealth struct {
	down    atomic.Bool
	retryAt atomic.Int64 // Unix ns: while down, the first request after it tries the store
	peers   atomic.Int64 // the most processes seen on a tenant
}

// usable reports whether a request at now may use the store: it answers,
// or this request is the one that tries it again.
func (h *storeHealth) usable(now int64, retry time.Duration) bool {
	if !h.down.Load() {
		return true
	}
	r := h.retryAt.Load()
	return now >= r && h.retryAt.CompareAndSwap(r, now+int64(retry))
}

// failed records a failed call at now. It reports whether the store was up
// until then.
func (h *storeHealth) failed(now int64, retry time.Duration) bool {
	h.retryAt.Store(now + int64(retry))
	return !h.down.Swap(true)
}

// answered records a call answered, seeing peers processes. It reports
// whether the store was down until then.
func (h *storeHealth) answered(peers int) bool {
	for p := int64(peers); ; {
		old := h.peers.Load()
		if p <= old || h.peers.CompareAndSwap(old, p) {
			break
		}
	}
	return h.down.Load() && h.down.CompareAndSwap(true, false)
}

// fallbackShare is the share of a tenant's quota a process spends on its
// own while its Store does not answer, whether its pace is said or
// learned (a follower starts from the leader's estimate, which is the
// whole quota's): Config.StoreShare, or 1/N with N the most processes the
// store saw on a tenant, at least 2.
func (t *Transport) fallbackShare() float64 {
	if s := t.cfg.StoreShare; s > 0 && s <= 1 {
		return s
	}
	return 1 / float64(max(t.health.peers.Load(), 2))
}

// maxRequeue is how many times a request the tenant's limiter held past
// its shared turn queues again in the shared pacer (see admit) before it
// goes late all the same.
const maxRequeue = 3

// lateSlack is how late past its shared turn a request may go, however
// fast the pace: a request held less is not worth a turn and a round trip
// to the store.
const lateSlack = time.Millisecond

// turn is a request's admission: its ticket from the tenant's limiter,
// and the reservation it took from the Store, if any.
type turn struct {
	ticket adaptive.Ticket
	res    quotastore.Reservation
	shared bool      // res is taken: it is given back if the request is not sent
	waited bool      // the caller waited for its turn in the Store (see Result)
	follow bool      // a follower's turn on a tenant the fleet learns: its answer goes to the leader
	sent   time.Time // when the request was sent
}

// how says how a request is admitted after the Store was asked.
type how int

const (
	turnLocal  how = iota // by the tenant's limiter alone
	turnShared            // held to a turn in the shared pacer, then by the limiter, which does not pace it again
	turnFollow            // held to a turn at the leader's pace, and by nothing else
)

// admit waits for the request's turn: in the Store's shared pacer (see
// reserve), then at the tenant's limiter, which keeps its pause gate, its
// window and its caps on requests in flight but does not pace the request
// again. A request the limiter held past its shared turn (a pause, a
// probe's answer) by more than an interval of the pace (and lateSlack)
// lost that turn: sent late it would crowd the next one (all those held
// would go together), so it gives its ticket back and queues again. A
// follower's turn on a tenant the fleet learns (see reserveLearned) is
// not asked of the limiter at all: the leader's limiter learns for it.
func (t *Transport) admit(ctx context.Context, k quota.Key, lim *adaptive.Limiter) (turn, error) {
	if t.cfg.Store == nil {
		ticket, err := lim.Wait(ctx)
		return turn{ticket: ticket}, err
	}
	for i := 0; ; i++ {
		res, h, err := t.reserve(ctx, k, lim)
		switch {
		case err != nil:
			return turn{}, err
		case h == turnLocal:
			ticket, err := lim.Wait(ctx)
			return turn{ticket: ticket}, err
		case h == turnFollow:
			return turn{res: res, shared: res.OK, follow: true, waited: res.Wait > 0}, nil
		}
		at := time.Now()
		ticket, err := lim.Fleet().WaitPaced(ctx)
		if err != nil {
			t.cancel(k, res)
			return turn{}, err
		}
		if i < maxRequeue && time.Since(at) > max(res.Interval, lateSlack) {
			ticket.Cancel() // held past its turn, which is gone
			continue
		}
		return turn{ticket: ticket, res: res, shared: true, waited: res.Wait > 0}, nil
	}
}

// reserve reserves the request's admission from the Store, and sleeps
// until it is due: at the tenant's pace if it is said (see quotastore.Store), or as
// the fleet learns it (see reserveLearned). It says how the request is
// then admitted. A Store that fails costs the request nothing but the
// call: the tenant goes on alone at the fallback share, and the Observer
// hears of it once. An error is the caller's: its
// context ended, or its deadline is too near.
func (t *Transport) reserve(ctx context.Context, k quota.Key, lim *adaptive.Limiter) (quotastore.Reservation, how, error) {
	now := time.Now()
	retry := t.storeRetry()
	if !t.health.usable(now.UnixNano(), retry) {
		lim.Fleet().SetShare(t.fallbackShare())
		return quotastore.Reservation{}, turnLocal, nil
	}
	lim.Fleet().SetShare(1)
	p := lim.Fleet().Pace()
	if !p.Said() {
		return t.reserveLearned(ctx, k, lim)
	}
	maxWait := maxWaitOf(ctx, now)
	r, err := t.cfg.Store.Reserve(ctx, k, p, maxWait)
	if err != nil {
		if ctx.Err() != nil {
			return quotastore.Reservation{}, turnLocal, ctx.Err()
		}
		t.storeFailed(err)
		lim.Fleet().SetShare(t.fallbackShare())
		return quotastore.Reservation{}, turnLocal, nil
	}
	t.storeAnswered(r.Peers)
	if err := t.await(ctx, k, r, maxWait); err != nil {
		return quotastore.Reservation{}, turnLocal, err
	}
	return r, turnShared, nil
}

// maxWaitOf is how long a caller whose context is ctx may wait from now.
func maxWaitOf(ctx context.Context, now time.Time) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline.Sub(now)
	}
	return time.Duration(1<<63 - 1)
}

// await sleeps until reservation r of tenant k is due. It fails, with r
// given back, if r was not taken (not due within maxWait) or the context
// ends first.
func (t *Transport) await(ctx context.Context, k quota.Key, r quotastore.Reservation, maxWait time.Duration) error {
	if !r.OK {
		return &adaptive.WaitError{Wait: r.Wait, Left: maxWait, Reason: reasonShared}
	}
	if r.Wait <= 0 {
		return nil
	}
	if err := sleepCtx(ctx, r.Wait); err != nil {
		t.cancel(k, r)
		return err
	}
	return nil
}

// cancel gives back reservation r of a request that will not be sent.
func (t *Transport) cancel(k quota.Key, r quotastore.Reservation) {
	if err := t.cfg.Store.Cancel(context.Background(), k, r); err != nil {
		t.storeFailed(err)
	}
}

// sharePause tells the other processes of a pause the answer to a shared
// request began: the tenant's limiter is paused past before, until u.
func (t *Transport) sharePause(k quota.Key, lim *adaptive.Limiter, before time.Time) {
	u := lim.Fleet().Paused()
	if !u.After(before) || !u.After(time.Now()) {
		return
	}
	if err := t.cfg.Store.Pause(context.Background(), k, u); err != nil {
		t.storeFailed(err)
	}
}

// publish tells the Store what the tenant's learner settled on, if the
// answer just told changed it from was (see quotastore.Store.Publish).
func (t *Transport) publish(k quota.Key, lim *adaptive.Limiter, was adaptive.Estimate) {
	e, ok := lim.Fleet().Learned()
	if !ok || e.Limit == was.Limit && e.Window == was.Window || t.StoreDown() {
		return
	}
	if err := t.cfg.Store.Publish(context.Background(), k, e); err != nil {
		t.storeFailed(err)
	}
}

func (t *Transport) storeRetry() time.Duration {
	if t.cfg.StoreRetry > 0 {
		return t.cfg.StoreRetry
	}
	return defaultStoreRetry
}

// storeFailed records a failed call to the Store, and tells the Observer
// if the store was up until then.
func (t *Transport) storeFailed(err error) {
	if t.health.failed(time.Now().UnixNano(), t.storeRetry()) {
		if so, ok := t.observer.(StoreObserver); ok {
			so.Store(StoreEvent{Up: false, Err: err, Share: t.fallbackShare()})
		}
	}
}

// storeAnswered records an answer of the Store, and tells the Observer if
// the store was down until then.
func (t *Transport) storeAnswered(peers int) {
	if t.health.answered(peers) {
		if so, ok := t.observer.(StoreObserver); ok {
			so.Store(StoreEvent{Up: true, Share: 1})
		}
	}
}

// StoreDown reports whether the Transport's Store (Config.Store) failed
// its last call: its tenants are paced each on its own, at the fallback
// share (see Config.StoreShare), until a call succeeds again.
func (t *Transport) StoreDown() bool { return t.health.down.Load() }
