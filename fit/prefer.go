package fit

import "math"

// Prefers reports whether rule a explains the answers held better than
// rule b does, by more than chance could: a must cost less than b by
// more than √ of b's cost. Each is scored as it stands: at its own Limit,
// not searched, and all of that Limit ours, no run of throttles booked
// to others (a Fit's Limit less Others is the rule it says we may send
// by). A fixed window's Start is placed where the record puts it best: a
// phase taken in another clock's frame is not what is judged.
//
// It is how a pacer tells that the rule it paces by is wrong and the
// fit's right: a rule fitted to the record beats any other on it by a
// little, by luck, but not by that much. A Record without a throttle
// prefers neither, nor does any Record where either rule lacks what its
// kind needs (a kind of the family; a window above zero for a fixed
// window or a sliding log).
func (r *Record) Prefers(a, b Rule) bool {
	if !a.wellFormed() || !b.wellFormed() {
		return false
	}
	f := fitters.Get().(*fitter)
	defer fitters.Put(f)
	return f.prefers(r, a, b)
}

// prefers is Prefers on fitter f, whatever it last fitted: a fixed
// window's start is placed by the refills of r (see judge), which are
// found anew, not read from the record f fitted before.
func (f *fitter) prefers(r *Record, a, b Rule) bool {
	f.samples(r, r.delay())
	if !f.begin() {
		return false
	}
	f.refills()
	return f.judge(a).beats(f.judge(b))
}

// beats reports whether c costs less than d on the whole record by more
// than chance could: by more than √ of d's cost.
func (c cand) beats(d cand) bool {
	tc, td := c.total(), d.total()
	return td-tc > math.Sqrt(max(td, 1))
}

// judge scores rule r as it stands: at its own Limit, all of which is
// ours, so no run of throttles is booked to others (see fills); a fixed
// window's start placed where the record puts it best, from r's own on.
func (f *fitter) judge(r Rule) cand {
	switch r.Kind {
	case None:
		return f.score(r)
	case Fixed:
		return f.placeStart(f.asItStands(r), f.asItStands)
	}
	return f.asItStands(r)
}

// asItStands scores rule r at its own Limit, all of it ours.
func (f *fitter) asItStands(r Rule) cand {
	f.loads(r, false)
	return cand{rule: r, cost: f.costAt(r.Limit), base: f.base, all: f.noneCost, n: f.noneJudged}
}

// costAt returns the cost of Limit l on the loads tallied (see threshold).
func (f *fitter) costAt(l int64) float64 {
	above, below := 0, 0 // below: in halves
	for ld := range f.top + 1 {
		if ld >= l {
			above += int(f.hs[ld])
		} else {
			below += int(f.ht[ld])
		}
	}
	if f.past >= l {
		above += f.hsPast
	} else {
		below += f.htPast
	}
	return float64(heavy*above) + float64(below)/2
}

// total is c's cost on the whole record: on the answers it does not
// judge, what no quota costs (see score).
func (c cand) total() float64 { return c.cost + c.all - c.base }
