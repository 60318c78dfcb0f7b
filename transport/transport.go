package transport

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/call"
	"github.com/tollgate-go/tollgate/quota"
)

// Transport is an http.RoundTripper that keeps each tenant inside its quota
// at the server. Before a request it waits on the tenant's limiter; after the
// answer it reads what the server said (rate-limit headers, retry hints,
// throttle codes) and updates that limiter.
//
// Transport keeps the http.RoundTripper contract: it never modifies the
// caller's request, never sends a request twice (a signed request cannot be
// resent), returns every answer exactly as received (status, headers and the
// whole body, throttles included) with a nil error, closes the request body
// when it refuses a request, and honours the request's context: a wait that
// could not end before the context's deadline fails at once, unsent, with a
// *adaptive.WaitError, which matches context.DeadlineExceeded and says how
// long the wait would have been. Retrying within the same deadline would
// be refused again: give the call a longer deadline, or send it again no
// sooner than that wait. retry.Do gives up on it at once with
// retry.ErrRefused unless its context has time for the wait.
//
// RoundTrip returns as soon as the next RoundTripper does. An error answer's
// code (Throttling.User, ServiceUnavailable) is in its body, which may be
// slow to come: the tenant's limiter learns from it as the caller reads the
// body, once the body ends (or its first 64 KiB, see quota.Parser.MaxBody)
// or is closed. Until then the request counts as in flight. Close every
// body, as net/http asks; an error body closed unread teaches only what
// its status and headers say.
//
// Never sending twice includes net/http's own resends: its Transport (the
// default next RoundTripper) sends a GET, HEAD, OPTIONS or TRACE again when
// the reused keep-alive connection it went on breaks before the answer,
// although the server may have taken it, and the server then sees the
// signature nonce twice. So a request that carries a signature nonce
// (SignatureNonce in the query, or an x-acs-signature-nonce header) and that
// net/http could resend is handed on as a shallow copy with an empty,
// non-nil Body and no GetBody, which net/http does not resend: the caller
// gets the broken connection's error, and retry.Do calls the SDK again,
// which signs anew. Such a request costs one allocation here and, in
// net/http, a goroutine that reads the empty body once; it is written as
// before, with no body and its connection kept alive (over HTTP/2 an empty
// DATA frame follows the headers). It gives up the resends net/http makes
// of requests the server did not take (over HTTP/1 after nothing was
// written, over HTTP/2 after a GOAWAY or REFUSED_STREAM): those errors reach
// the caller's retry instead. Requests without a nonce, and those net/http
// never resends (a POST, as the v1 SDK sends RPC calls), are handed on as
// they are. A bodiless POST, PUT, PATCH or TRACE with a nonce and an
// Idempotency-Key is handed on as it is too, and net/http may resend it.
//
// With Config.Breaker, each tenant also has a circuit breaker (package
// breaker): while the tenant's service fails, RoundTrip refuses at once,
// without sending, with an error matching ErrCircuitOpen, and one request
// at a time probes whether the service is back; the others wait for its
// answer.
//
// Retrying belongs above the signer: see package retry.
//
// A Transport is safe for concurrent use. The zero Transport is valid: it
// sends through http.DefaultTransport with the defaults of a zero Config.
type Transport struct {
	next http.RoundTripper
	cfg  Config

	once     sync.Once
	keyFn    KeyFunc
	alibaba  *AlibabaKeys // the default keyFn's, or nil
	tenants  *tenantCache // with alibaba
	limits   *adaptive.Registry
	parser   *quota.Parser
	observer Observer // nil: nothing observes
	full     bool     // an Observer, breakers or a Store: RoundTrip takes fullRoundTrip
	health   storeHealth
	fleet    fleetTenants // the tenants the fleet learns (see reserveLearned)
}

var _ http.RoundTripper = (*Transport)(nil)

// ErrCircuitOpen is matched (errors.Is) by the error RoundTrip returns when
// the tenant's circuit breaker (Config.Breaker) is open, or opened again
// when the probe the request waited for failed. The request was not sent. errors.As with
// *breaker.OpenError gives how long until a request may go again.
// retry.Do classifies it as transient, with that time as the least wait
// before the next attempt, and counts the retry against its budget.
var ErrCircuitOpen = breaker.ErrOpen

// newBreaker makes tenant k's circuit breaker, which tells the Observer
// (if it is a BreakerObserver) of its changes.
func (t *Transport) newBreaker(k quota.Key) *breaker.Breaker {
	var hook func(breaker.Change)
	if bo, ok := t.observer.(BreakerObserver); ok {
		hook = func(c breaker.Change) { bo.Breaker(BreakerEvent{Key: k, Change: c}) }
	}
	return breaker.New(*t.cfg.Breaker, hook)
}

