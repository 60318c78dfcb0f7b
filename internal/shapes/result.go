package shapes

import (
	"fmt"
	"math"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/transport"
)

// Result is what one run of a cell measured. Every count comes from the
// server (fakecloud) or the callers, never from the limiter about itself;
// Estimate is the learner's own belief, from its Snapshot, to set beside
// the truth.
type Result struct {
	Cell Cell

	// Before the settled stretch, from the start (or from the step).
	ColdThrottles int64 // throttles the server answered
	ColdShed      int64 // of those, the ones it shed whatever the rate (Faults.ShedRate)
	// SettleTime is the time to the first bucket from which, to the end,
	// goodput and the throttled share are within their goals; -1 if never.
	SettleTime time.Duration

	// In the settled stretch.
	SettledGoodput   float64       // admitted ÷ what the policy allows (or the callers can send, if less); NaN without a rate quota
	SettledThrottled float64       // throttled ÷ sent
	SettledShed      float64       // of that, shed ÷ sent: throttles no client could avoid
	SettledPerSecond float64       // admitted per second
	P50, P99         time.Duration // of the successful calls begun in the stretch
	Little           time.Duration // callers ÷ the quota's rate, the wait a full queue implies, or the slowest round trip where that is longer; 0 without a rate quota

	// The whole run, from the start to the end of the settled stretch.
	RunGoodput   float64
	RunThrottled float64
	Calls        int64
	Took         time.Duration // from the callers' start to the last call's end
	Failed       int64
	Failures     map[string]int // failed calls by reason
	Replays      int64          // SignatureNonceUsed answers
	// UnseenThrottled is the share of the unseen consumer's requests
	// refused (Quota.Unseen): what the callers took from it.
	UnseenThrottled float64
	Cut             bool // the run reached maxCalls

	Estimate    adaptive.Snapshot // the first client's learner at the end
	HasEstimate bool
	// Learners are, per bucket of Series, every client's learner at the
	// bucket's end, in the clients' order, where the run was traced
	// (Options.Trace); else nil.
	Learners [][]adaptive.Snapshot

	// Classes are the callers' priority classes, Interactive then Batch,
	// where the cell has them (Cell.Interactive) and was not run
	// classless; else nil.
	Classes []ClassResult

	// Over several runs (Summarize): how many, and the spread of the
	// settled goodput and throttled share, lowest and highest.
	Runs                         int
	GoodputRange, ThrottledRange [2]float64

	Series Series

	// For checking the callers' counts against the server's.
	server   counts
	attempts [attemptKinds]int64
	okCalls  int64
}

// ClassResult is what the callers of one priority class measured.
type ClassResult struct {
	Priority transport.Priority
	Callers  int
	// Of the class's successful calls begun in the settled stretch: the
	// percentiles of their durations, and their share of all the
	// successful calls begun then (of the admissions, one each).
	P50, P99 time.Duration
	Share    float64
	Failed   int64 // the class's failed calls, the whole run
}

// classes returns the results of the classes of c's callers.
func (r *recorder) classes(c Cell) []ClassResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.plan
	all := len(successTimes(r.calls, p.settled, p.end, nil))
	out := []ClassResult{
		{Priority: transport.Interactive, Callers: c.Interactive},
		{Priority: transport.Batch, Callers: c.callers() - c.Interactive},
	}
	for i := range out {
		cr := &out[i]
		of := func(call callRecord) bool { return call.priority == cr.Priority }
		took := successTimes(r.calls, p.settled, p.end, of)
		cr.P50, cr.P99 = percentile(took, 0.50), percentile(took, 0.99)
		cr.Share = share(int64(len(took)), int64(all))
		for _, call := range r.calls {
			if of(call) && !call.ok {
				cr.Failed++
			}
		}
	}
	return out
}

