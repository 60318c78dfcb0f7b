package fit

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"
)

// Fit is the family fitted to a Record: the member that explains the
// answers best, the best of another kind, and what someone we cannot see
// spends.
type Fit struct {
	Best Rule
	// Score is Best's cost per answer (see the package doc): 0 if it
	// explains every answer it judges; answers it cannot judge cost what
	// they cost no quota.
	Score float64
	// RunnerUp is the best member of another kind than Best's, and
	// RunnerUpScore its score; a sliding log and a window opened on first
	// use, which count a steady stream of requests alike, are not each
	// other's runner-up (see CountsAlike).
	RunnerUp      Rule
	RunnerUpScore float64
	// Others is Ô: of Best's Limit, what someone we cannot see spends,
	// the median shortfall of the counts at which runs of throttles that
	// filled a window began. Only a fixed window, or one opened on first
	// use, tells such runs apart; 0 for the other kinds, and where fewer
	// than three runs filled.
	Others float64
	// Delay is the share of a round trip after which the server counted a
	// request, as fitted: 0 at sending, 1 at the answer.
	Delay float64
	// StartWithin is how far, either way, the start of Best's windows may
	// lie from Best.Start (a fixed window's): the width of the stretch in
	// which the most refills place it. 0 for the other kinds.
	StartWithin time.Duration
	Answers     int // answers the fit was made on
	// Throttles counts the runs of throttles judged (throttles in a row
	// are one), but the first, where the record begins. With none, the
	// record says nothing of a quota, and the fit is None.
	Throttles int
}

// heavy is the cost of a success a rule forbids, against 1 for a
// throttle it does not explain: a success is what the rule said could not
// happen, a throttle it does not explain may be someone else's spending or
// shedding.
const heavy = 4

// Load sentinels: spent, the record began with the rule's count spent (a
// throttle then is explained whatever the Limit; a success, which says
// the first throttle was shed, is not judged); unjudged, the record does
// not say what the rule's count was.
const (
	spent    = math.MaxInt64
	unjudged = -1
)

// sample is an answer as the fit sees it.
type sample struct {
	at    int64 // when the request reached the server, Unix ns (estimated)
	level int32 // requests in flight at sending; 0 if not counted
	thr   bool
}

// before reports whether s is placed before t: it arrived earlier, or
// at the same time and succeeded where t was throttled. Of answers placed
// at one time, the order the server saw them in is unknown, and every
// rule counts only successes: taken first, they give each throttle the
// greatest count it may have met and each success the count it met
// anyway. In the order answered, a throttle answered before the
// successes of its own burst would read as refused below the count.
// Ties otherwise keep the order answered.
func (s sample) before(t sample) bool {
	return s.at < t.at || s.at == t.at && !s.thr && t.thr
}

// fitter holds one fit's working state; a pool keeps them, so a Record
// costs only its ring.
type fitter struct {
	view      // the samples scored
	held view // the view at the delay fitted, kept while its neighbours are tried

	load   []int64 // per sample, under the rule being scored
	hs, ht []int32 // successes and throttles by load
	byM    []int32 // tallyFixed's windows by their successes
	byUsed int     // how much of byM may not be zero
	arcs   []arc
	dists  []dist
	pos    []int64
	edges  []edge
	fill   []bool  // per throttle: its run spent the count (see fills)
	thrAt  []int64 // the throttles' arrivals
	thrC   []int   // and the successes before each
	grants []int64 // the successes' arrivals, in order (see trailing)

	// The loads' tally: successes and throttles by load up to top, those
	// at past, the load past every count the record holds (len(s)), or
	// above, and the successes among them all.
	top            int64
	past           int64
	hsPast, htPast int
	succ           int
	base           float64 // what no quota costs on the answers judged
}

// view is the record's answers as samples at one forward delay, and what
// begin finds in them.
type view struct {
	s    []sample // by arrival
	cum  []int32  // successes before each sample (and all, at the end)
	runs []int32  // where each run of throttles begins

	noneCost   float64 // what no quota costs on the record
	noneJudged int     // the answers it judges: successes, and runs of throttles

	a0     int64 // the first throttle's arrival: the record begins there
	i0     int   // its index in s
	refill int64 // the first success after it; 0 if none
	last   int64 // the last arrival
	rt     int64 // the mean round trip: a request arrived within it of where its sample places it
	levels bool  // some answers count requests in flight
}

var fitters = sync.Pool{New: func() any { return new(fitter) }}

// cand is a rule scored.
type cand struct {
	rule Rule
	cost float64 // on the answers it judges
	off  bool    // its window is off the grid: of equals, one on it is preferred
	base float64 // what no quota costs on the answers it judges
	all  float64 // what no quota costs on all answers
	n    int     // the answers no quota judges
}

// explains reports whether c explains more than chance does. On the
// answers c judges, shedding that refuses T of them at random leaves some
// count that, by luck, explains about √T: a quota must do better than no
// quota by more than that.
func (c cand) explains() bool {
	return c.rule.Kind == None || c.base-c.cost > math.Sqrt(max(c.base, 0))
}

// score is c's cost per answer: on the answers it does not judge (a
// trailing window's first stretch, a bucket's first token) it costs what
// no quota costs. Answers are counted as no quota judges them: each
// success, and each run of throttles once.
func (c cand) score() float64 {
	if c.n == 0 {
		return math.Inf(1)
	}
	return c.total() / float64(c.n)
}

// better reports whether c scores below d.
func (c cand) better(d cand) bool {
	if math.IsInf(d.cost, 1) {
		return !math.IsInf(c.cost, 1)
	}
	cs, ds := c.score(), d.score()
	return cs < ds || cs == ds && d.off && !c.off
}

