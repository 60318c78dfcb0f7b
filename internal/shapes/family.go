package shapes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// The family's bounds: what a client can serve. A draw outside them is a
// server no client can keep up with, not a test of tollgate.
const (
	// maxPause is adaptive.Config.MaxPause's default: a tenant sends at
	// least one request per maxPause, so a server must allow at least
	// that much.
	maxPause = time.Minute
	// maxLittle bounds Little's wait, callers ÷ rate: with each call's
	// deadline callTimeout, at least 4 × maxLittle, a call that waits its
	// turn in a full queue has time to spare.
	maxLittle = 30 * time.Second
	// familyCalls bounds the calls of a draw without a rate quota (a cap
	// in flight, shedding), so that it ends by itself well before maxCalls.
	familyCalls = 2000
)

// roundWindows are the windows servers set on round values; a draw takes
// one of these half the time, and any length in [1 s, 10 min] otherwise.
var roundWindows = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	30 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute,
}

// headerFamilies are the families a draw with headers sends on every
// answer, one each.
var headerFamilies = []fakecloud.HeaderMode{
	fakecloud.HeadersAlibaba, fakecloud.HeadersXRateLimit, fakecloud.HeadersIETF, fakecloud.HeadersIETFStructured,
}

// Draw returns the server and load drawn with seed from the family of
// servers a client meets: the same seed draws the same Cell. The draw
// ranges over the shape (a fixed window on the epoch's grid, at an offset
// or opened by the first request; a sliding log; a token bucket; a cap in
// flight; random shedding; a rate quota with 2% shedding), the window (1 s
// to 10 min, on round values and off them), the limit (3 to 1,000 per
// window), the round trip (1–400 ms, 0–50% jitter), the throttle's answer
// (400 Throttling.User, 429 or 503, with or without Retry-After), the load
// (1–256 callers; one client half the time, else 2–4), an unseen consumer (0–60% of the quota),
// a step (×0.4, ×1.6 or ×4 at a random time, or none) and headers (none
// three times in four, else one family on every answer).
//
// Every draw is one a client can serve, judged on what the unseen
// consumer and any step leave it: at least one request per maxPause, and
// few enough callers that Little's wait is at most maxLittle. A draw
// without a rate quota makes a bounded number of calls, beside the bare
// transport.
func Draw(seed uint64) Cell {
	rng := rand.New(rand.NewPCG(seed, 0x746f6c6c67617465)) // "tollgate"
	for {
		if c, ok := drawOnce(rng); ok {
			c.Name = fmt.Sprintf("draw %d: %s", seed, c.params())
			return c
		}
	}
}

// logUniform draws from [lo, hi] uniformly on a log scale.
func logUniform(rng *rand.Rand, lo, hi float64) float64 {
	return lo * math.Pow(hi/lo, rng.Float64())
}

