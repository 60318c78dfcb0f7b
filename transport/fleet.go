package transport

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/quotastore"
)

// A tenant whose pace no process is told (no rule, no limit in the
// server's headers) is learned by the processes as one: one of them, the
// tenant's leader, learns for all, and the others follow it.
//
//   - The leader is the process that reserved the tenant's turns lately
//     first (a lease each of its calls renews). Its Limiter paces its own
//     requests, and, once its learner has settled, the pace it learned is
//     the fleet's: every process takes its turns at it in the shared
//     pacer (quotastore.LearnedTurn.Pace).
//   - While the leader's learner learns alone (slow start, measuring a
//     window, testing a throttle, a pause and its probe:
//     adaptive.Fleet.Holding), the followers hold their requests, so
//     that the server counts the leader's alone, and one probe goes for
//     all.
//   - A follower sends at its turn and nothing else: its own Limiter is
//     not asked. Its answers go to the leader in its next call
//     (quotastore.LearnedTurn.Answers), and the leader's learner counts them as its
//     own (adaptive.Fleet.ObserveRelayed).
//
// So the fleet learns a quota as one client would, from every answer the
// server gives it. It costs a call to the store per request, and more
// where callers queue for turns further ahead than bookAhead, or wait out
// a hold (one caller per process asks every heldAsk).

// holdFor is how long, at least, a leader whose learner learns alone
// holds the followers: until its next call renews the hold, or a pause of
// its gate ends, and a while after it for the probe's answer.
const holdFor = 2 * time.Second

// bookAhead is how far ahead, at most, a tenant the fleet learns hands
// out its turns: a turn further ahead is not taken, and its caller asks
// again nearer the time. A turn taken is paced by what the leader knew
// when it was taken, so the further ahead turns go, the later the fleet
// heeds a change of pace or a hold (a turn taken before a hold began is
// void, and lost); the nearer, the more calls to the store.
const bookAhead = 250 * time.Millisecond

// heldAsk is how long the callers of a process held by the leader wait
// for the one of them that asks whether the hold goes on, at most.
const heldAsk = 25 * time.Millisecond

// maxRelayed bounds the answers a process keeps for one tenant's leader
// between two calls; older ones are dropped.
const maxRelayed = 256

// fleetTenants is what a process keeps of the tenants the fleet learns:
// per tenant, the answers it got as a follower until its next call to the
// Store carries them to the leader, how far ahead the shared pacer hands
// out its turns (the wait of its latest one), and until when the leader
// holds the followers, as its latest call heard.
type fleetTenants struct {
	mu sync.Mutex
	m  map[quota.Key]*fleetTenant
}

type fleetTenant struct {
	answers []quotastore.Relayed
	ahead   time.Duration
	held    time.Time // the leader holds the followers until then, as heard; zero if not
	asking  time.Time // a caller asks the store whether the hold goes on, until then at most
	epoch   int64     // the latest hold's epoch heard
}

// maxFleetTenants bounds the tenants a process keeps: past it, what it
// kept is dropped (answers not yet relayed are lost, which the leader's
// learner bears as it bears any answer it does not see).
const maxFleetTenants = 10000

// get returns tenant k's entry; f.mu is held.
func (f *fleetTenants) get(k quota.Key) *fleetTenant {
	if f.m == nil || len(f.m) >= maxFleetTenants {
		f.m = map[quota.Key]*fleetTenant{}
	}
	ft := f.m[k]
	if ft == nil {
		ft = &fleetTenant{}
		f.m[k] = ft
	}
	return ft
}

// relay keeps a follower's answer o to a request sent at sent, for the
// leader of tenant k. A throttle goes at once, in a call that takes no
// turn: the store holds the followers until the leader has heard it, so
// that they do not spend a window it may have found spent.
func (t *Transport) relay(k quota.Key, lim *adaptive.Limiter, sent time.Time, o quota.Observation) {
	at := o.At
	if at.IsZero() {
		at = time.Now()
	}
	a := quotastore.Relayed{Sent: sent, Answered: at, Throttled: o.Throttled, Transient: o.Transient}
	if o.Throttled {
		_, _ = t.callLearned(context.Background(), k, lim, -1, []quotastore.Relayed{a})
		return
	}
	f := &t.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.get(k)
	if len(ft.answers) >= maxRelayed {
		ft.answers = ft.answers[1:]
	}
	ft.answers = append(ft.answers, a)
}

// turnArgs takes what tenant k's next call to the Store carries: the
// answers to relay, and how far ahead its turns are handed out.
func (f *fleetTenants) turnArgs(k quota.Key) (answers []quotastore.Relayed, ahead time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.get(k)
	answers, ft.answers = ft.answers, nil
	return answers, ft.ahead
}

// heard records what a call to the Store said of tenant k: the wait of a
// turn taken, or a hold of the followers until held.
func (f *fleetTenants) heard(k quota.Key, r quotastore.LearnedReservation, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.get(k)
	ft.epoch = max(ft.epoch, r.Epoch)
	ft.held, ft.asking = time.Time{}, time.Time{}
	switch {
	case r.Held:
		ft.held = now.Add(r.Wait)
	case r.OK:
		ft.ahead = max(r.Wait, 0)
	}
}

// wait returns how long a caller on tenant k waits before it calls the
// store: while the leader holds the followers, one caller of the process
// asks again when the hold it heard of ends, and the others wait for what
// it hears (at most heldAsk).
func (f *fleetTenants) wait(k quota.Key, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.m[k]
	switch {
	case ft == nil || ft.held.IsZero():
		return 0
	case now.Before(ft.held):
		return ft.held.Sub(now)
	case now.Before(ft.asking):
		return ft.asking.Sub(now)
	}
	ft.asking = now.Add(heldAsk)
	return 0
}