// Fit fits the family to the answers held (see the package doc). A Record
// without a throttle fits None: nothing it holds needs a quota.
func (r *Record) Fit() Fit {
	f := fitters.Get().(*fitter)
	defer fitters.Put(f)
	q := r.delay()
	f.samples(r, q)
	out := Fit{Answers: len(f.s), Delay: float64(q) / delaySteps}
	if !f.begin() {
		return out
	}
	none := f.score(Rule{Kind: None})
	best := none
	out.Throttles = int(none.cost)
	if out.Throttles == 0 {
		return out
	}
	var byKind [len(kindNames)]cand
	for k := range byKind {
		byKind[k].cost = math.Inf(1)
	}
	byKind[None] = best
	try := func(c cand) {
		if c.better(byKind[c.rule.Kind]) {
			byKind[c.rule.Kind] = c
		}
		if c.explains() && c.better(best) {
			best = c
		}
	}
	span := f.last - f.a0
	off := f.offGrid()
	// The best fixed window: of the grid, each with its start placed
	// before they are compared (a start in the middle of the refills'
	// stretch may cut a burst that a better one does not, and a longer
	// window, with fewer ends, would win by that alone: answers paced at
	// 50 per 1 s, with a probe's throttle each 5 s, read as 247 per 5 s),
	// and of the windows off it (refined within what the refills allow,
	// then placed).
	top, mid := cand{cost: math.Inf(1)}, cand{cost: math.Inf(1)}
	for _, w := range grid {
		if int64(w) <= span {
			c := f.fixed(w)
			if c.better(mid) {
				mid = c
			}
			if c = f.placeStart(c, f.score); c.better(top) {
				top = c
			}
		}
	}
	// Off the grid: the scan's peaks, each at the length the refills
	// narrowed it to; then the best at offTries lengths within what they
	// allow.
	offBest, offAt := cand{cost: math.Inf(1)}, offWindow{}
	for _, o := range off {
		if int64(o.w) > span {
			continue
		}
		if c := f.fixed(o.w); c.better(offBest) {
			offBest, offAt = c, o
		}
	}
	if !math.IsInf(offBest.cost, 1) {
		for k := range offTries {
			w := offAt.lo + (offAt.hi-offAt.lo)*time.Duration(k)/(offTries-1)
			if d := f.fixed(w); d.better(offBest) {
				offBest = d
			}
		}
		// Searched over many lengths, a window off the grid explains a
		// little more by luck: it must beat the grid's by more than
		// chance does.
		offBest = f.placeStart(offBest, f.score)
		if offBest.off = true; math.IsInf(top.cost, 1) || offBest.beats(top) {
			top = offBest
		}
	}
	if !math.IsInf(top.cost, 1) {
		try(top)
	}
	for _, w := range grid {
		// A trailing window is judged once the record holds two.
		if 2*int64(w) <= span {
			try(f.score(Rule{Kind: Sliding, Window: w}))
		}
	}
	// A trailing window off the grid, as the successes bound it at the
	// limit of the best trailing window so far, and of the best fixed
	// one, its start placed and not (their counts differ where a window's
	// ends cut the bursts: either may be the log's): a
	// sliding log's refills follow our own sends, so no spacing of them
	// shows its length. The longest the successes allow first: of
	// equals, the most restrictive (a window the scan below finds as
	// well may be a fraction of it); then the middle of what the
	// throttles leave, where they bound it from below. Within a round
	// trip or two of a round length, it must beat the grid's best by
	// more than chance: arrivals placed a little off make a length a
	// little off the server's explain a throttle or two more.
	onGrid := byKind[Sliding]
	limits := [...]int64{onGrid.rule.Limit, top.rule.Limit, mid.rule.Limit}
	for i, l := range limits {
		if slices.Contains(limits[:i], l) {
			continue
		}
		lo, hi, ok := f.trailing(l)
		if !ok {
			continue
		}
		ws := [...]int64{hi, 0}
		if lo > 0 {
			ws[1] = lo + (hi-lo)/2
		}
		for _, w := range ws {
			if w > 0 && 2*w <= span {
				c := f.score(Rule{Kind: Sliding, Window: time.Duration(w)})
				c.off = !c.rule.OnGrid()
				_, near := RoundWindow(time.Duration(w-2*f.rt), time.Duration(w+2*f.rt))
				if !c.off || !near || math.IsInf(onGrid.cost, 1) || c.beats(onGrid) {
					try(c)
				}
			}
		}
	}
	for _, o := range off {
		if 2*int64(o.w) <= span {
			c := f.score(Rule{Kind: Sliding, Window: o.w})
			c.off = true
			try(c)
		}
	}
	if lo, hi := f.bucketRates(); lo > 0 {
		try(f.bucket(lo, hi))
	}
	if f.levels {
		try(f.score(Rule{Kind: Cap}))
	}
	// A window opened on first use, where it beats the best fixed
	// window (placed) and sliding log by more than chance (see
	// firstUse); else it is only the best of its kind.
	if c := f.firstUse(off, span); !math.IsInf(c.cost, 1) {
		sl := byKind[Sliding]
		if (math.IsInf(top.cost, 1) || c.beats(top)) && (math.IsInf(sl.cost, 1) || c.beats(sl)) {
			try(c)
		} else {
			byKind[FirstUse] = c
		}
	}
	runner := cand{cost: math.Inf(1)}
	for k, c := range byKind {
		if !CountsAlike(Kind(k), best.rule.Kind) && c.better(runner) {
			runner = c
		}
	}
	// The forward delay: a step either way, for the best quota (the
	// runner-up, if no quota is best); kept if it explains more.
	quota := best
	if quota.rule.Kind == None {
		quota = runner
	}
	if k := quota.rule.Kind; k != None && !math.IsInf(quota.cost, 1) {
		// The samples at q are kept, not taken and sorted again, if the
		// fit stays there.
		q0 := q
		f.view, f.held = f.held, f.view
		for _, d := range [...]int{q - 1, q + 1} {
			if d < 0 || d > delaySteps {
				continue
			}
			f.samples(r, d)
			f.begin()
			c := f.again(quota.rule, time.Duration(int64(d-q)*r.meanRT()/delaySteps))
			if !c.explains() || !c.better(quota) {
				continue
			}
			quota, q = c, d
			switch {
			case best.rule.Kind == None:
				best, runner = c, none
			case k == best.rule.Kind:
				best = c
			default:
				runner = c
			}
		}
		if q == q0 {
			f.view, f.held = f.held, f.view
		} else {
			f.samples(r, q)
			f.begin()
		}
		r.delayQ = uint8(q) + 1
		out.Delay = float64(q) / delaySteps
	}
	out.Best, out.Score = best.rule, best.score()
	if !math.IsInf(runner.cost, 1) && runner.rule.Kind != best.rule.Kind {
		out.RunnerUp, out.RunnerUpScore = runner.rule, runner.score()
	}
	out.Others = f.others(best.rule)
	if best.rule.Kind == Fixed {
		f.refills()
		lo, hi := f.phase(best.rule.Window)
		out.StartWithin = hi - lo
		if hi == lo {
			out.StartWithin = best.rule.Window / 2 // no refill places it
		}
	}
	return out
}

