package adaptive

// trial is the learner's test, by intervention, of a quota the fit names
// where the estimator takes the tenant's throttles for shedding (strays
// common, see estimator.rateFree). From the answers alone the two can look
// alike: a server that sheds a share p of what it is sent at random is
// fitted about as well by a token bucket a share p slower than what we
// send, and a slow bucket that refills between a throttle and the
// requests that test it looks like shedding to the estimator. Pacing
// tells them apart: paced by the quota, a quota stops throttling, while
// shedding goes on at its share. So the rule is paced by at once, on
// trial, and kept only if, among the answers to requests sent since, the
// throttles fall to a quarter of their share before, or less; judged once
// shedding would have sent trialExpected of them, from the first request
// the server granted since (before it, a quota may still be spent by
// what went unpaced; shedding grants one at once). A rule refuted leaves
// the tenant as it was (see estimator.forget), and with it every rule as
// fast or faster: paced at its rate, the throttles came as often as
// unpaced, so no quota at that rate explains them. A slower rule the fit
// names later is tried again (a fit made early, on a few answers, may
// name a rule of the wrong kind, or too fast); where the server sheds,
// the fits of what it is sent unpaced name no slower one.
type trial struct {
	on      bool
	granted bool    // a request sent since the rule was taken was granted: the answers are judged
	rate    float64 // the rule's, per second
	refuted float64 // the slowest rate refuted, per second; 0 for none
	from    int64   // when the rule was taken (Unix ns): requests sent before it are not judged
	share   float64 // the share of the tenant's answers throttled before it (see estimator.throttledShare)
	n, k    int64   // answers judged since, and throttles among them
}

// trialExpected is how many throttles shedding at the share before would
// have sent during a trial, for its verdict: with eight expected, two or
// fewer come by chance about one time in seventy (Poisson).
const trialExpected = 8

// trialCut is how much rarer throttles must be under the rule on trial
// for it to be kept.
const trialCut = 4

// allows reports whether a rule of rate (per second) may be tried: no
// trial refuted one as slow.
func (tr *trial) allows(rate float64) bool {
	return tr.refuted == 0 || rate < tr.refuted
}

// begin starts a trial of a rule of rate (per second) taken at now, the
// share of answers throttled before it being share.
func (tr *trial) begin(now int64, share, rate float64) {
	tr.rate = rate
	tr.on, tr.granted, tr.from, tr.share, tr.n, tr.k = share > 0, false, now, share, 0, 0
}

// answer counts the answer to a request sent at sent while a trial is on.
// It reports whether the trial refuted its rule.
func (tr *trial) answer(sent int64, throttled bool) (refuted bool) {
	if !tr.on || sent < tr.from || !tr.granted && throttled {
		return false
	}
	tr.granted = true
	tr.n++
	if throttled {
		tr.k++
	}
	want := float64(tr.n) * tr.share
	if want < trialExpected {
		return false
	}
	tr.on = false
	if float64(tr.k)*trialCut <= want {
		return false
	}
	tr.refuted = tr.rate
	return true
}
