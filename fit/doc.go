// Package fit names the rule by which a server grants requests, from a
// record of what it answered: the learner's estimator, kept apart from
// the pacer that obeys it (package adaptive).
//
// The model, in a page:
//
//   - The record (Record) holds a tenant's newest answers, each with when
//     the request left, when its answer came, how many requests were in
//     flight and whether it was throttled: 16 bytes each, Size of them.
//     The server saw a request somewhere within its round trip: the fit
//     starts at the middle and moves a quarter of the round trip a fit,
//     earlier or later, where that explains the answers better
//     (Fit.Delay); the Record keeps where it got to. Answers placed at
//     one time are taken successes first: the server's order among them
//     is unknown, and that one gives each throttle the most it may have
//     met.
//   - The family (Kind) is the rules servers use: a fixed window (Limit
//     per Window, from Start), one that the first request after the last
//     one ended opens (a counter made on first use), a sliding log (Limit
//     in any trailing Window), a token bucket (Rate, Limit deep), a cap on
//     requests in flight (Limit), and no quota at all (refusals that do
//     not depend on what is sent: shedding). Each grants a request while
//     its count, the load that stands against it, is below its Limit
//     (Rule.Grants).
//   - A member's time parameters are searched: a window's length on the
//     grid of round values servers use (1 s … 1 h) or off it, from the
//     intervals in which refills fell (a throttle, then a success); a
//     sliding log's off it from the successes too, each of which says
//     the Limit-th success before it had left the log, so that the
//     least time between them bounds the length from above (its refills
//     follow our own sends, and their spacing shows nothing), tried
//     first, so that of equals the most restrictive is named (one within
//     a round trip or two of a round length must beat that length by
//     more than chance: arrivals placed a little off make it explain a
//     throttle or two more); a
//     fixed window's start within the stretch where the most of those
//     intervals meet, where it costs least, for each length before the
//     lengths are compared (a start that cuts a burst would lose a short
//     window to a long one, which has fewer ends to cut one); a
//     bucket's rate between the bounds that pairs of throttles set, and
//     no bucket where those bounds cross by more than a round trip's
//     uncertainty explains (a burst, then throttles for seconds: a
//     window's); a window opened on first use at the grid's lengths and
//     those the refills space out: its windows follow the arrivals, so
//     on a steady pace it explains much what a fixed window or a sliding
//     log of its length does, and it is named only where it beats both
//     by more than chance. Its Limit is then computed, not searched: the
//     count that costs least.
//   - The cost of a member on the record: a success it forbids is heavy
//     (4), it says that rule is wrong; a run of throttles it does not
//     explain costs 1, as it does to no quota, or half where the run
//     spent a fixed window's count early (the success after it comes in
//     the next window; so too for one opened on first use): someone we
//     cannot see spent the rest. Throttles in a row at one count are one
//     event. Where a member cannot tell its count (a trailing window's
//     first stretch, a bucket's first token), it costs what no quota
//     costs. The record begins at a throttle: every member is spent
//     there.
//   - The fit (Record.Fit) is the member of least cost per answer, of
//     those that beat no quota by more than chance does (√T, on T runs of
//     throttles): shedding leaves some count that, by luck, explains a
//     few. Of equals, the simplest: no quota, then a window on the grid;
//     a fixed window off the grid, searched over many lengths, must beat
//     the grid's best by more than chance too, and so must a sliding
//     log's length the successes give where it lies within a round trip
//     or two of a round one. The runner-up is the best of another kind
//     (a sliding log and a window opened on first use, which count a
//     steady stream of requests alike, are not each other's).
//   - Two rules, each at its own limit, are compared the same way
//     (Record.Prefers): one is preferred where it costs less by more than
//     chance could. A pacer asks it whether the rule it paces by is wrong.
//   - A change point (Record.Change): a rule that explained the record
//     is judged on its newest answers, from the first of the newest runs
//     of throttles it does not explain (and at least a few runs, or two
//     of its windows); where it explains them no better than no quota
//     does, by more than chance, the quota may have changed, and a
//     caller cuts a copy of the record there (Record.CutBefore) and
//     keeps the cut where a rule explains the answers since better by
//     more than chance: the one fitted to them, or the same rule at the
//     limit they show (Record.Relimit). Older answers, which outnumber
//     the newer on a slow tenant, would otherwise hold the fit at the
//     rule before.
//   - Ô (Fit.Others) is what someone we cannot see spends of the best
//     fixed window's Limit (or one opened on first use's): the median
//     shortfall of the counts at which runs that spent it began.
//     Shedding refuses one here and there and makes no such run, which
//     is how the two are told apart.
//
// A Fit costs 50–75 µs on a full record on a 2-core machine, by the day
// (BenchmarkFit) and allocates next to nothing; a caller fits where the
// answers turn, not on every answer.
package fit