// firstUse returns the best window opened on first use: of the grid's
// lengths and of those the refills space out (its refills follow our
// sends, but a tenant that sends steadily opens each window soon after
// the last one ended). Its windows follow the arrivals, and the arrivals
// follow the pace, so on a steady pace a fixed window or a sliding log of
// the same length explains much the same answers: Fit takes it only where
// it beats both by more than chance.
func (f *fitter) firstUse(off []offWindow, span int64) cand {
	best := cand{cost: math.Inf(1)}
	for _, w := range grid {
		if int64(w) <= span {
			if c := f.score(Rule{Kind: FirstUse, Window: w}); c.better(best) {
				best = c
			}
		}
	}
	for _, o := range off {
		if int64(o.w) <= span {
			c := f.score(Rule{Kind: FirstUse, Window: o.w})
			if c.off = true; c.better(best) {
				best = c
			}
		}
	}
	return best
}

// again scores rule r's kind again at its time parameters, on samples
// taken shift later than those r was fitted on (a fixed window's start
// moves with them).
func (f *fitter) again(r Rule, shift time.Duration) cand {
	if r.Kind == Fixed {
		r.Start = r.Start.Add(shift)
	}
	return f.score(r)
}

// samples sets f.s from the record's answers, each taken to reach the
// server q delay steps into its round trip.
func (f *fitter) samples(r *Record, q int) {
	f.s = slices.Grow(f.s[:0], r.n)[:r.n]
	start := (r.next - r.n + Size) % Size
	// The ring holds them oldest first from start, wrapping at its end.
	older, newer := r.ring[start:min(start+r.n, Size)], r.ring[:max(start+r.n-Size, 0)]
	var rt int64
	for i, e := range older {
		f.s[i] = sample{at: e.sent + int64(e.rt)*1000*int64(q)/delaySteps, level: int32(e.level), thr: e.thr}
		rt += int64(e.rt)
	}
	s := f.s[len(older):]
	for i, e := range newer {
		s[i] = sample{at: e.sent + int64(e.rt)*1000*int64(q)/delaySteps, level: int32(e.level), thr: e.thr}
		rt += int64(e.rt)
	}
	f.rt = rt * 1000 / int64(max(r.n, 1))
}

// begin sorts the samples by arrival and finds where the record begins.
// It reports whether there is a throttle to fit.
func (f *fitter) begin() bool {
	// By arrival (see before). The record is in the order answers came,
	// nearly that already: an insertion sort moves each answer past the
	// few that came back faster. Past a few moves an answer, it falls
	// back to a merge sort.
	moves := 0
	for i := 1; i < len(f.s) && moves <= 8*len(f.s); i++ {
		for j := i; j > 0 && f.s[j].before(f.s[j-1]); j-- {
			f.s[j], f.s[j-1] = f.s[j-1], f.s[j]
			moves++
		}
	}
	if moves > 8*len(f.s) {
		slices.SortStableFunc(f.s, func(a, b sample) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(b2i(a.thr), b2i(b.thr)))
		})
	}
	f.a0, f.i0, f.refill, f.levels = 0, -1, 0, false
	for i, s := range f.s {
		f.levels = f.levels || s.level > 0
		switch {
		case s.thr && f.i0 < 0:
			f.a0, f.i0 = s.at, i
		case !s.thr && f.i0 >= 0 && f.refill == 0:
			f.refill = s.at
		}
	}
	if f.i0 < 0 {
		return false
	}
	f.last = f.s[len(f.s)-1].at
	f.cum = slices.Grow(f.cum[:0], len(f.s)+1)[:len(f.s)+1]
	f.cum[0] = 0
	for i, s := range f.s {
		f.cum[i+1] = f.cum[i] + int32(b2i(!s.thr))
	}
	// No quota explains no throttle but the first, which began the
	// record: every member is spent there. Throttles in a row are one
	// event to no quota as to the others (see tally): a run counts once.
	f.runs = f.runs[:0]
	judged := 0
	for i, s := range f.s {
		if !s.thr || i == 0 || !f.s[i-1].thr {
			judged++
			if s.thr {
				f.runs = append(f.runs, int32(i))
			}
		}
	}
	f.noneCost, f.noneJudged = float64(len(f.runs)-1), judged
	f.load = slices.Grow(f.load[:0], len(f.s))[:len(f.s)]
	return true
}

