package retry

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tollgate-go/tollgate/quota"
)

// Defaults used for zero fields of a Policy.
const (
	DefaultMaxAttempts       = 5
	DefaultBaseDelay         = 100 * time.Millisecond
	DefaultThrottleBaseDelay = time.Second
	DefaultMaxDelay          = 20 * time.Second
	DefaultMultiplier        = 2.0
	DefaultMaxElapsed        = 2 * time.Minute
	DefaultMaxHint           = time.Minute
)

// Policy says when to retry a failed call and how long to wait first.
//
// Before retry n (n = 1 for the first retry) Do waits
//
//	max(Rand() × min(base × Multiplier^(n-1), MaxDelay), min(hint, MaxHint))
//
// where base is ThrottleBaseDelay after a throttle or a refusal and
// BaseDelay after other transient failures (full jitter, with the server's
// hint, or the wait a refusal needed, as a floor). It gives up at once,
// without sleeping, when that wait would end past MaxElapsed from the first
// attempt or at or past the context's deadline, when a refusal's own wait
// would, and when the tenant's Budget has no retry left.
//
// The zero Policy uses the documented defaults: 5 attempts, backoff from
// 100 ms (1 s for throttles) doubling to 20 s, full jitter from math/rand/v2,
// at most 2 min in all, hints capped at 1 min, and the process-wide
// DefaultBudget. A Policy is not changed by use: one may be shared by any
// number of goroutines, provided its fields are not changed meanwhile and
// its funcs are safe for concurrent use. A nil *Policy is the zero Policy.
type Policy struct {
	// MaxAttempts is the most attempts Do makes, the first included; 1 means
	// no retries. 0 means DefaultMaxAttempts (5). A throttled attempt that
	// tollgate's limiter sent as its tenant's probe (a test of whether the
	// quota refilled, which it expected the server might throttle) is not
	// counted: it is the limiter's test, not the call's failure. It is
	// backed off as any other, its retry spends the Budget, and MaxElapsed
	// and the context still bound the call.
	MaxAttempts int
	// BaseDelay is the backoff before the first retry after a transient
	// failure. 0 means DefaultBaseDelay (100 ms).
	BaseDelay time.Duration
	// ThrottleBaseDelay is the backoff before the first retry after a
	// throttle or a refusal (ClassRefused). 0 means
	// DefaultThrottleBaseDelay (1 s).
	ThrottleBaseDelay time.Duration
	// MaxDelay caps the backoff (not the server's hint). 0 means
	// DefaultMaxDelay (20 s).
	MaxDelay time.Duration
	// Multiplier is the backoff's growth per retry. 0 (or anything below 1)
	// means DefaultMultiplier (2).
	Multiplier float64
	// MaxElapsed caps the time from the first attempt to the start of the
	// last one: Do does not begin a wait that would end later. 0 means
	// DefaultMaxElapsed (2 min); a negative value means no limit.
	MaxElapsed time.Duration
	// MaxHint caps the server's retry hint. 0 means DefaultMaxHint (1 min).
	// Hints read from headers are also capped by the Parser's MaxHint
	// (1 min by default), so raising MaxHint above it needs a Parser too.
	MaxHint time.Duration

	// Idempotent says that the operation may safely be repeated even if a
	// failed attempt reached the server (for example, a read). Without it,
	// network errors and status 500, 502 and 504 are retried only where the
	// request method is idempotent or the request was never sent.
	Idempotent bool

	// Classifier, if set, is consulted first by Classify; it returns
	// ok = false to leave the outcome to the default rules. It must be safe
	// for concurrent use.
	Classifier func(resp *http.Response, err error) (o Outcome, ok bool)

	// Budget limits retries per tenant. nil means DefaultBudget(), shared by
	// every Policy in the process that leaves it nil. Give tests their own
	// (NewBudget): under testing/synctest every bubble's clock starts at the
	// same instant, so the shared one would see other tests' retries as
	// recent. See NoBudget.
	Budget *Budget
	// NoBudget turns the retry budget off.
	NoBudget bool

	// Rand returns a random number in [0, 1) for jitter. nil means
	// math/rand/v2's Float64. It must be safe for concurrent use.
	Rand func() float64

	// Parser reads responses and the headers carried by errors. nil means
	// the zero quota.Parser.
	Parser *quota.Parser

	// OnRetry, if set, is called by Do before each wait with the number of
	// the retry about to be made (1 for the first), the error that caused
	// it and the wait. It must be safe for concurrent use.
	OnRetry func(retry int, err error, wait time.Duration)

	// Observer, if set, is told of each retry and of each give-up (see
	// Observer), after OnRetry. Nil means none, at no cost.
	Observer Observer

	// Logger, if set, receives a Debug record per retry and one record per
	// give-up: Warn, or Debug for a permanent failure on the first attempt
	// and for a cancelled context. Error texts are logged with URL queries
	// and credential values (AccessKeyId, Signature, SecurityToken, …)
	// removed. Attributes: tenant, attempt(s), wait or next_wait, elapsed,
	// class, reason, error. Nil means no logging.
	Logger *slog.Logger
}

