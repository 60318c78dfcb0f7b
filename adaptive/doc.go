// Package adaptive is tollgate's engine: a per-tenant limiter that keeps a
// client inside its server's quota and learns that quota from the answers.
//
// # The pacer
//
// A Limiter admits a request when all of these allow it:
//
//   - a pause gate, closed until a time the server asked for (a retry
//     hint, an exhausted Remaining) or the learner chose (see below);
//     after a pause one request probes and the others wait for its
//     answer (or ProbeTimeout);
//   - slow start's cap on requests in flight, while nothing is known,
//     and the learned cap N̂ where the server caps them (see below);
//   - a token bucket (rate, burst), a GCRA theoretical arrival time in one
//     atomic word, that spreads the requests evenly;
//   - a sliding window (at most a limit in any trailing window, package
//     window), where the bucket alone does not imply it. A probe counts in
//     it but is not held by it: the gate chose its moment, to ask the
//     server what the window cannot know.
//
// Their settings come from, in order: the server's rate-limit headers
// (pace at limit/window, a limit said without its window taken per the
// longest time to a reset said, at least the shortest round window;
// spend Remaining evenly until the reset), the learner's estimate where
// the server says no limit, and a static quota.Rule before either.
// Snapshot.Source says which is in force.
//
// No answer can stop a tenant for good: every pause is capped by MaxPause,
// no pace the answers set is slower than one request per MaxPause, and a
// limit the headers said and never said again is forgotten after
// LimitTTL (the learner takes over). So the server is asked again at
// least once per MaxPause, and what it answers corrects the tenant.
//
// # The learner
//
// Where the server says nothing but "throttled", the learner's model is
// that it grants at most L requests per window W, counted where requests
// arrive, and that we know neither. It estimates L̂ and bounds W in
// (Ŵlo, Ŵhi]; the pacer then admits L̂ per Ŵ (the bound, or the round value
// of 1 s, 2 s, 5 s, 10 s, 15 s, 20 s, 30 s, 1 min ... 1 h it holds: the
// fit's grid, fit.RoundWindow) plus the spread of arrival delays, evenly.
// Nothing in it assumes a window's length. The estimates are in Snapshot
// (LearnedLimit, LearnedWindow, WindowLow, WindowHigh, Phase).
//
// The signal is the refill: the first success after a throttle. A fixed
// window spent by our requests refills when the next window begins, and
// grants L more. So:
//
//   - Cold (PhaseCold): slow start. Four requests in flight, one more per
//     success while the cap binds (doubling per round trip; one more per
//     round trip after a stray, below), until the first throttle its tests
//     confirm: the successes so far are the first L̂. A herd of callers
//     never hits a fresh tenant at once.
//   - Testing, after any throttle: a count limit predicts that once a
//     window is spent every request is throttled until the refill, so the
//     requests after a throttle test it. One that gets through, in the
//     same window, shows it was a stray (shedding, a cap on requests in
//     flight, a request across a window's edge): nothing changes, and the
//     stray counts in the window. Strays are counted among the answers.
//     Where they are rare, a throttle below L̂ gets one test, sent alone
//     (none at L̂, two in slow start); where they are 1% of the answers,
//     as many as make a run of strays that long rarer than 1%, alone;
//     where they are also a third of the throttles (a server that
//     throttles whatever the rate), as many as make a run of throttles
//     that long rarer than 1e-4, the requests that come anyway, none held
//     back. Four or more requests in flight with the
//     throttle, most of them throttled too, show the window spent. Where
//     the server throttles whatever the rate, a run of strays may still
//     pass for a window's end; while that is the only end ever seen, a
//     count that runs past L̂ with nothing throttled but strays shows it
//     was one, and the estimate is forgotten (the hypothesis test).
//   - Measuring (PhaseMeasuring), a window at a time: after a throttle the
//     gate pauses and one probe seeks the refill. With W unbounded the
//     probes double their spacing from a round trip (about log2(W/round
//     trip) throttled probes, whatever W is); once refills bound W, the
//     next refill lies in a predicted interval and each probe halves it.
//     Where a window's count measures the quota and Ŵ is a round length,
//     the refill comes at a boundary of Ŵ's instead (whole windows after
//     a refill placed within the spread of arrivals, else after the Unix
//     epoch, where servers that count per second or per minute start
//     theirs): one probe just before it and one just past it place it
//     within the spread of arrivals (one throttled past it rules it out,
//     and the halving goes on).
//     Each refill k lies in (lo_k, hi_k], between a throttled and a
//     successful arrival; refills i and k, d windows apart, bound W in
//     ((lo_k − hi_i)/d, (hi_k − lo_i)/d]. From a refill, the window's
//     budget is L̂ and one more: the count of successes up to its first
//     throttle is the window's L. One more succeeding means the quota
//     grew (the budget doubles until a throttle); where nothing bounds the
//     window, so that the count may run into the next, L̂ more go, the
//     count unknown, until a throttle ends a window; a window counted
//     below L̂ twice in a row means it fell (once may be a sliding log or
//     a bucket still refilling). A request that arrived at the refill's
//     instant counts in the window it began.
//   - Settled (PhaseSettled), once a measured window confirmed L̂ and the
//     bounds on W are tight (1.5%) or hold one round value (or, after six
//     windows, at the upper bound; after twelve whose refills fit no fixed
//     window, at the mean time between them): paced evenly
//     at L̂ per Ŵ. A throttle is tested as above; a window spent at c of
//     our requests (the window placed by all the refills kept, the
//     throttle surely in it, however loosely they place its start) sets
//     L̂ to c, still settled: what the server leaves us at our pace, less
//     than L̂ where the quota fell or a consumer we cannot see spends part
//     of it. A throttle in the stretch where the start is uncertain, and
//     a success right after it, are a window's end and the next one's
//     refill, which places the windows anew, L̂ standing (a second in a
//     row, or a count otherwise unknown, and the learner measures again).
//
// Probing above L̂, only while callers wait on the pacer: two windows after
// settling (a quota that just changed may change back), then at least one
// window and 200 admissions apart per throttle the failed one before cost,
// so that probing costs about 0.5% of what is sent (a slow tenant, which
// sends fewer than 200 in MaxPause, probes MaxPause apart at the pace, or
// one window, at first, so that a raise is found soon, and twice as far
// apart for each probe failed in a row, up to 200 admissions), one window
// is paced at L̂+1 per the shortest window the bounds allow, aligned to the
// predicted window when the phase is known. A confirmed throttle there means
// the quota is unchanged: the gate pauses to the window's predicted end, and
// probing an unchanged quota costs about one throttle in 200. Paced per the
// upper end of bounds that hold no round length (a window off the grid), a
// throttle late in the window as placed is a window's end like any settled
// one instead: its refill is sought, placing the windows anew and narrowing
// the bounds, so that the pace does not drift off the server's windows. If
// the window goes through, the quota grew, and the probes ramp, paced: L̂
// grows by what the probe sent above it, at the window the probe was paced
// at, and the next probe goes at once with its step doubled. Where a
// window's count measures the quota (a fixed window, the fit's or one the
// refills pin to a round length or within 1.5%), the step grows to L̂ at
// once (the pace doubles), and the first step that fails ends the ramp: the
// count of ours in the window its throttle surely arrived in, less those
// that arrived where the window's start is uncertain (a count too high
// would throttle every window after), is L̂, and the rest of the window
// waits for its refill; where it left some out, the next probe comes a
// window on and steps no further than the count with them. So a failed
// step costs what the pace sends in a round trip before its throttle is
// heard, and nothing is sent unpaced. A throttle where the window's start
// is uncertain has its refill sought, which places the windows anew, and
// the step goes again. Elsewhere (a sliding log's or a bucket's count
// depends on when it is taken, and a burst there costs a throttle for
// each request above the pace) once a step fails, the step halves between
// the level that passed and the one that failed, so a raise of k is found
// in about 2·log2(k) probes of a window each. But only if the callers kept
// up the probe's pace (successes of at least 90% of L̂ per window in it): a
// window that saw L̂ or fewer of ours, because demand fell or a circuit
// breaker held everyone back, says nothing, and the probe is tried again
// later. Idle time teaches nothing.
//
// A cap on requests in flight: where strays are common, the learner also
// counts each answer by its level, how many of our requests were in
// flight when it was sent (those sent at one moment, in the order the
// server would have taken them: the ones it let through first). A server
// that works on at most N at once throttles above N and not below,
// whatever the rate: where the levels
// split so (rare throttles up to a level, a quarter or more above it, and
// at least 16), that level is N̂ and no more than N̂ are sent at once
// (Snapshot.InFlightLimit): callers held back wait in line, and each
// answer hands its place to the first. Every 256 answers or more (doubled by each
// failure) N̂+1 may go for a while: if no more of those are throttled
// than below, N̂ grows by one. A split found lower lowers it at once.
//
// A throttle with a reset pauses the tenant as the server asks, whatever
// the learner does. So does one with a retry hint, once the tenant's hints
// have shown that they predict throttles: the requests sent right after a
// hinted answer test it (two throttled, it held; one through, it did not),
// the first hint is taken at its word, and after it hints are tested until
// the tenant's trust, (held+1)/(tests+2), reaches 0.8, and one in eight
// all the same. A Transient answer (e.g. 503) is no quota signal, and in a
// measured window its request may not have counted, so one more may go.
//
// # The fitted model, beside the learner
//
// The learner above is being replaced by a fitted model (package fit),
// in stages. From a tenant's first throttle while the server says no
// limit, the Limiter keeps a record of the tenant's newest answers
// (fit.Record: when each left and came back, how many were in flight,
// throttled or not; 8 KiB, nothing for a tenant never throttled) and
// fits the family of server rules to it where the answers turn (a first
// throttle, a refill), at most once per 32 answers (paced by the fit's
// fixed window or sliding log, once per window's count: a tenant that
// sends a few requests a window fits about every window): the rule that
// explains them best, its score, the best of another kind, and Ô, what
// someone we cannot see spends (Snapshot.Fit). A fit is replaced by "no
// quota" only on evidence: not when the record's throttles have scrolled
// out, nor when a quota explains more of them than no quota does, by
// less than chance could.
//
// The fit paces three members of the family so far, the fixed window on the
// grid, the sliding log on it or off it, and the token bucket, and only where
// the record shows the estimate above wrong: when a fit names one, L less Ô
// per W, that the fit before it named too, with throttles between, and that
// explains the answers better than L̂ per Ŵ by more than chance
// (fit.Record.Prefers, each at its own limit; weighed at each fit and, while
// the estimator is settled, as often between fits), the estimator settles on
// it (Snapshot.PacedByFit): its bounds are the fit's W, its refills a fixed
// window's starts (a sliding log's follow our own sends: none is kept), and a
// request reaches the server where the fit's delay into the round trip puts
// it, so only that share of the round trip's variation widens the pace. Paced
// so, a throttle does not send the learner back to measuring, nor does a
// refill missed where predicted, nor refills that contradict each other: the
// next fit, which holds those answers, says whether the rule changed. A probe
// above a fixed window of the fit's sends two more per window, over two
// windows whatever the fit's phase (one more could fall so that no window of
// the server's holds it); above a sliding log, over one window, which has no
// phase. Settled on the fit's window, a higher count is left to the probes: a
// fit books someone else's spending by its median, which would take from them
// half the time. A sliding log off the grid is taken as one on it where,
// besides, the record prefers it to the best fit of another kind by more than
// chance (a fixed window's bursts, bunched, fit a log shorter than the window
// too): the fit takes its length from the successes, which bound it from
// above, and the estimator's own bounds stay loose where refills follow our
// sends. While the estimator measures, a sliding log that the record prefers
// so is taken whether or not it beats the estimator's rule, a guess that sends
// L̂+1 at once each window, which a log holds against the pace for a whole
// window after. A fixed window off the grid is not yet: early in a record, a
// scan of the refills' spacing finds a length a few percent off, or a fraction
// of the window.
//
// A token bucket (rate r, D deep) is taken where, besides the above, the
// record prefers it to the best fit of every other kind too by more than
// chance: a window's burst at its start, read early, looks like a bucket
// as deep as the window's count and as fast as the burst. The pace keeps
// one step under r, as L̂ per Ŵ with L̂ about 100 (one step, 1% of the
// rate, is the resolution of our goals, not a guess at the server), with
// no phase. A bucket grants a burst from its depth whatever its rate, so
// a probe that drains less says nothing: each probe sends, above the
// pace, twice D, at a step of at least 2 per Ŵ and for at least a Ŵ,
// within half of what the record holds. Had r been the pace's, it would
// have run dry, so one that passes proves r above the pace by half its
// step: L̂ grows by that, and the next probe goes at once, its step
// doubled. One that fails leaves L̂ and the bucket dry, and the ramp
// starts again from the smallest step; the throttle that ended it says
// when the bucket ran dry, and the next fit, whose rate differs from the
// pace's by more than a step, is taken again. The depth a record shows
// is only as deep as it saw the bucket drained, so fits are alike by
// rate alone, and a passing probe proves less where the bucket is deeper
// than fitted: the ramp, not the fit, climbs that last stretch.
// Fixed windows off the grid, the cap and no quota pace by the fit in
// the next stages.
//
// A change point cuts the record. It holds minutes of a tenant that
// sends a few requests a window, and a fit weighs the answers from
// before a change with those after it, so a quota that fell would be
// outvoted until they scroll out. Where the pacer follows the fit, each
// fit first judges the rule it paces by on the newest answers, from the
// first of the newest runs of throttles the rule does not explain and
// at least the newest four (fit.Record.Change); the estimator's own rule
// follows a fall by itself. Where the rule explains them no better than
// no quota does, by more than chance, a copy cut there is fitted, and
// the cut is kept where a rule explains the answers since better than
// the one in force by more than chance: the rule fitted to them, or the
// one in force at a lower limit (fit.Record.Relimit). A quota changes
// its limit far more often than its window or kind, and a few answers
// tell a limit more surely than a window: paced by a sliding log, the
// pacer takes the same log at the lower limit at once; a rule of
// another kind is followed as any fit is. A fixed window we pace by
// follows a fall window by window already, and a bucket's fall is in
// the fit's rate. A higher limit is the probes' to find.
//
// # Admission
//
// Admission is two-step, like gobreaker's: Wait and ReserveAt return a
// Ticket (a small value, no allocation) whose Done reports the answer and
// whose Cancel gives the token back when the request was never sent.
// AllowAt is the one-step form for callers with no answer to report.
//
// Callers of Wait that cannot go at once wait in the tenant's one line, by
// class (WithPriority: Interactive, Default, Batch), then in order of
// first arrival: a call that package retry's Do retries arrives when its
// first attempt did (it says so in the context), ahead of the calls that
// came after it. A higher class goes first, and each class below the
// highest waiting keeps a floor share of the admissions while it has
// callers waiting (Config.PriorityFloor, 10%), which it does not save up
// while it has none. Only the first in line looks at the gate, the caps,
// the bucket and the window; the others sleep until it goes. So a pause, a
// new estimate or a full window shifts the line and never reorders it, but
// for one thing: a pause's probe, a test the server may throttle, is sent
// by the caller in line whose call has made the fewest attempts (a first
// attempt before any retry), then of the lowest class, and those ahead of
// it go right after its answer, so that no call takes every failed probe
// and the class that can wait takes the risk. ReserveAt
// and AllowAt admit only while no one waits in line. Snapshot.Classes
// counts each class's callers in line, admitted from it and refused in it.
// Wait never sleeps past the context's deadline, and never admits a
// request with less than a round trip left before it: the first in line
// says when it expects to go, each caller behind it one pace later per
// caller ahead, and a caller whose deadline that passes fails at once
// (when it joins, or when the line moves so) with a *WaitError that says
// how long it would have waited, and matches context.DeadlineExceeded.
//
// # Sharing a quota among processes
//
// Where several processes spend one quota, a store (package transport's
// Config.Store) paces them as one, through the side of each Limiter that
// stores work with (Limiter.Fleet; its methods are named below). Where the
// pace is said, every process derives it alike: the Limiter gives the
// store the pace said for the
// tenant (Pace: the headers' limit per window, or the rule's), the end of
// the latest pause (Paused), whether it knows nothing yet (Fresh); it
// admits a request the store has already held to its turn without pacing
// it again (WaitPaced); and while the store is out of reach it spends only
// a share of the pace (SetShare).
//
// Where the server says nothing, the processes learn the quota as one:
// the learner above, in one process (the tenant's leader), must count
// every request the server counts. So the leader's Limiter gives the
// store the pace it learned (LearnedPace), and whether the others must
// hold their requests while it learns alone (Holding: slow start, a
// window measured, a throttle tested and its refill sought, a pause and
// its probe); it counts the others' answers, relayed, as its own
// (ObserveRelayed: admitted when they were sent, not in flight here); the
// shared pacer starts no earlier than its own queue ends (Booked); and
// its callers' waits in the store are demand (MarkDemand). What a
// learner settled on (Learned) the store keeps, so that a process that
// starts cold on the tenant, or this one after a restart, takes it up
// (Seed) and paces at it at once instead of learning the quota again.
//
// A Registry maps tenant keys to Limiters, seeded from a quota.Rules table,
// bounded in size, evicting idle tenants. It may also make each tenant a
// circuit breaker (package breaker, RegistryConfig.Breaker), which lives and
// is evicted with the tenant's Limiter and shows in its Snapshot; the
// Limiter never asks it: the breaker watches the service's failures, the
// Limiter its quota, and their user asks both.
package adaptive
