// Package adaptive is tollgate's engine: a per-tenant limiter that keeps a
// client inside its server's quota and learns that quota from the answers.
//
// # The model
//
// A Limiter models its tenant's server as a rule that grants requests by
// a count of what it already granted, and paces the tenant to stay under
// it. Each answer updates the model; the pacer obeys it.
//
// What it estimates, in order of trust (Snapshot shows each, and
// Snapshot.Source says which is in force):
//
//   - the pace the server says: a limit per window from rate-limit
//     headers, Remaining until a reset, a pause until a retry hint or a
//     reset (package quota parses them); where others spend the quota too
//     (processes without a store, a consumer we cannot see), our share
//     of it (Snapshot.SaidShare): ours of what the server counts, L − R,
//     over its counting period;
//   - where it says nothing but "throttled", the pace the learner infers:
//     L̂ requests per window Ŵ (Snapshot.LearnedLimit, LearnedWindow, with
//     Ŵ bounded in WindowLow, WindowHigh), or the rule of the family that
//     a fit of the answers names (package fit: a fixed window, a sliding
//     log, a token bucket; Snapshot.Fit, PacedBy), less Ô, what someone
//     we cannot see spends; and N̂, a cap on requests in flight, where the
//     throttles split by how many of ours were in flight (InFlightLimit);
//   - before either, a static quota.Rule.
//
// From which signals: each answer's headers; and, for the learner, each
// request's time sent and answered (arrival times at the server lie in
// between, at the delay the fit finds), throttled or not, and how many of
// ours were in flight. The refill, the first success after a throttle,
// marks where a window began; the count of successes from a refill to
// the next throttle is the window's limit.
//
// What it does with them: the pacer admits a request when a pause gate,
// a cap on requests in flight, a token bucket (one atomic word, GCRA)
// and a sliding window (package window) all allow it, set from the
// estimate in force, so requests go evenly at L̂ per Ŵ plus the spread of
// arrival delays. Nothing is ever stopped for good: every pause is capped
// by MaxPause, no pace is slower than one request per MaxPause, and a
// limit the headers stopped saying is forgotten after LimitTTL.
//
// # The learner's phases
//
//   - Cold (PhaseCold): slow start, four requests in flight and one more
//     per success while that cap binds (doubling per round trip), until
//     the first throttle that its tests confirm (the successes so far
//     are the first L̂), or until the fit names a window to pace by
//     (below). A herd never hits a fresh tenant at once.
//   - Measuring (PhaseMeasuring): after a throttle the gate pauses and one
//     probe at a time seeks the refill, at spacings that double and at
//     the boundaries of the round window lengths; refills bound W, and
//     the count from one refill to the next throttle measures L.
//   - Settled (PhaseSettled): paced at L̂ per Ŵ. A window spent below L̂
//     sets L̂ to its count (the quota fell, or others spend), but halves
//     it at most, window by window: where others spend, one window may
//     leave us almost nothing, and the share falls multiplicatively.
//     Probing above L̂ is a bounded phase: only while callers wait on the
//     pacer, one window is paced a step above L̂, at least a window and
//     200 admissions after the last probe (so probing an unchanged quota
//     costs about one throttle in 200); a step passes only where more
//     than L̂ per window went through in it (callers that send under the
//     quota prove nothing above it), and one that passes raises L̂ and
//     the next, doubled, goes at once, so a raise of k is found in about
//     log2(k) probes.
//
// Beside this state machine, the fit (package fit) is made on a bounded
// record of the tenant's newest answers (8 KiB, from its first throttle)
// where the answers turn; where it names a rule that explains them better
// than L̂ per Ŵ does by more than chance (or, where the estimator has no
// rule yet, a window on the grid that explains them better than every
// rule of another kind; where, besides, it takes the throttles for
// shedding, any rule of the family that explains them better than its
// runner-up and than no quota, on trial: shedding looks like a quota a
// little slower than we send, so the rule is kept only if, paced by it,
// the throttles fall to a quarter of their share), the estimator paces
// by it (a
// fixed window off the round lengths as the most restrictive rule near
// it, a sliding log of its limit per its window: the estimator keeps the
// phases of round windows only), and a change point in the record lets
// it follow a quota that fell. The state
// machine is being replaced by the fit, one member of the family at a time
// (#35). The rules, in full: the estimator type (estimate.go), fitted
// (fitted.go), flight (flight.go) and the hint's trust (pause.go).
//
// A Transient answer (e.g. 503) is no quota signal. A retry hint pauses
// the tenant once the tenant's hints have shown that they predict
// throttles (tested, then trusted), and a hint the tenant pauses for
// bounds the learner's own pause: the server said when to come back.
//
// # Admission
//
// Admission is two-step, like gobreaker's: Wait and ReserveAt return a
// Ticket (a small value, no allocation) whose Done reports the answer and
// whose Cancel gives the token back when the request was never sent.
// AllowAt is the one-step form for callers with no answer to report.
//
// Callers of Wait that cannot go at once wait in the tenant's one line, by
// class (WithPriority: Interactive, Default, Batch, each class below the
// highest keeping a floor share, Config.PriorityFloor), then in order of
// first arrival (a retry of package retry's Do arrives when its first
// attempt did). Only the first in line asks the pacer, so a pause shifts
// the line and never reorders it. Wait never sleeps past the context's
// deadline: a caller whose deadline the line's expected wait passes fails
// at once with a *WaitError that matches context.DeadlineExceeded.
//
// # Sharing a quota among processes
//
// Where several processes spend one quota, a store (package transport's
// Config.Store) paces them as one through Limiter.Fleet: a pace said is
// derived alike by every process; a pace learned is learned by one leader,
// whose Limiter counts the others' answers as its own, while they follow
// the pace it publishes and hold while it learns alone. What a learner
// settled on seeds a process that starts cold on the tenant.
//
// A Registry maps tenant keys to Limiters, seeded from a quota.Rules table,
// bounded in size, evicting idle tenants; it may also make each tenant a
// circuit breaker (package breaker, RegistryConfig.Breaker), which the
// Limiter never asks: the breaker watches the service's failures, the
// Limiter its quota, and their user asks both.
package adaptive