// result computes the columns from what r recorded.
func (r *recorder) result(c Cell) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.plan
	res := &Result{Cell: c, Cut: r.cut.Load(), server: r.totals, Failures: r.failures, Runs: 1}
	for i := range res.attempts {
		res.attempts[i] = r.attempts[i].Load()
	}
	b := p.bucket
	from := int(p.stepAt / b)
	if p.stepAt == 0 {
		from = int(p.begin / b)
	}
	settled, end := int(p.settled/b), p.buckets()

	allow := make([]float64, end) // what the policy allows per bucket
	for i := range allow {
		allow[i] = math.NaN()
		if c.rated() {
			allow[i] = c.rate(c.limit(c.Step > 0 && time.Duration(i)*b >= p.stepAt)) * b.Seconds()
		}
	}
	if c.rated() && c.Quota.Policy == fakecloud.TokenBucket {
		allow[0] += float64(c.Quota.Burst) // it starts full
	}
	// Closed-loop callers send at most one request per round trip each:
	// where that is below what the policy allows, it is the capacity
	// they are judged on.
	demand := float64(c.callers()) * b.Seconds() / c.rtt().Seconds()
	capacity := func(from, to int) float64 {
		var s float64
		for _, a := range allow[from:to] {
			s += min(a, demand)
		}
		return s
	}

	res.ColdThrottles = span(r.throttled, from, settled)
	res.ColdShed = span(r.shed, from, settled)
	res.SettleTime = -1
	g := goalsOf(c)
	for i := from; c.rated() && i < end; i++ {
		if share(span(r.throttled, i, end)-span(r.shed, i, end), span(r.requests, i, end)) <= g.throttled &&
			float64(span(r.admitted, i, end)) >= g.goodput*capacity(i, end) {
			res.SettleTime = time.Duration(i-from) * b
			break
		}
	}
	admitted := span(r.admitted, settled, end)
	res.SettledGoodput = float64(admitted) / capacity(settled, end)
	res.SettledThrottled = share(span(r.throttled, settled, end), span(r.requests, settled, end))
	res.SettledShed = share(span(r.shed, settled, end), span(r.requests, settled, end))
	res.SettledPerSecond = float64(admitted) / (p.end - p.settled).Seconds()
	took := successTimes(r.calls, p.settled, p.end, nil)
	res.P50, res.P99 = percentile(took, 0.50), percentile(took, 0.99)
	if c.rated() {
		// Little's law, N = X·T, for N closed-loop callers at the rate X
		// they can reach (the policy's, or one per round trip each): a
		// call takes N ÷ X, or its slowest round trip where that is the
		// bound.
		queued := time.Duration(float64(c.callers()) / (allow[end-1] / b.Seconds()) * float64(time.Second))
		res.Little = max(queued, c.rtt()+c.Jitter)
	}

	first := int(p.begin / b)
	res.RunGoodput = float64(span(r.admitted, first, end)) / capacity(first, end)
	res.RunThrottled = share(span(r.throttled, first, end), span(r.requests, first, end))
	for _, cr := range r.calls {
		res.Took = max(res.Took, cr.at+cr.took-p.begin)
		res.Calls++
		if cr.ok {
			res.okCalls++
		} else {
			res.Failed++
		}
	}
	if c.Calls > 0 && res.Took > 0 {
		res.SettledPerSecond = float64(res.okCalls) / res.Took.Seconds()
	}
	if e := r.estimates[end-1]; e.ok {
		res.Estimate, res.HasEstimate = e.sn, true
	}
	res.Learners = r.learners

	res.Series = Series{
		Title:     c.Name,
		Bucket:    b,
		Admitted:  append([]int(nil), r.admitted...),
		Throttled: append([]int(nil), r.throttled...),
		Quota:     allow,
		Estimate:  make([]float64, end),
		Marks:     []Mark{{At: p.begin, Label: "start"}, {At: p.settled, Label: "settled from"}},
	}
	for i, e := range r.estimates {
		res.Series.Estimate[i] = e.perBucket
	}
	if p.stepAt > 0 {
		res.Series.Marks = append(res.Series.Marks, Mark{At: p.stepAt, Label: "quota step"})
	}
	return res
}

