package fit

import (
	"math"
	"time"
)

// changeRuns is how many of the newest runs of throttles Change judges a
// rule on: fewer see a change sooner, but leave chance more room (a
// stray or two among few runs of throttles is a large share of them).
const changeRuns = 4

// Change looks for a change point: where the server's rule may have
// changed, so that the record's older answers, which a fit weighs with
// the newer, hold it at the rule before. It judges rule r, as Prefers
// does (at its own Limit, all of it ours), on the newest answers: from
// the first of the runs of throttles, newest back, that r does not
// explain (each came at a count below its Limit), and at least the
// newest changeRuns runs, or earlier where r needs more time to judge a
// count (two of its windows, or two times its bucket takes to fill).
// Where r explains the runs it judges there no better than no quota
// does, by more than chance, or a success came that it forbids, Change
// returns where those answers begin (the arrival of their first
// throttle, as the record places arrivals) and true.
//
// That is a suspicion, not a proof: a stray or two among few runs
// raises it too. A caller cuts a copy of the record there (CutBefore),
// fits it, and takes the cut where a rule explains the newest answers
// better than r by more than chance (Prefers): the one fitted to them,
// or r at the limit they show (Relimit).
//
// It reports false where the record holds too few runs of throttles
// before those to be cut from, or r is None or lacks what its kind needs.
func (r *Record) Change(rule Rule) (time.Time, bool) {
	if rule.Kind == None || !rule.wellFormed() {
		return time.Time{}, false
	}
	f := fitters.Get().(*fitter)
	defer fitters.Put(f)
	f.samples(r, r.delay())
	if !f.begin() || len(f.runs) <= changeRuns {
		return time.Time{}, false
	}
	need := int64(0) // how long the newest answers must span for rule to judge them
	switch rule.Kind {
	case Fixed, Sliding, FirstUse:
		need = 2 * int64(rule.Window)
	case Bucket:
		if rule.Rate > 0 {
			need = int64(min(2*float64(rule.Limit)/rule.Rate*1e9, math.MaxInt64/2))
		}
	}
	// The newest runs r does not explain, back to the first it does: the
	// change came before the first of them.
	f.refills()
	placed := rule
	if rule.Kind == Fixed {
		placed = f.placeStart(f.asItStands(rule), f.asItStands).rule
	}
	load := f.loadsOnly(placed)
	k := len(f.runs) - changeRuns
	for k > 1 && unexplained(load[f.runs[k-1]], rule.Limit) {
		k--
	}
	for k > 0 && f.last-f.s[f.runs[k]].at < need {
		k--
	}
	if k == 0 {
		return time.Time{}, false // the newest answers are the whole record
	}
	from := int(f.runs[k])
	at := f.s[from].at
	f.s = f.s[:copy(f.s, f.s[from:])]
	f.begin()
	f.refills()
	if c := f.judge(rule); c.cost == 0 || c.base-c.cost > math.Sqrt(c.base) {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
}

// unexplained reports whether a run of throttles that began at load ld
// is one a rule of the given limit does not explain: its count was known
// and below the limit.
func unexplained(ld, limit int64) bool {
	return ld != spent && ld != unjudged && ld < limit
}

// CutBefore drops the answers that reached the server before at, as the
// record places arrivals (see Fit.Delay): the record begins again at a
// change point (see Change).
func (r *Record) CutBefore(at time.Time) {
	t, q := at.UnixNano(), int64(r.delay())
	old := r.ring
	start, n := (r.next-r.n+Size)%Size, r.n
	r.n = 0
	for i := range n {
		e := old[(start+i)%Size]
		if e.sent+int64(e.rt)*1000*q/delaySteps >= t {
			r.ring[r.n] = e
			r.n++
		}
	}
	r.next = r.n % Size
}

// Relimit returns rule r at the Limit that explains the answers held
// best, its other parameters kept (a fixed window's start placed anew,
// as Prefers places it), judged as Prefers judges a rule: all of that
// Limit ours. It is the rule in force after a change point that moved
// only the limit, which is how quotas change; a fit of the few answers
// since the change tells a window's length or kind less surely than
// its limit. It returns r as it is where the record holds no throttle,
// or r is None or lacks what its kind needs.
func (r *Record) Relimit(rule Rule) Rule {
	if rule.Kind == None || !rule.wellFormed() {
		return rule
	}
	f := fitters.Get().(*fitter)
	defer fitters.Put(f)
	f.samples(r, r.delay())
	if !f.begin() {
		return rule
	}
	f.refills()
	c := f.asFound(rule)
	if rule.Kind == Fixed {
		c = f.placeStart(c, f.asFound)
	}
	return c.rule
}

// asFound scores rule r's parameters but its Limit, which it sets to the
// one that costs least, all of it ours (no run booked to others).
func (f *fitter) asFound(r Rule) cand {
	f.loads(r, false)
	limit, c := f.threshold()
	r.Limit = limit
	c.rule = r
	return c
}
