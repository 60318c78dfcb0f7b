package adaptive

import (
	"math"
	"math/bits"

	"github.com/tollgate-go/tollgate/fit"
)

// paceSteps is how finely the pace of a token bucket the fit named is
// kept: as L̂ per Ŵ with L̂ about paceSteps, so that one more per Ŵ is 1%
// of the rate, the resolution of tollgate's own goals. It is a choice of
// ours, not a guess at the server.
const paceSteps = 100

// adoptBucket settles on a token bucket of rate tokens a second, depth
// deep: the rule the fit named where the record showed the estimate
// wrong (see Limiter.followFit). It paces one step (1%) below the rate,
// so that the bucket earns back, slowly, what the spread of arrivals
// took from it; a pace with no phase, as a sliding log's. rtt is the
// tenant's round trip, which sizes the probes' steps (see bucketProbe).
func (e *estimator) adoptBucket(rate float64, depth int64, delay float64, rtt int64) {
	win := int64(math.Round(paceSteps * 1e9 / rate))
	e.settle(paceSteps-1, false, delay)
	e.depth, e.bucketRT = max(depth, 1), max(rtt, 1)
	e.nref, e.wlo, e.whi, e.win = 0, win, win, win
}

// bucketProbe returns the step (in requests per Ŵ above L̂) and the
// length of a probe above a token bucket's pace. A bucket grants a burst
// from its depth whatever its rate, so a probe that drains less than
// the depth passes and says nothing: the probe lasts until it has sent
// twice the depth over the pace at its step, and at least a Ŵ, a
// hundred requests at the pace (a bucket the fit named where the server
// keeps a long window would pass short probes, and a ramp of them would
// run away from it). The fit then sees the whole probe, and the stretch
// at the pace before it: one that passed raises the rate's lower bound,
// and the throttle that ends one that failed says when the bucket ran
// dry, which, with the depth, is the rate.
//
// In a ramp (see raise) the step is the ramp's. Out of one, it opens as
// wide as a failed probe allows: what the bucket refuses above its rate
// comes at the step's rate until the first refusal is heard, a round
// trip later, so a step of one request a round trip above the pace
// costs about one throttle when it fails, and a wider one more. At most
// L̂, the pace doubled. Each probe failed in a row halves it, down to the
// least step (one that drains the depth twice within half of what the
// record holds at the pace), and after the least it opens wide again:
// a raise of any size is met within one round of halvings, and once a
// probe passed, the ramp doubles its step.
func (e *estimator) bucketProbe() (step, span int64) {
	least := max(ceilDiv(4*e.depth*e.limit, fit.Size), 2)
	if step = e.step; step == 0 {
		open := max(min(e.limit, e.win/e.bucketRT), least) // bucketRT ≥ 1: see adoptBucket
		step = open >> (e.fails % bits.Len64(uint64(open/least)))
	}
	step = min(max(step, least), e.limit)
	return step, max(ceilDiv(2*e.depth*e.win, step), e.win)
}
