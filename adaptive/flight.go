package adaptive

// flight is the learner's model of a server that caps how many requests it
// works on at once, N, whatever the rate: a request is throttled when it
// arrives with N of ours in progress there, and gets through as soon as
// one of them is answered. It estimates N̂ from the level each answered
// request was sent at (how many of ours were in flight then, itself
// included) and the limiter then sends at most N̂ at once.
//
// Signals: the answers counted by level, throttled or not (decayed, so
// they are about the last flightHorizon answers). A cap shows as a split:
// throttles rare at levels up to N̂, and many more above it. A count
// limit shows no such split once paced: its throttles come at the window's
// end, at whatever level. Only where strays are common (a throttle that a
// success right after contradicts, see estimator.stray) is the split
// looked for at all, so the bursts of slow start or a window found spent
// never make a cap.
//
// Probing: with the cap found, after flightGap answers (doubled by each
// failed probe) one more, N̂+1, may be in flight, until the answers at that
// level say whether it is throttled as often as the levels below (N grew:
// N̂+1, and the next probe comes at once) or not (the probe failed). A
// split found lower than N̂ (N fell) lowers it at once.
type flight struct {
	ok, thr [flightLevels]uint32 // answers by level: index level-1, the last also holds all above
	n       uint32               // answers counted, all levels

	pend [flightBursts]flightBurst // the latest bursts, not yet counted

	limit   int64  // N̂; 0 while no cap is found
	wait    uint32 // answers to go before the next probe
	probing bool   // N̂+1 may be in flight
	pOK     uint32 // answers at level N̂+1 in the probe, not throttled
	pThr    uint32 // and throttled
	fails   uint8  // probes failed in a row
}

// flightBurst is the answers to requests sent within one flightInstant, not yet
// counted (see flight.answer).
type flightBurst struct {
	key     int64 // admission time / flightInstant, plus one; 0 for none
	lo, hi  int64 // the lowest and highest level among them
	ok, thr int64 // how many got through, how many were throttled
}

// flightInstant is how close together two requests are sent for the
// server to take them in either order: our scheduler's slack.
const flightInstant = schedSlack

// flightBursts is how many bursts are held at once: answers to requests
// sent earlier than the oldest come as late as the round trip's spread.
const flightBursts = 4

// flightLevels is how many levels are counted apart: a cap above it is not
// found (and costs nothing the pacer does not already hold back).
const flightLevels = 64

// flightHorizon is about how many answers the counts are about: all halve
// when they reach twice as many.
const flightHorizon = 1024

// flightEvidence is how many throttles above a level, at least, show a cap
// there.
const flightEvidence = 16

// flightProbe is how many answers at N̂+1 show that N grew: a level where
// a fifth are throttled passes with a chance of about 2%.
const flightProbe = 32

// flightGap is how many answers, at least, separate a probe of N̂+1 from
// the cap's finding or the last failed probe (doubled by each failure):
// a failed probe costs a few throttles among them.
const flightGap = 256

// answer takes the answer to a request admitted at (Unix ns) and sent at
// level; strays says whether stray throttles are common. It reports whether
// the cap in force changed. Requests sent within one flightInstant may
// have reached the server in any order, so their answers are held as a
// burst and counted as the server would have taken them: the ones it let
// through at the lowest levels, the throttled ones at the highest.
func (f *flight) answer(at, level int64, throttled, strays bool) bool {
	before := f.cap()
	key := at/flightInstant + 1
	slot := -1
	for i := range f.pend {
		b := &f.pend[i]
		if b.key == key {
			slot = i
			break
		}
		if slot < 0 || b.key < f.pend[slot].key {
			slot = i // an empty slot (key 0), else the oldest burst
		}
	}
	b := &f.pend[slot]
	if b.key != key {
		f.count(b, strays)
		*b = flightBurst{key: key, lo: level, hi: level}
	}
	b.lo, b.hi = min(b.lo, level), max(b.hi, level)
	if throttled {
		b.thr++
	} else {
		b.ok++
	}
	return f.cap() != before
}