// New returns a Transport that sends through next (http.DefaultTransport if
// next is nil) and is set up by cfg, whose zero fields mean the defaults
// documented on Config.
func New(next http.RoundTripper, cfg Config) *Transport {
	return &Transport{next: next, cfg: cfg}
}

func (t *Transport) init() {
	t.once.Do(func() {
		t.keyFn = t.cfg.Key
		if t.keyFn == nil {
			t.alibaba = &AlibabaKeys{Accounts: t.cfg.Accounts, Product: t.cfg.Product, Depth: t.cfg.Depth, Salt: t.cfg.Salt}
			t.keyFn = t.alibaba.Key
			t.tenants = newTenantCache()
		}
		t.parser = t.cfg.Parser
		if t.parser == nil {
			t.parser = new(quota.Parser)
		}
		var logs Observer
		if t.cfg.Logger != nil {
			logs = newLogObserver(t.cfg.Logger)
		}
		t.observer = joinObservers(t.cfg.Observer, logs)
		rc := adaptive.RegistryConfig{
			Rules:      t.cfg.Rules,
			Limiter:    t.cfg.Limiter,
			MaxTenants: t.cfg.MaxTenants,
			IdleTTL:    t.cfg.IdleTTL,
		}
		if t.cfg.Breaker != nil {
			rc.Breaker = t.newBreaker
		}
		t.limits = adaptive.NewRegistry(rc)
		t.full = t.observer != nil || t.cfg.Breaker != nil || t.cfg.Store != nil
	})
}

// send hands req to the next RoundTripper, once: as noResend has it, with
// the caller's request put back in the answer.
func (t *Transport) send(req *http.Request) (*http.Response, error) {
	out := noResend(req)
	resp, err := t.transport().RoundTrip(out)
	if out != req && resp != nil && resp.Request == out {
		resp.Request = req
	}
	return resp, err
}

func (t *Transport) transport() http.RoundTripper {
	if t.next == nil {
		return http.DefaultTransport
	}
	return t.next
}

// RoundTrip waits for the tenant's quota, sends req through the next
// RoundTripper once, learns from the answer and returns it unchanged.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	key, lim := t.tenant(req)
	call.SetKey(req.Context(), key) // so that retry.Do spends this tenant's budget
	if t.full {
		return t.fullRoundTrip(req, key, lim)
	}
	ticket, err := lim.Wait(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.send(req)
	if err != nil {
		// No answer: no quota signal. The request may have reached the
		// server, so its token stays spent.
		ticket.Done(quota.Observation{At: time.Now(), Transient: true})
		return nil, err
	}
	if now := time.Now(); t.parser.Defers(resp) {
		// An error answer's code is read as the caller reads its body:
		// a slow body does not hold the answer back.
		t.parser.ParseDeferred(resp, now, ticket.Done)
	} else {
		ticket.Done(t.parser.Parse(resp, now))
	}
	return resp, nil
}

// fullRoundTrip is RoundTrip with the tenant's circuit breaker asked, the
// shared pacer of the Store waited for (see reserve) and the Observer told
// what happens; any of them may be missing. The breaker is
// asked twice: before the wait for quota, so that an open breaker refuses
// at once, and right before sending, so that a request that waited while
// the breaker opened is not sent, and so that the breaker's one probe is
// the only request to go whatever the limiter's gate lets through (the
// gate's probe after a pause is then the same request). While the probe
// is in flight the others wait for its answer, as they do at the gate.
func (t *Transport) fullRoundTrip(req *http.Request, key quota.Key, lim *adaptive.Limiter) (*http.Response, error) {
	ctx := req.Context()
	ev := RequestEvent{Key: key}
	if t.observer != nil {
		ev.Priority = adaptive.PriorityFrom(ctx)
	}
	b := lim.Breaker()
	start := time.Now()
	if err := b.Await(ctx); err != nil {
		ev.Wait = time.Since(start)
		return t.refuse(req, ev, resultOf(err), err)
	}
	tn, err := t.admit(ctx, key, lim)
	if err != nil {
		ev.Wait = time.Since(start)
		return t.refuse(req, ev, ResultRefused, err)
	}
	pass, err := allow(ctx, b)
	ev.Wait = time.Since(start)
	if err != nil {
		tn.ticket.Cancel()
		if tn.shared {
			t.cancel(key, tn.res)
		}
		return t.refuse(req, ev, resultOf(err), err)
	}
	tn.sent = time.Now()
	resp, err := t.send(req)
	if err != nil {
		o := quota.Observation{At: time.Now(), Transient: true}
		tn.ticket.Done(o)
		if tn.follow {
			t.relay(key, lim, tn.sent, o)
		}
		pass.Done(breaker.JudgeError(req.Context(), err))
		if t.observer != nil {
			ev.Result, ev.Err = ResultFailed, err
			t.observer.Request(ev)
		}
		return nil, err
	}
	if now := time.Now(); t.parser.Defers(resp) {
		e := ev // a copy, so that only this path allocates it
		t.parser.ParseDeferred(resp, now, func(o quota.Observation) { t.answered(e, o, lim, tn, pass) })
	} else {
		o := t.parser.Parse(resp, now)
		told := pass
		if b != nil && breaker.Judge(o) == breaker.Success && judgeBody(resp, ctx, pass) {
			told = breaker.Pass{} // the body tells the breaker
		}
		t.answered(ev, o, lim, tn, told)
	}
	return resp, nil
}