// score computes each sample's load under r's time parameters, then the
// Limit that costs least.
func (f *fitter) score(r Rule) cand {
	if r.Kind == None {
		return cand{rule: r, cost: f.noneCost, base: f.noneCost, all: f.noneCost, n: f.noneJudged}
	}
	f.loads(r, true)
	limit, c := f.threshold()
	r.Limit = limit
	c.rule = r
	return c
}

// loads tallies, for threshold, each sample's load under r's time
// parameters, with the record's beginning: at the first throttle the
// rule's count was spent, by requests the record does not hold. booked
// says a run of throttles that filled a fixed window may be booked to
// others (see fills). f.load is left set but for a fixed window, which
// is tallied a window at a time (tallyFixed); loadsOnly sets it.
func (f *fitter) loads(r Rule, booked bool) {
	if r.Kind == Fixed && f.tallyFixed(r, booked) {
		return
	}
	f.tally(f.loadsOnly(r), r.Kind, booked)
}

// loadsOnly sets f.load for r's time parameters (see loads) and returns
// it, untallied.
func (f *fitter) loadsOnly(r Rule) []int64 {
	load := f.load[:len(f.s)]
	switch r.Kind {
	case Fixed:
		f.loadsFixed(load, r)
	case Sliding:
		f.loadsSliding(load, int64(r.Window))
	case FirstUse:
		f.loadsFirstUse(load, int64(r.Window))
	case Bucket:
		f.loadsBucket(load, r)
	case Cap:
		for i, s := range f.s {
			load[i] = int64(s.level) - 1
			if s.level == 0 {
				load[i] = unjudged
			}
		}
	}
	return load
}

// loadsFixed: the successes before each sample in its window. The window
// of the first throttle is spent from it on.
func (f *fitter) loadsFixed(load []int64, r Rule) {
	w, start := int64(r.Window), r.Start.UnixNano()
	k0 := floorDiv(f.a0-start, w)
	from, next, first, granted := 0, int64(math.MinInt64), false, false
	for i, s := range f.s {
		if s.at >= next {
			k := floorDiv(s.at-start, w)
			from, next, first = i, start+(k+1)*w, k == k0
		}
		load[i] = int64(f.cum[i] - f.cum[from])
		if first && i >= f.i0 {
			// Spent until a success in it says the first throttle was
			// not (it was shed, or others spent): then nothing in it is
			// known.
			granted = granted || !s.thr
			load[i] = spent
			if granted {
				load[i] = unjudged
			}
		}
	}
}

// tallyFixed tallies a fixed window's loads as tally does, a window at a
// time rather than an answer at a time, and reports whether it did: it
// leaves rules whose windows' arithmetic could overflow to loadsFixed
// and tally, and does not set f.load.
//
// In a window the successes' loads are 0, 1, … one each, so a window
// with m of them adds one to the successes at each load below m. A
// throttle's load is the successes before it in its window, the same
// for the rest of its run there: only where a run begins, or goes on
// into a new window (at load 0), is a throttle scored, and not even
// there where the window before ended at load 0 too. A run is a fill
// (see fills) where no success follows in its window: the next one
// comes at load 0 in a later window, or never. The first throttle's
// window (see loadsFixed) holds nothing before it but successes; from
// it on, its run is spent and all after unjudged.
func (f *fitter) tallyFixed(r Rule, booked bool) bool {
	const far = 1 << 61
	s, cum, n := f.s, f.cum, len(f.s)
	w, start := int64(r.Window), r.Start.UnixNano()
	if w <= 0 || w >= far || start <= -far || start >= far || s[0].at <= -far || s[n-1].at >= far {
		return false
	}
	k0 := floorDiv(f.a0-start, w)
	hs := slices.Grow(f.hs[:0], n+2)[:n+2]
	ht := slices.Grow(f.ht[:0], n+2)[:n+2]
	// by is, for each m, the windows (or stretches) with m successes
	// tallied. It is left zero, and cleared first where a panic may have
	// left it otherwise.
	by := slices.Grow(f.byM[:0], n+1)[:n+1]
	clear(by[:min(f.byUsed, len(by))])
	f.byUsed = len(by)
	top, most, succ, unj, htPast := int64(0), 0, 0, 0, 0
	hs[0], ht[0] = 0, 0
	runs := f.runs
	zero := false // the window before ended at load 0
	// throttle scores the throttle at t, in the window that ends before
	// j, at load ld: a fill where no success follows it in the window.
	throttle := func(t, j int, ld int64) {
		cost := int32(2)
		if booked && cum[j] == cum[t] && (ld > 0 || cum[n] == cum[j]) {
			cost = 1
		}
		if top < ld {
			clear(hs[top+1 : ld+1])
			clear(ht[top+1 : ld+1])
			top = ld
		}
		ht[ld] += cost
	}
	for i := 0; i < n; {
		k := floorDiv(s[i].at-start, w)
		end := start + (k+1)*w
		// j: the next window's first sample, galloping from i+1.
		lo, step := i+1, 1
		for lo < n && s[lo].at < end {
			lo += step
			step *= 2
		}
		hi := min(lo, n)
		lo = max(lo-step/2, i+1) // the last probe still in the window, or i+1
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); s[mid].at < end {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		j := lo
		if k == k0 {
			// Successes before the first throttle, then its run, spent
			// (one throttle scored, a fill wherever it may be one), then
			// nothing judged: runs that begin there are not judged.
			m := int(cum[f.i0] - cum[i])
			by[m]++
			succ += m
			most = max(most, m)
			if booked {
				htPast++
			} else {
				htPast += 2
			}
			for len(runs) > 0 && int(runs[0]) < j {
				if int(runs[0]) > f.i0 {
					unj++
				}
				runs = runs[1:]
			}
			zero = false
			i = j
			continue
		}
		m := int(cum[j] - cum[i])
		by[m]++
		succ += m
		most = max(most, m)
		if s[i].thr && i > 0 && s[i-1].thr && !zero {
			throttle(i, j, 0)
		}
		for len(runs) > 0 && int(runs[0]) < j {
			at := int(runs[0])
			throttle(at, j, int64(cum[at]-cum[i]))
			runs = runs[1:]
		}
		zero = m == 0
		i = j
	}
	if most > 0 && top < int64(most-1) {
		clear(ht[top+1 : most])
		top = int64(most - 1)
	}
	// The successes at load l: the windows with more than l.
	acc := int32(0)
	for l := most - 1; l >= 0; l-- {
		acc += by[l+1]
		hs[l] = acc
	}
	clear(by[:most+1])
	f.byM, f.byUsed = by, 0
	f.hs, f.ht, f.top, f.succ, f.base = hs, ht, top, succ, f.noneCost-float64(unj)
	f.past, f.hsPast, f.htPast = int64(n), 0, htPast
	return true
}