// count counts the answers of burst b, in the order a server with a cap
// would have taken them.
func (f *flight) count(b *flightBurst, strays bool) {
	for i := range b.ok {
		f.tally(min(b.lo+i, b.hi), false, strays)
	}
	for i := range b.thr {
		f.tally(max(b.hi-i, b.lo), true, strays)
	}
}

// tally counts one answer at level, and judges the probe or looks for the
// split as it may.
func (f *flight) tally(level int64, throttled, strays bool) {
	i := min(max(level, 1), flightLevels) - 1
	if throttled {
		f.thr[i]++
	} else {
		f.ok[i]++
	}
	f.n++
	f.decay()
	if f.probing && level == f.limit+1 {
		if throttled {
			f.pThr++
		} else {
			f.pOK++
		}
		f.judge()
	} else if f.wait > 0 {
		f.wait--
	} else if f.limit > 0 && !f.probing {
		f.probing, f.pOK, f.pThr = true, 0, 0
	}
	if throttled && strays {
		if k := f.split(); k > 0 && (f.limit == 0 || k < f.limit) {
			f.found(k)
		}
	}
}

// judge ends a probe of N̂+1: failed as soon as more than flightProbe/16
// of its answers at that level were throttled beyond the share the levels
// up to N̂ see, a success (N grew) once flightProbe of them were not.
func (f *flight) judge() {
	n := f.pOK + f.pThr
	thrBelow, allBelow := f.below(f.limit)
	extra := float64(f.pThr) - float64(thrBelow)/float64(max(allBelow, 1))*float64(n)
	switch {
	case extra > flightProbe/16:
		f.probing = false
		f.fails = min(f.fails+1, 8)
		f.wait = flightGap << f.fails
	case n >= flightProbe:
		f.probing = false
		f.limit++
		f.fails, f.wait = 0, 0
		if f.limit >= flightLevels {
			*f = flight{} // no cap we can count
		}
	}
}

// found sets N̂ to k.
func (f *flight) found(k int64) {
	f.limit, f.probing, f.fails, f.wait = k, false, 0, flightGap
}

// split returns the highest level k at which the answers split as a cap at
// k predicts (see flight), or 0 if none does: at least flightEvidence
// throttles above k, a quarter of the answers there at least; four times
// that many answers at k and below, their throttled share at most an
// eighth of the share above, and at most an eighth at k itself. (Our count
// of requests in flight runs ahead of the server's by the answers on their
// way back, so some requests above N get through.)
func (f *flight) split() int64 {
	var thrAbove, allAbove uint32
	for i := flightLevels - 1; i >= 1; i-- {
		thrAbove += f.thr[i]
		allAbove += f.ok[i] + f.thr[i]
		if thrAbove < flightEvidence || 4*thrAbove < allAbove {
			continue
		}
		k := int64(i) // the levels 1..k are below
		thrBelow, allBelow := f.below(k)
		if allBelow < 4*flightEvidence || 8*f.thr[i-1] > f.ok[i-1]+f.thr[i-1] {
			continue // too few below, or k is itself often throttled
		}
		if 8*uint64(thrBelow)*uint64(allAbove) <= uint64(thrAbove)*uint64(allBelow) {
			return k
		}
	}
	return 0
}

// below returns the throttles and all answers at levels 1..k.
func (f *flight) below(k int64) (thr, all uint32) {
	for i := range min(k, flightLevels) {
		thr += f.thr[i]
		all += f.ok[i] + f.thr[i]
	}
	return thr, all
}

// decay halves the counts when they reach twice flightHorizon.
func (f *flight) decay() {
	if f.n < 2*flightHorizon {
		return
	}
	f.n = 0
	for i := range f.ok {
		f.ok[i], f.thr[i] = f.ok[i]/2, f.thr[i]/2
		f.n += f.ok[i] + f.thr[i]
	}
}

// cap returns the cap on requests in flight in force: N̂, or N̂+1 while
// probing; 0 for none.
func (f *flight) cap() int64 {
	if f.limit == 0 {
		return 0
	}
	if f.probing {
		return f.limit + 1
	}
	return f.limit
}
