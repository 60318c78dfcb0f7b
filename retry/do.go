package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tollgate-go/tollgate/internal/call"
	"github.com/tollgate-go/tollgate/quota"
)

// Do calls op until it returns nil, fails permanently (see Classify and
// Permanent), or the policy, its elapsed limit, the context or the tenant's
// retry budget runs out; a nil p is the zero Policy. It returns nil on
// success and a *GiveUpError otherwise.
//
// An attempt that transport.Transport refused to send, because its wait for
// quota would pass its deadline (ClassRefused), is retried only if ctx
// leaves time for that wait, which happens when op sets itself a shorter
// deadline than ctx (or http.Client.Timeout does); the wait before the
// retry is at least the one the Transport needed. Otherwise Do gives up at
// once, without sleeping, with ErrRefused and that wait as GiveUpError.Wait:
// give the call a longer deadline, or call again no sooner than that wait.
//
// op must make a new request on each call, for example by calling the SDK
// operation again, so that each attempt is signed afresh. Never retry a
// signed API call by resending the same *http.Request: the server refuses a
// reused signature nonce.
//
// The tenant is quota.KeyFrom(ctx), or else the one transport.Transport
// names for the call's first request (the SDK builds the request, so the
// caller need not name its tenant); a call that reaches no Transport
// shares one budget account with the others. Do deposits one call in its
// tenant's budget (once its first attempt has named the tenant) and
// withdraws one retry before each wait. The Policy's OnRetry, Observer and
// Logger hear of each retry; the Observer and Logger also of the give-up. A cancelled context ends a
// wait at once; Do makes no attempt once ctx is done. Do is safe for
// concurrent use with the same Policy.
func Do(ctx context.Context, p *Policy, op func(context.Context) error) error {
	_, err := DoValue(ctx, p, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, op(ctx)
	})
	return err
}

// DoValue is Do for an operation that returns a value, such as an SDK call
// returning its response. It returns the value of the last attempt made,
// which is the successful one when the error is nil.
func DoValue[T any](ctx context.Context, p *Policy, op func(context.Context) (T, error)) (T, error) {
	a := &attempt{p: p, ctx: ctx, start: time.Now(), budget: p.budget()}
	// The call's record: when it began, so that its retries keep its
	// place in the tenant's line (a call within another began with it),
	// and where the Transport names the tenant if ctx does not.
	first := a.start
	if f := call.First(ctx); !f.IsZero() && f.Before(first) {
		first = f
	}
	a.rec = call.New(first)
	opCtx := call.With(ctx, a.rec)
	var keyed bool
	if a.key, keyed = quota.KeyFrom(ctx); keyed {
		a.deposit()
	}
	var notify backoff.Notify
	switch {
	case p.observing():
		notify = func(err error, wait time.Duration) {
			if p.OnRetry != nil {
				p.OnRetry(a.n, err, wait)
			}
			p.retried(RetryEvent{Key: a.key, Attempt: a.n, Wait: wait, Class: a.out.Class, Err: a.last})
		}
	case p != nil && p.OnRetry != nil:
		notify = func(err error, wait time.Duration) { p.OnRetry(a.n, err, wait) }
	}
	v, err := backoff.RetryNotifyWithTimerAndData(func() (T, error) {
		var zero T
		if err := ctx.Err(); err != nil {
			a.reason = err
			return zero, backoff.Permanent(err)
		}
		a.n++
		a.rec.Attempt()
		v, err := op(opCtx)
		if a.n == 1 && !keyed {
			a.key, _ = a.rec.Key()
			a.deposit()
		}
		if err == nil {
			return v, nil
		}
		a.last = unwrapPermanent(err)
		now := time.Now()
		a.out = p.Classify(nil, err, now)
		if a.probed = a.out.Class == ClassThrottle && a.rec.Probe(); a.probed {
			a.probes++
		}
		if a.out.Class == ClassRefused && !a.fits(now, a.out.Hint) {
			a.reason, a.wait = ErrRefused, a.out.Hint
			return v, backoff.Permanent(a.last)
		}
		if !a.out.Class.Retryable() {
			a.reason = ErrPermanent
			if cerr := ctx.Err(); cerr != nil {
				a.reason = cerr
			}
			return v, backoff.Permanent(a.last)
		}
		return v, err
	}, backoff.WithContext(a, ctx), notify, nil)
	if err == nil {
		return v, nil
	}
	reason := a.reason
	if reason == nil {
		reason = ctx.Err() // the context ended a wait
	}
	if reason == nil {
		reason = ErrAttemptsExhausted // not reached: every Stop sets a.reason
	}
	gerr := &GiveUpError{
		Attempts: a.n,
		Elapsed:  time.Since(a.start),
		Wait:     a.wait,
		Last:     a.last,
		Reason:   reason,
	}
	if p.observing() {
		class := a.out.Class
		if a.n == 0 {
			class = ClassSuccess
		}
		p.gaveUp(GiveUpEvent{Key: a.key, Attempts: gerr.Attempts, Elapsed: gerr.Elapsed,
			Wait: gerr.Wait, Class: class, Reason: reason, Err: gerr.Last})
	}
	return v, gerr
}