// loadsSliding: the successes in the trailing window before each sample.
// Until the first refill the log was full. After it, until a window has
// passed, the log also holds grants from before the record, how many
// unknown: a throttle then is not judged.
func (f *fitter) loadsSliding(load []int64, w int64) {
	j := 0
	end := f.a0 + w
	for i, s := range f.s {
		for f.s[j].at <= s.at-w {
			j++
		}
		load[i] = int64(f.cum[i] - f.cum[j])
		if s.thr && s.at < end && i >= f.i0 {
			if f.refill == 0 || s.at < f.refill {
				load[i] = spent
			} else {
				load[i] = unjudged
			}
		}
	}
}

// loadsFirstUse: the successes before each sample in its window, where
// the first arrival after a window ended opens the next. Before the first
// throttle, where windows began is unknown: nothing there is judged. The
// first throttle's window is spent until the success after it, which
// opened the next window (a request that arrives in a window spent is
// throttled; the one that opens a window is granted): from there on the
// arrivals place every window.
func (f *fitter) loadsFirstUse(load []int64, w int64) {
	from, end := -1, int64(0)
	for i, s := range f.s {
		switch {
		case i < f.i0:
			load[i] = unjudged
			continue
		case from < 0 && s.thr:
			load[i] = spent
			continue
		case from < 0 || s.at >= end:
			from, end = i, s.at+min(w, math.MaxInt64-max(s.at, 0))
		}
		load[i] = int64(f.cum[i] - f.cum[from])
	}
}

// loadsBucket: the tokens owed before each sample. Empty at the first
// throttle (less than a token): from there the tokens are z, earned less
// granted, and as much as a token more, less what the depth cut off when
// z last peaked; so the bucket grants while z ≥ 1 and z has fallen from
// its peak by less than the depth, and grants nothing while z < 0.
// Before the first throttle, the bucket is taken as full at the record's
// first answer.
func (f *fitter) loadsBucket(load []int64, r Rule) {
	m := newMeter(r, f.s[0].at)
	for i, s := range f.s[:f.i0] {
		load[i] = m.load(s.at, 0)
		if !s.thr {
			m.take(s.at)
		}
	}
	perNs := r.Rate / 1e9
	a0, c0 := f.a0, f.cum[f.i0]
	cum := f.cum[f.i0:len(f.s)]
	load = load[f.i0:len(f.s)]
	peak := 0.0
	for i, s := range f.s[f.i0:] {
		z := perNs*float64(s.at-a0) - float64(cum[i]-c0)
		// Not max, whose care for NaNs costs here: where the rate is
		// not a number, or infinite, z is NaN and every load below
		// comes to 0 whichever peak is kept.
		if z > peak {
			peak = z
		}
		switch d := peak - z; {
		case z < -1e-9:
			load[i] = spent
		case z < 1-1e-9:
			// The first throttle left less than a token, how much
			// unknown: whether one is there now is unknown too.
			load[i] = unjudged
		case d > 1e-9:
			load[i] = tokens(d)
		default:
			load[i] = 0
		}
	}
}

// tally counts the samples by load for threshold: successes and
// throttles (the first of each run, in halves) at each load, and what no
// quota costs on the answers judged; booked as for loads.
//
// It runs backwards, in one pass: whether a throttle is the first of its
// run looks only at the sample before it, and whether its run was a fill
// (see fills) only at the success after it.
func (f *fitter) tally(load []int64, kind Kind, booked bool) {
	s := f.s[:len(load)]
	n := len(s) + 2
	hs := slices.Grow(f.hs[:0], n)[:n]
	ht := slices.Grow(f.ht[:0], n)[:n]
	top, succ, unj := int64(0), 0, 0
	hs[0], ht[0] = 0, 0
	// Past every count the record holds, loads are all alike: they are
	// tallied apart, so that hs and ht stay as short as the counts seen.
	past, hsPast, htPast := int64(len(s)), 0, 0
	// The load of the next success, as fills takes it: −1 for a new
	// window, or none; and whether runs may be fills at all (never, if
	// next stays above every load).
	next, noFill := int64(-1), !filled(kind) || !booked
	if noFill {
		next = spent
	}
	for i := len(s) - 1; i >= 0; i-- {
		ld := load[i]
		if !s[i].thr {
			if !noFill {
				next = ld
				if ld == unjudged || ld == spent {
					next = -1
				}
			}
			switch {
			case ld == unjudged || ld == spent:
				// Not judged; at spent, the first throttle may have been
				// shed, not a sign the count was spent.
				continue
			case ld >= past:
				hsPast++
			default:
				if top < ld {
					clear(hs[top+1 : ld+1])
					clear(ht[top+1 : ld+1])
					top = ld
				}
				hs[ld]++
			}
			succ++
			continue
		}
		after := i > 0 && s[i-1].thr // not the first of its run
		if ld == unjudged {
			if !after {
				unj++ // not judged: no quota is not judged on it either
			}
			continue
		}
		if after && load[i-1] == ld {
			// Throttles in a row at one load are one event, the count
			// spent: only the run's first is scored.
			continue
		}
		// Booked to others, a fill costs half (see threshold).
		cost := int32(2)
		if next < ld {
			cost = 1
		}
		if ld >= past {
			htPast += int(cost)
			continue
		}
		if top < ld {
			clear(hs[top+1 : ld+1])
			clear(ht[top+1 : ld+1])
			top = ld
		}
		ht[ld] += cost
	}
	f.hs, f.ht, f.top, f.succ, f.base = hs, ht, top, succ, f.noneCost-float64(unj)
	f.past, f.hsPast, f.htPast = past, hsPast, htPast
}

