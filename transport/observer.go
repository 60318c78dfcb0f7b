package transport

import (
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

// Observer sees what a Transport decides, for metrics and logs. Its methods
// are called synchronously on the request path: they must be quick, must
// not block, and must be safe for concurrent use. With no Observer (and no
// Logger) a Transport does no observing work at all.
type Observer interface {
	// Request is called once per RoundTrip: as it returns, or, for an
	// error answer with a body, once the caller has read or closed the
	// body (the error code in it decides the Result; see Transport).
	Request(RequestEvent)
	// Limits is called when an answer changed a tenant's limits: new
	// rate-limit header values, a throttle's cut, a pause.
	Limits(LimitsEvent)
}

// Result says how a RoundTrip ended.
type Result uint8

// The results of a RoundTrip.
const (
	ResultAllowed   Result = iota + 1 // sent at once, and answered without a throttle
	ResultWaited                      // sent after waiting for quota, and answered without a throttle
	ResultThrottled                   // sent, and the server answered with a throttle
	ResultFailed                      // sent, and no answer came (the next RoundTripper failed)
	ResultRefused                     // never sent: the wait would pass the deadline, or the context ended
	ResultOpen                        // never sent: the tenant's circuit breaker is open (ErrCircuitOpen)
)

// String returns the result's name, e.g. "throttled": the value of the
// result label in metrics.
func (r Result) String() string {
	switch r {
	case ResultAllowed:
		return "allowed"
	case ResultWaited:
		return "waited"
	case ResultThrottled:
		return "throttled"
	case ResultFailed:
		return "failed"
	case ResultRefused:
		return "refused"
	case ResultOpen:
		return "open"
	}
	return "unknown"
}

// RequestEvent describes one RoundTrip.
type RequestEvent struct {
	Key    quota.Key
	Result Result
	// Priority is the request's class in its tenant's line, as its
	// context carries it (WithPriority; Default if none).
	Priority Priority
	Wait     time.Duration // time spent waiting for quota
	// Answer is what the server's answer said; its Status is 0 when there
	// was no answer.
	Answer quota.Observation
	Err    error // for ResultFailed, ResultRefused and ResultOpen
}

// BreakerObserver is an Observer that is also told of the changes of
// tenants' circuit breakers (Config.Breaker). An Observer that does not
// implement it is not.
type BreakerObserver interface {
	Observer
	// Breaker is called once per change of a tenant's breaker, in order,
	// on the goroutine of the request that caused it (or found it due),
	// with no lock held.
	Breaker(BreakerEvent)
}

// BreakerEvent describes a change of a tenant's circuit breaker.
type BreakerEvent struct {
	Key quota.Key
	breaker.Change
}

// StoreObserver is an Observer that is also told when the Transport's
// Store (Config.Store) stops answering and when it answers again. An
// Observer that does not implement it is not.
type StoreObserver interface {
	Observer
	// Store is called once per change, on the goroutine of the request
	// whose call to the store failed or succeeded, with no lock held.
	Store(StoreEvent)
}

// StoreEvent says that the Transport's Store stopped answering (Up false:
// Err says why, and the tenants it shared go on each alone at Share of
// their quota) or answers again (Up true: they share it again).
type StoreEvent struct {
	Up    bool
	Err   error
	Share float64
}

// LimitsEvent describes a change of a tenant's limits caused by an answer.
type LimitsEvent struct {
	Key           quota.Key
	Before, After adaptive.Snapshot
	Answer        quota.Observation // the answer that caused it
}

// limitsChanged reports whether the change from a to b is worth an event: a
// new source, limit, window or burst, a new learned cap on requests in
// flight, a pause that begins or grows, a cut of
// the rate, or a rise of more than 10%. The learned rate's steady regrowth
// between cuts is not reported.
func limitsChanged(a, b adaptive.Snapshot) bool {
	switch {
	case a.Source != b.Source, a.Limit != b.Limit, a.Window != b.Window, a.Burst != b.Burst:
		return true
	case a.InFlightLimit != b.InFlightLimit:
		return true
	case b.PauseUntil.After(a.PauseUntil):
		return true
	case b.Rate < a.Rate:
		return true
	case a.Rate > 0 && b.Rate > 1.1*a.Rate:
		return true
	}
	return false
}