// void reports whether a follower's turn r on tenant k may not be used:
// the leader holds the followers, or began to hold them since r was
// handed out, as this process's calls heard.
func (f *fleetTenants) void(k quota.Key, r quotastore.LearnedReservation, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.m[k]
	return ft != nil && (now.Before(ft.held) || ft.epoch > r.Epoch)
}

// reserveLearned reserves a turn on a tenant whose pace no process is
// told, which the processes learn as one (see above), and sleeps until it
// is due. The turn's Wait is how long the caller waited for it in all.
func (t *Transport) reserveLearned(ctx context.Context, k quota.Key, lim *adaptive.Limiter) (quotastore.Reservation, how, error) {
	start := time.Now()
	waited := func(r quotastore.Reservation) quotastore.Reservation {
		r.Wait = max(r.Wait, time.Since(start))
		return r
	}
	for {
		now := time.Now()
		maxWait := maxWaitOf(ctx, now)
		if d := t.fleet.wait(k, now); d > 0 {
			// Held: another caller of this process asks the store, and
			// this one waits for what it hears.
			if d >= maxWait {
				return quotastore.Reservation{}, turnLocal, &adaptive.WaitError{Wait: d, Left: maxWait, Reason: reasonShared}
			}
			if err := sleepCtx(ctx, d); err != nil {
				return quotastore.Reservation{}, turnLocal, err
			}
			continue
		}
		r, err := t.callLearned(ctx, k, lim, maxWait, nil)
		if err != nil {
			if ctx.Err() != nil {
				return quotastore.Reservation{}, turnLocal, ctx.Err()
			}
			lim.Fleet().SetShare(t.fallbackShare())
			return quotastore.Reservation{}, turnLocal, nil
		}
		if !r.OK && !r.NoPace && !r.Held && r.Wait < maxWait {
			// Due beyond bookAhead: ask again nearer the time.
			if err := sleepCtx(ctx, max(r.Wait-bookAhead/2, time.Millisecond)); err != nil {
				return quotastore.Reservation{}, turnLocal, err
			}
			continue
		}
		if r.Said {
			if err := t.await(ctx, k, r.Reservation, maxWait); err != nil {
				return quotastore.Reservation{}, turnLocal, err
			}
			return waited(r.Reservation), turnShared, nil
		}
		if r.Leader {
			if r.NoPace {
				return quotastore.Reservation{}, turnLocal, nil
			}
			if r.Wait > 0 {
				lim.Fleet().MarkDemand(now)
			}
			if err := t.await(ctx, k, r.Reservation, maxWait); err != nil {
				return quotastore.Reservation{}, turnLocal, err
			}
			return waited(r.Reservation), turnShared, nil
		}
		if r.Held {
			if r.Wait >= maxWait {
				return quotastore.Reservation{}, turnLocal, &adaptive.WaitError{Wait: r.Wait, Left: maxWait, Reason: reasonShared}
			}
			if err := sleepCtx(ctx, max(r.Wait, time.Millisecond)); err != nil {
				return quotastore.Reservation{}, turnLocal, err
			}
			continue
		}
		if r.NoPace {
			// The leader has no pace and holds no one (it cannot spend
			// the quota alone, or it went away): this process goes on
			// by its own limiter, started from the estimate kept.
			return quotastore.Reservation{}, turnLocal, nil
		}
		if err := t.await(ctx, k, r.Reservation, maxWait); err != nil {
			return quotastore.Reservation{}, turnLocal, err
		}
		if t.fleet.void(k, r, time.Now()) {
			// The leader began to hold the followers since this turn
			// was handed out, and paced it by what it knew then: it is
			// not used, and not given back either (a later one was
			// taken).
			continue
		}
		return waited(r.Reservation), turnFollow, nil
	}
}

// callLearned makes one call to the Store for tenant k (see
// quotastore.Store.ReserveLearned), carrying the answers this process relays, more if
// any; a negative maxWait takes no turn. The leader's Limiter takes the
// followers' answers; a Limiter that knows nothing yet starts from the
// estimate the store keeps. A failed call is the Store's (the Observer
// hears of it), and leaves the tenant to the limiter alone.
func (t *Transport) callLearned(ctx context.Context, k quota.Key, lim *adaptive.Limiter, maxWait time.Duration, more []quotastore.Relayed) (quotastore.LearnedReservation, error) {
	now := time.Now()
	answers, ahead := t.fleet.turnArgs(k)
	lt := quotastore.LearnedTurn{
		Pace:      lim.Fleet().LearnedPace(ahead),
		MaxWait:   maxWait,
		BookAhead: bookAhead,
		Answers:   append(answers, more...),
		Fresh:     lim.Fleet().Fresh(),
		NotBefore: lim.Fleet().Booked(),
	}
	if lim.Fleet().Holding() {
		lt.Hold = max(holdFor, time.Until(lim.Fleet().Paused())+holdFor/2)
	}
	r, err := t.cfg.Store.ReserveLearned(ctx, k, lt)
	if err != nil {
		if ctx.Err() == nil {
			t.storeFailed(err)
		}
		return r, err
	}
	t.storeAnswered(r.Peers)
	t.fleet.heard(k, r, now)
	if r.Learned.Valid() && lim.Fleet().Fresh() {
		lim.Fleet().Seed(r.Learned)
	}
	if r.Leader {
		for _, a := range r.Answers {
			lim.Fleet().ObserveRelayed(quota.Observation{At: a.Answered, Throttled: a.Throttled, Transient: a.Transient}, a.Sent)
		}
	}
	return r, nil
}

// sleepCtx sleeps for d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