// share returns part ÷ whole, or 0 when whole is 0.
func share(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// Agree reports an error if what the callers saw differs from what the
// server counted: every admission and every throttle the server answered
// reached exactly one attempt, and every admission ended exactly one call,
// but for attempts their caller's context cut while out (the server may
// have counted each either way).
func (r *Result) Agree() error {
	// Attempts cut by their caller's context may have been answered
	// either way: the server may count up to that many more.
	cut := r.attempts[attemptCut]
	agree := func(seen, server int64) bool { return seen <= server && server <= seen+cut }
	switch {
	case !agree(r.attempts[attemptOK], r.server.admitted):
		return fmt.Errorf("%s: callers saw %d successes (and %d cut), the server admitted %d", r.Cell.Name, r.attempts[attemptOK], cut, r.server.admitted)
	case !agree(r.attempts[attemptThrottled], r.server.throttled):
		return fmt.Errorf("%s: callers saw %d throttles (and %d cut), the server answered %d", r.Cell.Name, r.attempts[attemptThrottled], cut, r.server.throttled)
	case !agree(r.okCalls, r.server.admitted):
		return fmt.Errorf("%s: %d calls succeeded (and %d attempts cut), the server admitted %d", r.Cell.Name, r.okCalls, cut, r.server.admitted)
	case r.Calls == 0:
		return fmt.Errorf("%s: no call completed", r.Cell.Name)
	}
	return nil
}

// goals are the figures a cell is read against (issues #19 and #33).
type goals struct {
	goodput   float64 // settled goodput at least
	throttled float64 // settled throttled share at most
	cold      float64 // throttles before settled per client at most; 0: no goal
	p99       float64 // p99 ÷ Little's-law wait at most; 0: no goal
	perSecond float64 // successful calls per second ÷ the bare run's at least (no rate quota)
	took      float64 // time the calls took ÷ the bare run's at most (Cell.Calls)

	// With priority classes (Cell.Interactive).
	interactiveP99 time.Duration // Interactive's p99 at most; 0: no goal
	batchShare     float64       // Batch's share of the admissions at least
	classless      float64       // settled goodput and throttled share within this of the classless run's
}

// goalsOf returns c's goals: stricter where headers come on every answer,
// looser where the round trip jitters and 5% of answers fail; no capacity
// goals where the server has no rate quota.
func goalsOf(c Cell) goals {
	g := goals{goodput: 0.98, throttled: 0.01, p99: 1.2}
	switch {
	case c.headersEvery():
		g.goodput, g.throttled = 0.99, 0.005
	case c.Faults.UnavailableRate > 0:
		g.goodput = 0.95
	}
	if c.Calls > 0 {
		return goals{took: 1.5}
	}
	if !c.rated() {
		return goals{perSecond: 0.9}
	}
	if c.classed() {
		// Little's law holds for the callers as a whole, not for each
		// class: the p99 of all calls is the Batch crowd's.
		g.p99 = 0
		// Batch keeps its floor (adaptive's default, 10%), within a
		// point; a few Interactive callers in front of a Batch crowd
		// wait for one turn each of the others and their own, and a
		// round trip.
		g.batchShare, g.classless = 0.09, 0.01
		if batch := c.callers() - c.Interactive; c.Interactive < batch {
			g.interactiveP99 = time.Duration(float64(c.Interactive+1)/c.rate(c.limit(false))*float64(time.Second)) + c.rtt()
		}
	}
	if c.Step == 0 {
		if c.headersEvery() {
			g.cold = 4
		} else {
			// The first window's exhaustion throttles what is in flight;
			// finding the refill takes about one probe per doubling.
			perClient := float64(c.callers()) / float64(c.clients())
			g.cold = min(perClient, float64(c.Quota.Limit)/2) + math.Log2(float64(c.window())/float64(c.rtt())) + 8
		}
	}
	return g
}

// Misses lists the goals the row's run misses, against its bare and
// classless runs where it has them.
func (row Row) Misses() []string {
	r, g := row.Result, goalsOf(row.Result.Cell)
	m := r.misses(row.Bare)
	for _, cr := range r.Classes {
		switch {
		case cr.Priority == transport.Interactive && g.interactiveP99 > 0 && cr.P99 > g.interactiveP99:
			m = append(m, "interactive p99 > "+durationString(g.interactiveP99))
		case cr.Priority == transport.Batch && cr.Share < g.batchShare:
			m = append(m, fmt.Sprintf("batch share < %.0f%%", 100*g.batchShare))
		}
	}
	if u := row.Classless; u != nil && g.classless > 0 {
		if math.Abs(r.SettledGoodput-u.SettledGoodput) > g.classless || math.Abs(r.SettledThrottled-u.SettledThrottled) > g.classless {
			m = append(m, fmt.Sprintf("> %.0f point from classless", 100*g.classless))
		}
	}
	return m
}

// misses lists the goals r misses, but those of its classes; bare is the
// bare run of the same cell, or nil.
func (r *Result) misses(bare *Result) []string {
	c, g := r.Cell, goalsOf(r.Cell)
	var m []string
	if !c.rated() {
		if bare != nil && g.took > 0 && float64(r.Took) > g.took*float64(bare.Took) {
			m = append(m, fmt.Sprintf("took %.1f× bare", float64(r.Took)/float64(bare.Took)))
		}
		if bare != nil && g.perSecond > 0 && r.SettledPerSecond < g.perSecond*bare.SettledPerSecond {
			m = append(m, fmt.Sprintf("calls/s %.0f%% of bare", 100*r.SettledPerSecond/bare.SettledPerSecond))
		}
		if r.Failed > 0 && (!c.sheds() || bare == nil || r.Failed > bare.Failed) {
			m = append(m, fmt.Sprintf("%d failed", r.Failed))
		}
		return m
	}
	if r.SettledGoodput < g.goodput {
		m = append(m, fmt.Sprintf("goodput < %.0f%%", 100*g.goodput))
	}
	if r.SettledThrottled-r.SettledShed > g.throttled {
		m = append(m, fmt.Sprintf("throttled > %.1f%%", 100*g.throttled))
	}
	if g.cold > 0 && float64(r.ColdThrottles-r.ColdShed)/float64(c.clients()) > g.cold {
		m = append(m, fmt.Sprintf("cold > %.0f", g.cold))
	}
	if g.p99 > 0 && r.Little > 0 && float64(r.P99) > g.p99*float64(r.Little) {
		m = append(m, fmt.Sprintf("p99 > %.1f×Little", g.p99))
	}
	if r.Failed > 0 {
		m = append(m, fmt.Sprintf("%d failed", r.Failed))
	}
	if r.Replays > 0 {
		m = append(m, "nonce reused")
	}
	if r.Cut {
		m = append(m, "cut short")
	}
	return m
}
