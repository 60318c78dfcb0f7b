package adaptive

import (
	"math"

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
// took from it; a pace with no phase, as a sliding log's.
func (e *estimator) adoptBucket(rate float64, depth int64, delay float64) {
	win := int64(math.Round(paceSteps * 1e9 / rate))
	e.settle(paceSteps-1, false, delay)
	e.depth = max(depth, 1)
	e.nref, e.wlo, e.whi, e.win = 0, win, win, win
}

// bucketProbe returns the step (in requests per Ŵ above L̂) and the
// length of a probe above a token bucket's pace. A bucket grants a burst
// from its depth whatever its rate, so a probe that drains less than
// the depth passes and says nothing: the probe is paced so that it
// drains the depth twice over at its step, within half of what the
// record holds at the pace. The fit then sees the whole probe, and the
// stretch at the pace before it: one that passed raises the rate's
// lower bound, and the throttle that ends one that failed says when the
// bucket ran dry, which, with the depth, is the rate.
func (e *estimator) bucketProbe() (step, span int64) {
	step = min(max(ceilDiv(4*e.depth*e.limit, fit.Size), 2, e.step), e.limit)
	return step, max(2*e.depth*e.win/step, e.win)
}
