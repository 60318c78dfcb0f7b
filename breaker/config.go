package breaker

import "time"

// Config sets up a Breaker. Every zero field means the default its comment
// gives, so the zero Config is ready to use.
//
// The defaults were chosen with the instrument in package transport
// (TestBreakerTrips; the table is in docs/figures.md): 32 callers on a 50/s
// quota, healthy for 20 s and then failing for 10 min. They open within
// 1.2 s of the failures' start at 50% failures and more, and never at 30%
// and less, where retries absorb the failures; at 40%, 1 to 4 times in 10
// min over our runs.
type Config struct {
	// Window is how far back the failure rate looks, as ten buckets of a
	// tenth each (gobreaker's rolling window). Zero means 10 s.
	Window time.Duration

	// MinRequests is how many requests answered with a success or a
	// failure within Window the failure rate needs before it can open the
	// breaker. Zero means 20.
	MinRequests int

	// FailureRatio opens the breaker when failures / (successes +
	// failures) within Window reaches it, over at least MinRequests. Zero
	// means 0.5; a value above 1 never opens on the rate.
	FailureRatio float64

	// ConsecutiveFailures opens the breaker after this many failures in a
	// row, however few requests there were: for a storm that begins after
	// healthy traffic, whose failure rate over Window the healthy answers
	// still dilute, and for traffic too thin for the rate. Any other
	// outcome breaks the row, a throttle too. Zero means 10. A negative
	// value turns it off.
	ConsecutiveFailures int

	// OpenFor is how long the breaker stays open before it lets a probe
	// through: at most one request per OpenFor reaches a failing service.
	// Zero means 5 s.
	OpenFor time.Duration

	// ProbeTimeout is how long the probe may go unanswered before it
	// counts as failed and the breaker opens again. Set it above the
	// slowest answer the API gives when healthy: a slower probe never
	// closes the breaker. Zero means 10 s.
	ProbeTimeout time.Duration
}

// Defaults of the zero Config's fields.
const (
	DefaultWindow              = 10 * time.Second
	DefaultMinRequests         = 20
	DefaultFailureRatio        = 0.5
	DefaultConsecutiveFailures = 10
	DefaultOpenFor             = 5 * time.Second
	DefaultProbeTimeout        = 10 * time.Second
)

// resolved returns c with its zero fields set to the defaults.
func (c Config) resolved() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.MinRequests <= 0 {
		c.MinRequests = DefaultMinRequests
	}
	if !(c.FailureRatio > 0) {
		c.FailureRatio = DefaultFailureRatio
	}
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if c.OpenFor <= 0 {
		c.OpenFor = DefaultOpenFor
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	return c
}
