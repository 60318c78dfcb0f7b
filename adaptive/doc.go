// Package adaptive is tollgate's engine: a per-tenant limiter that keeps a
// client inside its server's quota and learns that quota from the answers.
//
// A Limiter combines three checks, all of which must pass to admit a request:
//
//   - a token bucket (rate, burst), kept as a GCRA theoretical arrival time
//     in one atomic word;
//   - a sliding window (at most Limit requests in any trailing Window), a
//     window.Window, used when the bucket alone does not already imply it;
//   - a pause gate, closed until a time given by a server's retry hint or an
//     exhausted Remaining. After a throttle's pause one request probes, and
//     the others wait for its answer (or a probe timeout) before going. A
//     pause restarts the bucket's queue at its end: places reserved before
//     it are void, and after it the requests resume at the pace, not in a
//     burst.
//
// The limits come from three places, reported by Snapshot.Source: a static
// quota.Rule, the server's rate-limit headers (limit, window, remaining,
// reset), or what the Limiter learned from throttles when the server says
// nothing else. The rules (see Observe) are:
//
//   - Headers known: pace at Limit/Window with a burst of 1, which by itself
//     keeps at most Limit in any trailing Window. Spend what Remaining is
//     left evenly until the earliest moment the reset may come: ResetAt less
//     the answer's ResetSlack (a reset in whole seconds may come a second
//     early) and less the answer's round trip (a delay counts from the
//     request's arrival). What is left is Remaining less the requests
//     admitted after the one answered, which the server had not counted yet.
//     When nothing is left, pause until that earliest reset, without a
//     probe. After HeaderTTL without fresh headers the last good limit stays
//     in force, the stale Remaining is ignored.
//   - A retry hint pauses the whole tenant until then, capped by MaxPause,
//     and one request probes before the waiters are released; so does a
//     throttle that carries a reset, until ResetAt. A hint in whole
//     seconds (Retry-After: 1) is the server's wait rounded up: the pause
//     ends at the earliest moment that wait may end (the hint less its
//     quota.Observation.RetrySlack), and if the probe is throttled too the
//     next tries wait 100 ms, 200 ms, ... and at last the whole hint.
//   - A throttle is always a signal, whatever the headers say, at most once
//     per round trip: throttles of requests admitted before the last cut
//     are ignored (each Ticket carries its admission number). Any throttle
//     but a failed probe cuts the rate at once to a little under the
//     success rate measured over the last second (Headroom), by at least
//     that and at most the Decrease factor. So the throttles at the tail of
//     a full fixed window, with successes still coming in, keep the rate
//     near the quota, while throttles with no success cut by Decrease each
//     round trip. Then the rate holds at the quota estimate for Hold, and
//     probes above it: first one request more in one server window, timed
//     to end as a window ends once a failed step has shown where windows
//     start, so that probing an unchanged quota costs one throttle; if
//     that goes through, a ramp 20% above, the overshoot doubling every
//     ProbeDoubling. A failed probe goes back to the estimate. Time counts
//     only while the Limiter is the bottleneck, never while idle. For one
//     window after a cut, a learned window of as many requests per second
//     as the rate is kept too, seeded with the requests of the last second
//     that got through, at the times they were sent: a fixed-window server
//     is still counting them, so nothing more goes into a window it has
//     already filled. A request held back by a full window gives up its place, and
//     the bucket's queue restarts when the window has room, paced, so that
//     the waiters do not leave together.
//   - With no rule and no signal yet, a Limiter admits everything until the
//     first throttle, then starts from the measured success rate (over at
//     least half a second), or from half the requests admitted so far, per
//     second, if no success has come back yet.
//   - A Transient answer (e.g. 503 ServiceUnavailable) is not a quota signal.
//
// A sliding window is in force only while the bucket does not imply it (a
// burst above 1, or a learned rate just cut) and, for a rule's or the
// headers' window, for one window after: it costs up to one bucket of its
// capacity (see package window).
//
// Admission is two-step, like gobreaker's: Wait and ReserveAt return a Ticket
// (a small value, no allocation) whose Done reports the answer and whose
// Cancel gives the token back when the request was never sent. AllowAt is the
// one-step form for callers with no answer to report.
//
// A Registry maps tenant keys to Limiters, seeded from a quota.Rules table,
// bounded in size, evicting idle tenants.
package adaptive