// fills sets f.fill for each throttle of a fixed window (or one opened
// on first use) that begins a run which spent the window's count: the success after the run comes in
// a later window, or the record ends first. Shedding refuses one here and
// there, and the success after comes in the same window. (A trailing
// window's or a bucket's count falls all the time, so the success after a
// run says nothing of why it ended: for them no run is a fill.) Where
// the runs may not be booked to others (a rule judged as it stands, see
// Record.Prefers), none is a fill either.
func (f *fitter) fills(load []int64, kind Kind, booked bool) {
	f.fill = slices.Grow(f.fill[:0], len(load))[:len(load)]
	clear(f.fill)
	if !filled(kind) || !booked {
		return
	}
	next := int64(-1) // the load of the next success; −1: a new window, or none
	for i := len(load) - 1; i >= 0; i-- {
		ld := load[i]
		if !f.s[i].thr {
			next = ld
			if ld == unjudged || ld == spent {
				next = -1
			}
			continue
		}
		f.fill[i] = next < ld
	}
}

// filled reports whether a run of throttles under a rule of kind k may
// be a fill: a fixed window's, or one opened on first use, whose count
// falls only when a new window begins.
func filled(k Kind) bool { return k == Fixed || k == FirstUse }

// threshold returns the Limit that costs least on the loads tallied (the
// smallest of equals: the most grants seen under it), and its cost. A
// sample is granted under Limit L when its load is below L:
//
//	cost(L) = heavy·(successes at loads ≥ L) + (runs of throttles at loads < L)
//
// where a run that was a fill of a fixed window (see fills) costs half:
// the rule explains it with someone else's spending, which Ô then
// estimates.
func (f *fitter) threshold() (int64, cand) {
	// In halves, so the sums are exact integers: the cost is best/2.
	hs, ht := f.hs[:f.top+1], f.ht[:f.top+1]
	above := f.succ - int(hs[0])
	below := int(ht[0])
	best, bestL := 2*heavy*above+below, int64(1) // at L = 1
	for l := 1; l < len(hs); l++ {
		above -= int(hs[l])
		below += int(ht[l])
		if cost := 2*heavy*above + below; cost < best {
			best, bestL = cost, int64(l)+1
		}
	}
	// Between top and past, the cost does not change.
	if f.hsPast > 0 || f.htPast > 0 {
		above -= f.hsPast
		below += f.htPast
		if cost := 2*heavy*above + below; cost < best {
			best, bestL = cost, f.past+1
		}
	}
	return bestL, cand{cost: float64(best) / 2, base: f.base, all: f.noneCost, n: f.noneJudged}
}

// arc is the interval in which a window began: after a throttle and at or
// before the success that followed it.
type arc struct {
	lo, hi int64
	run    int // the throttles in a row it ends
}

// refills collects f.arcs: each throttle followed, in arrival order, by a
// success, weighed by the run of throttles it ends (a window spent by
// many requests ends a long run; shedding refuses one here and there).
func (f *fitter) refills() {
	f.arcs = f.arcs[:0]
	run := 0
	for i, s := range f.s {
		switch {
		case s.thr:
			run++
		case run > 0:
			f.arcs = append(f.arcs, arc{f.s[i-1].at, s.at, run})
			run = 0
		}
	}
}

