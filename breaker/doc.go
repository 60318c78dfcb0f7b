// Package breaker stops sending to a tenant whose service is failing, and
// lets one request at a time probe whether it is back: a circuit breaker
// per tenant, built on github.com/sony/gobreaker/v2.
//
// A quota (package adaptive) keeps a client inside the server's rate; it
// does nothing when the service itself fails. The breaker is the other
// half: it watches whether the service answers, not how fast it may be
// called.
//
// The model. The breaker estimates one quantity, the service's failure
// rate: the share of failures among the answered requests of the last
// Window (a sliding window of ten buckets). Its signals are the outcomes of
// the requests it let through (see Outcome): a failure is a 5xx answer, a
// transient error code (quota.Observation.Transient) or no answer at all (a
// connection error, a timeout); any other answer is a success; a throttle
// and a request its caller cancelled say nothing of the service's health
// and are not counted. What it does with the estimate:
//
//   - Closed: every request goes. When the failure rate reaches
//     FailureRatio over at least MinRequests answers, or ConsecutiveFailures
//     answers fail in a row (a storm after healthy traffic, whose rate the
//     healthy answers still dilute; traffic too thin for the rate), the
//     breaker opens.
//   - Open: for OpenFor, nothing goes; Allow and Check fail at once with an
//     *OpenError that says how long until the probe.
//   - Half-open: one request, the probe, goes; the others wait for its
//     answer (Await), as waiters do at the limiter's pause gate, or are
//     refused by Allow. A success closes the breaker with its counts
//     cleared; a failure, or no answer within ProbeTimeout, opens it for
//     OpenFor again. A probe that is not counted (a throttle) lets the next
//     request probe.
//
// So a failing service sees at most one request per OpenFor from a tenant,
// instead of every caller's retries, and traffic comes back one answer
// after the service does.
//
// The state machine and its rolling counts are gobreaker's
// (TwoStepCircuitBreaker). What this package adds: the classification of
// answers into outcomes, its own row of failures (gobreaker's skips what it
// does not count, so throttles between failures would join them into one
// row), a lock-free Check that refuses without taking gobreaker's lock, an
// error that carries the time until the probe, waiting for the probe's
// answer (Await), a timeout for a probe whose answer never comes, and state
// changes reported outside gobreaker's lock (its OnStateChange hook runs
// under it, so a hook that called back into the breaker would deadlock).
package breaker
