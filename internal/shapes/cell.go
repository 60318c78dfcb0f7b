package shapes

import (
	"fmt"
	"math"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/transport"
)

// Cell is one server shape and one load: a row of the matrix. Its zero
// fields mean the matrix's defaults: 32 callers, one client, 2 ms round
// trips, throttles as Alibaba Cloud answers them (HTTP 400
// Throttling.User, no headers).
type Cell struct {
	Name string

	// Quota is the server's quota on the callers' account and action
	// (Quota.API and Account are set by Run). With NoQuota the server has
	// none, and only Faults throttle (shedding).
	Quota   fakecloud.Quota
	NoQuota bool

	Headers        fakecloud.HeaderMode // rate-limit header families sent
	Every          bool                 // headers on every answer, not only on throttles
	ThrottleStatus int                  // status of a throttle; zero means 400
	Faults         fakecloud.Faults     // faults besides the round trip

	Callers int           // closed-loop callers in all, split among the clients; zero means 32
	Clients int           // Transports on the one quota, as processes would be; zero means 1
	RTT     time.Duration // the server's answer time; zero means 2 ms
	Jitter  time.Duration // RTT varies uniformly by ± Jitter

	// Arrival is the part of RTT on the way to the server, before its
	// quota counts a request; the rest is the way back. Jitter splits
	// between the two ways as RTT does: a request reaches the server
	// Arrival ± Jitter·Arrival/RTT after it was sent. Zero: the server
	// counts a request the instant it is sent (every draw of the family).
	// At most RTT.
	Arrival time.Duration

	// Interactive, if positive, is how many of the callers call with
	// priority Interactive; the others call as Batch (see
	// transport.WithPriority). Zero: every caller is Default, no classes.
	// A cell with classes is also run with every caller Default, to set
	// its totals beside the same load without classes (Options.Classless).
	Interactive int

	// Step, if positive, multiplies the quota's Limit mid-run: the
	// settled stretch reported is the one after the step. It comes
	// StepAfter after the callers start, rounded up to a window; if
	// StepAfter is zero, once the run before it has settled and been
	// measured as a cell without a step is.
	Step      float64
	StepAfter time.Duration

	// Calls, if positive, is how many calls the callers make in all, after
	// which they stop: the row reports the time they took (the run still
	// ends by itself at maxRun).
	Calls int

	// Baseline runs the same callers with the same retry.Policy over the
	// bare transport too, to compare successful calls per second where
	// the server has no rate quota (shedding, a concurrency limit).
	Baseline bool

	// Smoke puts the cell in the subset a default go test runs.
	Smoke bool
}

// callers returns the number of callers in all.
func (c Cell) callers() int {
	if c.Callers > 0 {
		return c.Callers
	}
	return 32
}

// clients returns the number of Transports.
func (c Cell) clients() int {
	if c.Clients > 0 {
		return c.Clients
	}
	return 1
}

// rtt returns the mean round trip.
func (c Cell) rtt() time.Duration {
	if c.RTT > 0 {
		return c.RTT
	}
	return 2 * time.Millisecond
}

// limit returns the quota's Limit before the step, or after it if
// stepped (the same when the cell has no step).
func (c Cell) limit(stepped bool) int {
	if !stepped || c.Step <= 0 {
		return c.Quota.Limit
	}
	return int(math.Round(float64(c.Quota.Limit) * c.Step))
}

// rated reports whether the server counts a rate (a fixed or sliding
// window, or a token bucket), so that a capacity and Little's law apply.
func (c Cell) rated() bool {
	return !c.NoQuota && c.Quota.Policy != fakecloud.Concurrency
}

// sheds reports whether the server sheds load: throttles that come
// whatever the rate, which retry.Do cannot always absorb.
func (c Cell) sheds() bool {
	return c.Faults.ShedRate > 0 || c.Faults.ShedEvery > 0
}

// window returns the server's window, or 1 s where it has none: the width
// of a bucket in the time series.
func (c Cell) window() time.Duration {
	if !c.rated() || c.Quota.Window <= 0 {
		return time.Second
	}
	return c.Quota.Window
}

// rate returns what the server's policy allows the callers per second at
// Limit l: the quota's rate less the unseen consumer's.
func (c Cell) rate(l int) float64 {
	if !c.rated() {
		return 0
	}
	return float64(l-c.Quota.Unseen) / c.window().Seconds()
}

// classed reports whether c's callers come in priority classes.
func (c Cell) classed() bool { return c.Interactive > 0 }

// priority returns the class of caller i of c: the first Interactive
// callers are Interactive, the rest Batch; Default for every caller of a
// cell without classes, or if classless.
func (c Cell) priority(i int, classless bool) transport.Priority {
	switch {
	case !c.classed() || classless:
		return transport.Default
	case i < c.Interactive:
		return transport.Interactive
	}
	return transport.Batch
}

// headersEvery reports whether rate-limit headers come on every answer,
// which sets the stricter goals.
func (c Cell) headersEvery() bool {
	return c.Every && c.Headers&^fakecloud.HeadersRetryAfter != 0
}