// offGrid returns windows the refills space out. Each refill lies in its
// arc, so from the narrowest arc the others lie a whole number of
// windows away, within their width: two arcs d windows apart bound the
// window in ((lo_k − hi_i)/d, (hi_k − lo_i)/d]. A scan of window lengths
// counts, for the arcs nearest the narrowest, how many more lie a whole
// number of windows away than would by chance (an arc as wide as the
// window always does); the best is then narrowed by every arc in turn, at
// the count of windows that fits it, leaving out those none fits (a
// throttle of shedding, not of a window).
func (f *fitter) offGrid() []offWindow {
	f.refills()
	if len(f.arcs) < 3 {
		return nil
	}
	ref := 0
	for i, a := range f.arcs {
		if a.hi-a.lo < f.arcs[ref].hi-f.arcs[ref].lo {
			ref = i
		}
	}
	r := f.arcs[ref]
	f.dists = f.dists[:0]
	for i, a := range f.arcs {
		switch {
		case i > ref && a.lo-r.hi > 0:
			f.dists = append(f.dists, dist{float64(a.lo - r.hi), float64(a.hi - r.lo)})
		case i < ref && r.lo-a.hi > 0:
			f.dists = append(f.dists, dist{float64(r.lo - a.hi), float64(r.hi - a.lo)})
		}
	}
	if len(f.dists) < 2 {
		return nil
	}
	slices.SortFunc(f.dists, func(a, b dist) int { return cmp.Compare(a.lo, b.lo) })
	near := f.dists[:min(len(f.dists), nearArcs)]
	// The peaks of the scan: the best offPeaks, each one step's
	// neighbours below it.
	var peaks [offPeaks]struct{ excess, w float64 }
	prev, rising := math.Inf(-1), false
	for w := near[0].lo / 3; w <= float64(f.last-f.a0)/2; w *= 1 + scanStep {
		excess := 0.0
		for _, d := range near {
			// To within the scan's step, which moves the n-th multiple
			// of w by n steps.
			tol := d.hi * scanStep / 2
			if math.Floor((d.hi+tol)/w) >= max(math.Ceil((d.lo-tol)/w), 1) {
				excess++
			}
			excess -= min(1, (d.hi-d.lo+2*tol)/w)
		}
		if rising && excess < prev {
			// The step before was a peak.
			pw := w / (1 + scanStep)
			for i := range peaks {
				if prev > peaks[i].excess {
					copy(peaks[i+1:], peaks[i:])
					peaks[i].excess, peaks[i].w = prev, pw
					break
				}
			}
		}
		rising, prev = excess > prev || rising && excess == prev, excess
	}
	var out []offWindow
	for _, p := range peaks {
		if p.w == 0 {
			break
		}
		wlo, whi := p.w/(1+scanStep), p.w*(1+scanStep)
		for _, d := range f.dists {
			n := math.Round((d.lo + d.hi) / (wlo + whi))
			lo, hi := d.lo/n, d.hi/n
			if n < 1 || hi <= wlo || lo >= whi {
				continue
			}
			wlo, whi = max(wlo, lo), min(whi, hi)
		}
		out = append(out, offWindow{time.Duration((wlo + whi) / 2), time.Duration(wlo), time.Duration(whi)})
	}
	return out
}

// trailing returns the windows (lo, hi] a sliding log of the given limit
// allows on the record, ok false where nothing bounds them. A success
// says the limit-th success before it had left the log: the window is at
// most the time since that one, and hi is the least such time. A run of
// throttles says the log held limit at its first: the window is longer
// than the time since the limit-th success before it, and lo is the
// greatest such time below hi (one above it is someone else's spending,
// or shedding, or a grant the record began without).
func (f *fitter) trailing(limit int64) (lo, hi int64, ok bool) {
	if limit < 1 {
		return 0, 0, false
	}
	hi = math.MaxInt64
	f.grants = f.grants[:0]
	for i, s := range f.s {
		if k := int64(f.cum[i]) - limit; k >= 0 && !s.thr {
			hi = min(hi, s.at-f.grants[k])
		}
		if !s.thr {
			f.grants = append(f.grants, s.at)
		}
	}
	if hi == math.MaxInt64 || hi <= 0 {
		return 0, 0, false
	}
	for i, s := range f.s {
		if k := int64(f.cum[i]) - limit; k >= 0 && s.thr && (i == 0 || !f.s[i-1].thr) {
			if d := s.at - f.grants[k]; d < hi {
				lo = max(lo, d)
			}
		}
	}
	return lo, hi, true
}

// offWindow is a window off the grid: w, within (lo, hi].
type offWindow struct{ w, lo, hi time.Duration }

// The scan for a window off the grid: the arcs it counts, its step (a
// relative one: a window is judged to within 2% before it is narrowed),
// and how many of its peaks are scored.
const (
	nearArcs = 16
	scanStep = 0.02
	offPeaks = 3
)

// edge is where refill intervals, taken modulo a window, begin (d = 1)
// or end (d = −1).
type edge struct {
	at int64
	d  int
}

// dist is how far an arc lies from the narrowest one: at least lo, at
// most hi, ns.
type dist struct{ lo, hi float64 }

// fixed scores a fixed window of length w with its windows' start in
// the middle of the stretch that the most refills share.
func (f *fitter) fixed(w time.Duration) cand {
	lo, hi := f.phase(w)
	return f.score(Rule{Kind: Fixed, Window: w, Start: time.Unix(0, f.a0).Add((lo + hi) / 2)})
}

// placeStart moves c's windows' start within the stretch the refills
// allow to where it costs least, each start scored by score. The cost
// changes only where the start crosses an arrival, so it is tried
// between arrivals: at most phaseTries places, spread over those in the
// stretch.
func (f *fitter) placeStart(c cand, score func(Rule) cand) cand {
	w := int64(c.rule.Window)
	lo, hi := f.phase(c.rule.Window)
	f.pos = f.pos[:0]
	for _, s := range f.s {
		if p := mod(s.at-f.a0, w); p > int64(lo) && p <= int64(hi) {
			f.pos = append(f.pos, p)
		}
	}
	slices.Sort(f.pos)
	f.pos = slices.Compact(f.pos)
	try := func(p int64) {
		r := c.rule
		r.Start = time.Unix(0, f.a0+p)
		if d := score(r); d.better(c) {
			c = d
		}
	}
	try(int64(lo) + 1)
	n := len(f.pos)
	for i := range min(n, phaseTries) {
		j := i * n / min(n, phaseTries)
		try(f.pos[j]) // just before it: the window begins with it
	}
	return c
}

// phaseTries is how many places placeStart tries for a window's start,
// and offTries how many lengths the refills allow a window off the grid.
const (
	phaseTries = 8
	offTries   = 3
)

// phase returns where windows of length w begin, in [0, w) after the
// record's first throttle: within (lo, hi], the stretch that the most
// refill intervals, taken modulo w and weighed by their runs, hold.
func (f *fitter) phase(w time.Duration) (lo, hi time.Duration) {
	W := int64(w)
	edges := f.edges[:0]
	defer func() { f.edges = edges }()
	for _, a := range f.arcs {
		if a.hi-a.lo >= W {
			continue
		}
		s := mod(a.lo-f.a0, W)
		e := s + a.hi - a.lo
		if d := a.run; e <= W {
			edges = append(edges, edge{s, d}, edge{e, -d})
		} else {
			edges = append(edges, edge{s, d}, edge{W, -d}, edge{0, d}, edge{e - W, -d})
		}
	}
	if len(edges) == 0 {
		return 0, 0
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.d, b.d)) })
	cover, most := 0, 0
	for i, e := range edges {
		cover += e.d
		if cover > most && i+1 < len(edges) {
			most, lo, hi = cover, time.Duration(e.at), time.Duration(edges[i+1].at)
		}
	}
	return lo, hi
}