// pick returns one of xs at random.
func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// drawOnce draws one Cell; ok is false if no client could serve it.
func drawOnce(rng *rand.Rand) (c Cell, ok bool) {
	c.RTT = time.Duration(logUniform(rng, 1, 400) * float64(time.Millisecond)).Round(time.Millisecond)
	c.Jitter = time.Duration(rng.Float64() * 0.5 * float64(c.RTT)).Round(time.Millisecond)
	c.ThrottleStatus = pick(rng, 400, 429, 503)
	retryAfter := rng.IntN(2) == 0
	c.Callers = int(math.Round(logUniform(rng, 1, 256)))
	c.Clients = 1
	if rng.IntN(2) == 0 {
		c.Clients = min(2+rng.IntN(3), c.Callers)
	}

	switch shape := rng.IntN(10); {
	case shape < 1: // a cap on requests in flight
		c.Quota = fakecloud.Quota{Policy: fakecloud.Concurrency, Limit: 1 + rng.IntN(64)}
		c.unrated()
		return c, true
	case shape < 2: // shedding, whatever the rate
		c.NoQuota = true
		c.Faults.ShedRate = 0.02 + 0.28*rng.Float64()
		if retryAfter {
			c.Faults.ShedRetryAfter = time.Duration(1+rng.IntN(5)) * time.Second
		}
		c.unrated()
		return c, true
	case shape < 3: // a rate quota, and 2% shed besides
		c.Faults.ShedRate = 0.02
	}

	q := fakecloud.Quota{Limit: int(math.Round(logUniform(rng, 3, 1000)))}
	if rng.IntN(2) == 0 {
		q.Window = pick(rng, roundWindows...)
	} else {
		q.Window = time.Duration(logUniform(rng, 1, 600) * float64(time.Second)).Round(100 * time.Millisecond)
	}
	switch rng.IntN(6) {
	case 0, 1, 2:
		switch rng.IntN(3) {
		case 1:
			q.Align = fakecloud.AlignFirst
		case 2:
			q.Offset = time.Duration(rng.Int64N(int64(q.Window))).Round(time.Millisecond)
		}
	case 3, 4:
		q.Policy = fakecloud.SlidingWindow
	case 5:
		q.Policy = fakecloud.TokenBucket
		q.Burst = max(1, int(math.Round(logUniform(rng, 1, 2*float64(q.Limit)))))
	}
	if rng.IntN(4) == 0 {
		c.Headers, c.Every = pick(rng, headerFamilies...), true
	}
	if retryAfter {
		c.Headers |= fakecloud.HeadersRetryAfter
	}
	unseen := 0.0
	if rng.IntN(2) == 0 {
		unseen = 0.6 * rng.Float64()
	}
	if rng.IntN(20) < 9 {
		c.Step = pick(rng, 0.4, 1.6, 4)
	}
	// What is left to the client at the lower of the two limits.
	low := q.Limit
	if c.Step > 0 && c.Step < 1 {
		low = int(math.Round(float64(q.Limit) * c.Step))
	}
	q.Unseen = int(math.Floor(unseen * float64(low)))
	c.Quota = q
	// At least one request per maxPause, and at least one caller within
	// Little's bound (the stricter of the two while maxLittle < maxPause).
	rate := c.rate(low)
	most := int(maxLittle.Seconds() * rate)
	if rate < 1/maxPause.Seconds() || most < 1 {
		return c, false
	}
	c.Callers = min(c.Callers, most)
	c.Clients = min(c.Clients, c.Callers)
	if c.Step > 0 {
		// At a window boundary between one and thirteen windows in.
		c.StepAfter = time.Duration(1+rng.IntN(13)) * q.Window
	}
	return c, true
}

// unrated bounds a draw without a rate quota in calls, beside the bare
// transport: enough for every caller to call a few times, few enough to
// end within maxRun at one call per round trip per slot in flight.
func (c *Cell) unrated() {
	slots := c.Callers
	if !c.NoQuota {
		slots = min(slots, c.Quota.Limit)
	}
	perSlot := int(maxRun / 4 / c.RTT)
	c.Calls = max(1, min(familyCalls, 20*c.Callers, slots*perSlot))
	c.Baseline = true
}

// params describes a drawn cell's parameters in one line, as the list of
// the worst draws shows them.
func (c Cell) params() string {
	var p []string
	switch {
	case c.NoQuota:
		p = append(p, "no quota")
	case c.Quota.Policy == fakecloud.Concurrency:
		p = append(p, fmt.Sprintf("%d in flight", c.Quota.Limit))
	default:
		s := c.Quota.Policy.String() + " " + quotaString(c.Quota)
		switch {
		case c.Quota.Align == fakecloud.AlignFirst:
			s += " from the first request"
		case c.Quota.Offset > 0:
			s += " at +" + c.Quota.Offset.String()
		}
		p = append(p, s)
		if c.Quota.Unseen > 0 {
			p = append(p, fmt.Sprintf("unseen %d", c.Quota.Unseen))
		}
	}
	if c.Faults.ShedRate > 0 {
		p = append(p, fmt.Sprintf("shed %.0f%%", 100*c.Faults.ShedRate))
	}
	p = append(p, fmt.Sprintf("%v±%v", c.rtt(), c.Jitter))
	throttle := fmt.Sprint(c.ThrottleStatus)
	if c.Headers&fakecloud.HeadersRetryAfter != 0 || c.Faults.ShedRetryAfter > 0 {
		throttle += " + Retry-After"
	}
	p = append(p, throttle)
	if h := c.Headers &^ fakecloud.HeadersRetryAfter; h != 0 {
		p = append(p, h.String()+" always")
	}
	if n := c.callers(); n == 1 {
		p = append(p, "1 caller")
	} else {
		p = append(p, fmt.Sprintf("%d callers", n))
	}
	if c.clients() > 1 {
		p = append(p, fmt.Sprintf("%d clients", c.clients()))
	}
	if c.Step > 0 {
		p = append(p, fmt.Sprintf("step ×%g after %v", c.Step, c.StepAfter))
	}
	if c.Calls > 0 {
		p = append(p, fmt.Sprintf("%d calls", c.Calls))
	}
	return strings.Join(p, ", ")
}