// allow asks b to let a request go now; while b's probe is in flight it
// waits for the probe's answer and asks again.
func allow(ctx context.Context, b *breaker.Breaker) (breaker.Pass, error) {
	for {
		pass, err := b.Allow(time.Now())
		if oe, ok := err.(*breaker.OpenError); !ok || !oe.Probing {
			return pass, err
		}
		if err := b.Await(ctx); err != nil {
			return breaker.Pass{}, err
		}
	}
}

// resultOf returns the Result of a RoundTrip the breaker ended with err:
// refused by the open breaker, or by the caller's context.
func resultOf(err error) Result {
	if errors.Is(err, ErrCircuitOpen) {
		return ResultOpen
	}
	return ResultRefused
}

// refuse ends a RoundTrip that did not send req, with err.
func (t *Transport) refuse(req *http.Request, ev RequestEvent, r Result, err error) (*http.Response, error) {
	closeBody(req)
	if t.observer != nil {
		ev.Result, ev.Err = r, err
		t.observer.Request(ev)
	}
	return nil, err
}

// answered tells the limiter, the breaker and the Observer what the answer
// to turn tn's request said; and the Store of a pause it began if the
// request was shared, of a new estimate the tenant's learner settled on,
// and, for a follower's request, the answer itself, for the leader.
func (t *Transport) answered(ev RequestEvent, o quota.Observation, lim *adaptive.Limiter, tn turn, pass breaker.Pass) {
	ticket := tn.ticket
	var paused time.Time
	var was adaptive.Estimate
	switch {
	case tn.follow:
		t.relay(ev.Key, lim, tn.sent, o)
	case tn.shared:
		paused = lim.Fleet().Paused()
		fallthrough
	case t.cfg.Store != nil:
		was, _ = lim.Fleet().Learned()
	}
	if t.observer == nil {
		ticket.Done(o)
	} else {
		before := lim.Snapshot()
		ticket.Done(o)
		if after := lim.Snapshot(); limitsChanged(before, after) {
			t.observer.Limits(LimitsEvent{Key: ev.Key, Before: before, After: after, Answer: o})
		}
	}
	if tn.shared && !tn.follow {
		t.sharePause(ev.Key, lim, paused)
	}
	if t.cfg.Store != nil && !tn.follow {
		t.publish(ev.Key, lim, was)
	}
	pass.Done(breaker.Judge(o))
	if t.observer == nil {
		return
	}
	ev.Answer = o
	switch {
	case o.Throttled:
		ev.Result = ResultThrottled
	case ticket.Waited() || tn.waited:
		ev.Result = ResultWaited
	default:
		ev.Result = ResultAllowed
	}
	t.observer.Request(ev)
}

// tenant returns the tenant key and Limiter of req.
func (t *Transport) tenant(req *http.Request) (quota.Key, *adaptive.Limiter) {
	if k, ok := quota.KeyFrom(req.Context()); ok {
		return k, t.limits.Get(k)
	}
	if t.tenants != nil {
		host, akid, region, action := requestFields(req)
		return t.tenants.get(t.alibaba, t.limits, host, akid, region, action)
	}
	k := t.keyFn(req)
	return k, t.limits.Get(k)
}

// Key returns the tenant key RoundTrip would use for req: the key set in the
// request's context with quota.WithKey, else Config.Key's.
func (t *Transport) Key(req *http.Request) quota.Key {
	t.init()
	if k, ok := quota.KeyFrom(req.Context()); ok {
		return k
	}
	return t.keyFn(req)
}

// Limiter returns the limiter of tenant k, creating it if needed. Its
// Snapshot shows what the Transport has learned about k's quota.
func (t *Transport) Limiter(k quota.Key) *adaptive.Limiter {
	t.init()
	return t.limits.Get(k)
}

// Range calls f for each tenant the Transport currently tracks, until f
// returns false.
func (t *Transport) Range(f func(quota.Key, *adaptive.Limiter) bool) {
	t.init()
	t.limits.Range(f)
}

// CloseIdleConnections closes the idle connections of the next RoundTripper
// if it has such a method, so http.Client.CloseIdleConnections reaches it.
func (t *Transport) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	if ci, ok := t.transport().(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
	}
}