// bucket scores token buckets with rates in [lo, hi]: bucketTries
// spread evenly (in ratio), then, around the best, steps halved
// bucketSteps times. The cost falls to the true rate and jumps past it
// (the bucket's depth fitted drops), so it has no single valley to
// search.
func (f *fitter) bucket(lo, hi float64) cand {
	at := func(r float64) cand { return f.score(Rule{Kind: Bucket, Rate: r}) }
	step := math.Pow(hi/lo, 1/float64(bucketTries-1))
	best := cand{cost: math.Inf(1)}
	for k := range bucketTries {
		if c := at(lo * math.Pow(step, float64(k))); c.better(best) {
			best = c
		}
	}
	for range bucketSteps {
		step = math.Sqrt(step)
		r := best.rule.Rate
		if c := at(r / step); c.better(best) {
			best = c
		}
		// Of equals the higher: the cost falls all the way to the true
		// rate.
		if c := at(r * step); !best.better(c) {
			best = c
		}
	}
	return best
}

// bucketRates returns the rates a token bucket can have, given the
// throttles. One that throttled at t1 and t2 held less than a token at
// both, so the n successes between took at most one token more than the
// bucket earned: rate ≥ (n − 1)/(t2 − t1), with equality where it never
// filled between (pairs up to bucketPairs throttles apart are taken, and
// those with the first and the last). A throttle at t with no success
// since one at s earned less than a token since: rate < 1/(t − s). If the
// bounds cross (arrivals are estimates), the upper is taken a factor
// bucketSpan above the lower. lo is 0 if no pair bounds the rate, and
// where no bucket grants the answers: where the bounds cross even with
// each arrival moved a round trip the way that widens them. A fixed
// window's burst and the throttles until its next refill read as a
// bucket as fast as the burst that then earned nothing for seconds.
func (f *fitter) bucketRates() (lo, hi float64) {
	f.thrAt, f.thrC = f.thrAt[:0], f.thrC[:0]
	n, okAt := 0, int64(0)
	hi = math.Inf(1)
	loSure, hiSure := 0.0, math.Inf(1) // each arrival moved a round trip to widen them
	for _, s := range f.s {
		if !s.thr {
			n, okAt = n+1, s.at
			continue
		}
		f.thrAt, f.thrC = append(f.thrAt, s.at), append(f.thrC, n)
		if okAt != 0 && s.at > okAt {
			hi = min(hi, 1e9/float64(s.at-okAt))
			if d := s.at - okAt - 2*f.rt; d > 0 {
				hiSure = min(hiSure, 1e9/float64(d))
			}
		}
	}
	bound := func(i, j int) {
		if d := f.thrAt[j] - f.thrAt[i]; d > 0 {
			lo = max(lo, float64(f.thrC[j]-f.thrC[i]-1)/(float64(d)/1e9))
			loSure = max(loSure, float64(f.thrC[j]-f.thrC[i]-1)/(float64(d+2*f.rt)/1e9))
		}
	}
	last := len(f.thrAt) - 1
	for i := range f.thrAt {
		for j := i + 1; j <= min(i+bucketPairs, last); j++ {
			bound(i, j)
		}
		bound(0, i)
		bound(i, last)
	}
	if loSure > hiSure {
		return 0, 0
	}
	if math.IsInf(hi, 1) || hi <= lo*(1+1.0/bucketTries) {
		hi = lo * bucketSpan
	}
	return lo, hi
}

// The search for a bucket's rate: bucketPairs is how far apart
// bucketRates pairs throttles, besides the first and last; bucketTries
// how many rates bucket spreads between the bounds, and bucketSteps how
// many times it halves its step around the best; bucketSpan how far above
// the lower bound they go where the upper says nothing.
const (
	bucketPairs = 16
	bucketTries = 4
	bucketSteps = 2
	bucketSpan  = 1.5
)

// others returns Ô under r, a fixed window (or one opened on first
// use): the median, over the runs of
// throttles that were fills (see fills), of r's Limit less the load the
// run began at. Someone else's spending fills the count early in most
// windows; shedding is no fill, and a window misjudged now and then moves
// no median. 0 if fewer than three fills, or for another kind (which
// tells no fill apart).
func (f *fitter) others(r Rule) float64 {
	if !filled(r.Kind) {
		return 0
	}
	f.fills(f.loadsOnly(r), r.Kind, true)
	short := f.pos[:0] // reused: the shortfalls
	for i, s := range f.s {
		ld := f.load[i]
		first := i == 0 || !f.s[i-1].thr || f.load[i-1] != ld
		if s.thr && first && f.fill[i] && ld != unjudged && ld != spent {
			short = append(short, max(r.Limit-ld, 0))
		}
	}
	f.pos = short
	if len(short) < 3 {
		return 0
	}
	slices.Sort(short)
	return float64(short[len(short)/2])
}

// tokens returns a bucket's debt x as a load: x rounded up, but for
// the float's rounding; past what any record counts (or not a number, as
// a rate overflowing its tick makes), maxTokens.
func tokens(x float64) int64 {
	if !(x < maxTokens) {
		return maxTokens
	}
	return int64(math.Ceil(x - 1e-9))
}

// maxTokens is a load no record reaches: Size answers at most.
const maxTokens = 1 << 40

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