// attempt is the state of one Do call. It is the backoff.BackOff that
// backoff/v4's retry loop asks for each wait; the loop, the timer and the
// context handling are backoff/v4's.
type attempt struct {
	p      *Policy
	ctx    context.Context
	key    quota.Key    // the tenant, once known
	rec    *call.Record // the call's record: its start, and the tenant the Transport names
	budget *Budget
	start  time.Time

	n      int     // attempts made
	probes int     // of them, throttled probes, which are not counted (see NextBackOff)
	probed bool    // the last attempt was one
	last   error   // the last attempt's error
	out    Outcome // the last attempt's outcome
	reason error   // why Do gave up, once it has
	wait   time.Duration
}

// NextBackOff returns the wait before the next attempt, or backoff.Stop
// with a.reason set.
//
// A throttled attempt that tollgate's limiter admitted as its tenant's
// probe (call.Probed: a request sent where the limiter expected the
// server might throttle it, to find when the quota refills) is the
// limiter's test, not the call's failure: it is not counted among the
// call's MaxAttempts. It is backed off as any other, so that callers that
// back off still thin out a search for the refill, and its retry spends
// the budget, so that a server that throttles everything still ends a
// storm. MaxElapsed and the context bound the call. Without this, the few
// callers of a tenant whose window is long take every probe of the cold
// start's search between them, and give up.
func (a *attempt) NextBackOff() time.Duration {
	if !a.probed && a.n-a.probes >= a.p.maxAttempts() {
		a.reason = ErrAttemptsExhausted
		return backoff.Stop
	}
	wait := a.p.Delay(a.out, a.n)
	now := time.Now()
	if lim := a.p.maxElapsed(); lim > 0 && now.Add(wait).Sub(a.start) > lim {
		a.reason, a.wait = ErrElapsedExhausted, wait
		return backoff.Stop
	}
	if dl, ok := a.ctx.Deadline(); ok && !now.Add(wait).Before(dl) {
		a.reason, a.wait = context.DeadlineExceeded, wait
		return backoff.Stop
	}
	if a.budget != nil && !a.budget.Withdraw(a.key, now) {
		a.reason = ErrBudgetExhausted
		return backoff.Stop
	}
	return wait
}

// deposit counts the call in its tenant's retry budget.
func (a *attempt) deposit() {
	if a.budget != nil {
		a.budget.Deposit(a.key, a.start)
	}
}

// fits reports whether a wait of d from now ends before the context's
// deadline. A wait of 0 or less does not fit: a refusal that needs none
// would only come back at once.
func (a *attempt) fits(now time.Time, d time.Duration) bool {
	dl, ok := a.ctx.Deadline()
	return d > 0 && (!ok || now.Add(d).Before(dl))
}

// Reset does nothing: an attempt is used for one Do call only.
func (a *attempt) Reset() {}