func (p *Policy) maxAttempts() int {
	if p == nil || p.MaxAttempts == 0 {
		return DefaultMaxAttempts
	}
	return max(1, p.MaxAttempts)
}

func (p *Policy) baseDelay(c Class) time.Duration {
	if c == ClassThrottle || c == ClassRefused {
		if p == nil || p.ThrottleBaseDelay <= 0 {
			return DefaultThrottleBaseDelay
		}
		return p.ThrottleBaseDelay
	}
	if p == nil || p.BaseDelay <= 0 {
		return DefaultBaseDelay
	}
	return p.BaseDelay
}

func (p *Policy) maxDelay() time.Duration {
	if p == nil || p.MaxDelay <= 0 {
		return DefaultMaxDelay
	}
	return p.MaxDelay
}

func (p *Policy) multiplier() float64 {
	if p == nil || p.Multiplier < 1 {
		return DefaultMultiplier
	}
	return p.Multiplier
}

// maxElapsed returns the elapsed limit, or 0 for none.
func (p *Policy) maxElapsed() time.Duration {
	switch {
	case p == nil || p.MaxElapsed == 0:
		return DefaultMaxElapsed
	case p.MaxElapsed < 0:
		return 0
	}
	return p.MaxElapsed
}

func (p *Policy) maxHint() time.Duration {
	if p == nil || p.MaxHint <= 0 {
		return DefaultMaxHint
	}
	return p.MaxHint
}

func (p *Policy) idempotent() bool { return p != nil && p.Idempotent }

// budget returns the budget to use, or nil for none.
func (p *Policy) budget() *Budget {
	switch {
	case p == nil:
		return DefaultBudget()
	case p.NoBudget:
		return nil
	case p.Budget == nil:
		return DefaultBudget()
	}
	return p.Budget
}

var zeroParser quota.Parser

func (p *Policy) parser() *quota.Parser {
	if p == nil || p.Parser == nil {
		return &zeroParser
	}
	return p.Parser
}

func (p *Policy) rand() float64 {
	f := rand.Float64
	if p != nil && p.Rand != nil {
		f = p.Rand
	}
	r := f()
	if !(r > 0) { // also catches NaN
		return 0
	}
	return min(r, 1)
}

// interval returns the backoff before retry n (n ≥ 1) after an outcome of
// class c, before jitter: base × Multiplier^(n-1), capped at MaxDelay. The
// arithmetic is backoff/v4's ExponentialBackOff with no randomisation.
func (p *Policy) interval(c Class, n int) time.Duration {
	b := backoff.ExponentialBackOff{
		InitialInterval: p.baseDelay(c),
		Multiplier:      p.multiplier(),
		MaxInterval:     p.maxDelay(),
		Stop:            backoff.Stop,
		Clock:           backoff.SystemClock,
	}
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < n && d < b.MaxInterval; i++ {
		d = b.NextBackOff()
	}
	return min(d, b.MaxInterval)
}

// Delay returns the wait before retry n (n ≥ 1, 1 for the first retry) after
// the outcome o: a full-jitter exponential backoff with o's hint, capped at
// MaxHint, as a floor. It draws one number from Rand. Delay is safe for
// concurrent use.
func (p *Policy) Delay(o Outcome, n int) time.Duration {
	wait := time.Duration(p.rand() * float64(p.interval(o.Class, max(1, n))))
	return max(wait, min(o.Hint, p.maxHint()))
}