// Cells returns the matrix's cells: the shapes a user meets, then, on a
// fixed 50 per 1 s and a fixed 200 per 10 s window, one thing varied at a
// time.
func Cells() []Cell {
	fixed := func(l int, w time.Duration) fakecloud.Quota {
		return fakecloud.Quota{Limit: l, Window: w}
	}
	cells := []Cell{
		{Name: "fixed 50/1s", Quota: fixed(50, time.Second), Smoke: true},
		{Name: "fixed 120/3s", Quota: fixed(120, 3*time.Second)},
		{Name: "fixed 200/10s", Quota: fixed(200, 10*time.Second)},
		{Name: "fixed 600/60s", Quota: fixed(600, time.Minute)},
		{Name: "sliding 50/1s", Quota: fakecloud.Quota{Policy: fakecloud.SlidingWindow, Limit: 50, Window: time.Second}},
		{Name: "fixed 50/1s from the first request", Quota: fakecloud.Quota{Limit: 50, Window: time.Second, Align: fakecloud.AlignFirst}},
		{Name: "bucket 30/s, burst 60", Quota: fakecloud.Quota{Policy: fakecloud.TokenBucket, Limit: 30, Window: time.Second, Burst: 60}},
		{Name: "fixed 50/1s, 5–45 ms, 5% 503", Quota: fixed(50, time.Second), RTT: 25 * time.Millisecond, Jitter: 20 * time.Millisecond,
			Faults: fakecloud.Faults{UnavailableRate: 0.05}},
		{Name: "fixed 50/1s, unseen 20/s", Quota: fakecloud.Quota{Limit: 50, Window: time.Second, Unseen: 20}, Smoke: true},
		{Name: "8 in flight, no rate", Quota: fakecloud.Quota{Policy: fakecloud.Concurrency, Limit: 8}, Baseline: true, Smoke: true},
		{Name: "shed 20%, bare 429, 4 callers", NoQuota: true, Callers: 4, ThrottleStatus: 429,
			Faults: fakecloud.Faults{ShedRate: 0.2}, Baseline: true, Smoke: true},
		{Name: "shed 20%, 429 + Retry-After: 1, 4 callers", NoQuota: true, Callers: 4, ThrottleStatus: 429,
			Faults: fakecloud.Faults{ShedRate: 0.2, ShedRetryAfter: time.Second}, Baseline: true},
		{Name: "every 5th 429 + Retry-After: 1, 4 callers, 100 calls", NoQuota: true, Callers: 4, Calls: 100, ThrottleStatus: 429,
			Faults: fakecloud.Faults{ShedEvery: 5, ShedRetryAfter: time.Second}, Baseline: true, Smoke: true},
		{Name: "fixed 50/1s, X-RateLimit-* always", Quota: fixed(50, time.Second), Headers: fakecloud.HeadersXRateLimit, Every: true, ThrottleStatus: 429},
		{Name: "fixed 50/1s, Alibaba headers always", Quota: fixed(50, time.Second), Headers: fakecloud.HeadersAlibaba, Every: true},
		{Name: "fixed 50/1s, RateLimit-* always", Quota: fixed(50, time.Second), Headers: fakecloud.HeadersIETF, Every: true, ThrottleStatus: 429},
		{Name: "fixed 50/1s, IETF fields always", Quota: fixed(50, time.Second), Headers: fakecloud.HeadersIETFStructured, Every: true, ThrottleStatus: 429},
		{Name: "fixed 50/1s, Retry-After on throttles", Quota: fixed(50, time.Second), Headers: fakecloud.HeadersRetryAfter, ThrottleStatus: 429},
	}
	for _, base := range []struct {
		name string
		q    fakecloud.Quota
	}{{"fixed 50/1s", fixed(50, time.Second)}, {"fixed 200/10s", fixed(200, 10*time.Second)}} {
		vary := func(what string, c Cell) {
			c.Name, c.Quota = base.name+", "+what, base.q
			cells = append(cells, c)
		}
		vary("4 callers", Cell{Callers: 4})
		vary("256 callers", Cell{Callers: 256})
		vary("50±10 ms", Cell{RTT: 50 * time.Millisecond, Jitter: 10 * time.Millisecond})
		vary("300±50 ms", Cell{RTT: 300 * time.Millisecond, Jitter: 50 * time.Millisecond})
		vary("50±10 ms, half on the way there", Cell{RTT: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Arrival: 25 * time.Millisecond})
		vary("300±50 ms, half on the way there", Cell{RTT: 300 * time.Millisecond, Jitter: 50 * time.Millisecond, Arrival: 150 * time.Millisecond})
		vary("3 clients", Cell{Clients: 3})
		vary("step to 40%", Cell{Step: 0.4})
		vary("step to 160%", Cell{Step: 1.6})
	}
	// Priority classes: a few Interactive callers in front of a Batch
	// crowd that saturates the quota, and Batch's floor under an
	// Interactive crowd; each with headers on every answer and with none.
	for _, load := range []struct{ interactive, batch int }{{4, 64}, {64, 4}} {
		for _, h := range []struct {
			name    string
			headers fakecloud.HeaderMode
		}{{"", fakecloud.HeadersNone}, {", Alibaba headers always", fakecloud.HeadersAlibaba}} {
			cells = append(cells, Cell{
				Name:        fmt.Sprintf("fixed 50/1s, %d interactive + %d batch%s", load.interactive, load.batch, h.name),
				Quota:       fixed(50, time.Second),
				Headers:     h.headers,
				Every:       h.headers != fakecloud.HeadersNone,
				Callers:     load.interactive + load.batch,
				Interactive: load.interactive,
			})
		}
	}
	return cells
}

// quotaString describes a quota as the table shows it.
func quotaString(q fakecloud.Quota) string {
	switch q.Policy {
	case fakecloud.Concurrency:
		return fmt.Sprintf("%d in flight", q.Limit)
	case fakecloud.TokenBucket:
		return fmt.Sprintf("%d/%v, burst %d", q.Limit, q.Window, q.Burst)
	}
	return fmt.Sprintf("%d/%v", q.Limit, q.Window)
}
