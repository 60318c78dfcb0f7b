package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Config configures a Limiter. Every zero field means the documented
// default, so Config{} is a Limiter with no static rule: unlimited until the
// first throttle.
type Config struct {
	// Rule is the starting point: the quota assumed before the server has
	// said anything. The zero Rule means unlimited until the first throttle.
	Rule quota.Rule

	// HeaderTTL is how long the server's Remaining and reset stay valid
	// without a fresh answer. After it the last good limit stays in force.
	// Zero means 10 s.
	HeaderTTL time.Duration

	// MaxPause caps every pause, whatever the server asks. Zero means 1 min.
	MaxPause time.Duration

	// ProbeTimeout is how long the waiters wait for a probe's answer before
	// they go anyway. Zero means 2 s.
	ProbeTimeout time.Duration

	// MinRate is the floor, in requests per second, below which throttles
	// never push the learned rate. Zero means 0.5.
	MinRate float64

	// Decrease bounds one cut, in (0, 1): a throttle cuts the rate to
	// Headroom times the measured success rate, but never below Decrease
	// times the rate in force. With no success coming in, each cut is thus
	// by this factor, once per round trip. (A throttle of a probe above the
	// quota estimate goes back to the estimate instead.) Zero means 0.7.
	Decrease float64

	// Headroom is the fraction of the measured success rate (successes in
	// the last second) the rate is cut to on a throttle, in (0, 1]; every
	// such cut is at least by this fraction of the rate in force, and only
	// by it when the server's headers say its limit. Zero means 0.97.
	Headroom float64

	// Hold is how long, counting only time with demand, the rate stays at
	// the quota estimate after a throttle before it probes above it again;
	// at low rates the hold lasts at least 20 requests, so that probing
	// stays a small share of them. Zero means 1 s.
	Hold time.Duration

	// ProbeDoubling is how fast the probe grows once its first step (one
	// request more in one second) has gone through: the rate goes 20%
	// above the estimate, and that overshoot doubles every ProbeDoubling
	// of demand until a throttle ends it (×4 takes about 0.4 s). Larger
	// probes more gently and finds a raised quota later. Zero means 100 ms.
	ProbeDoubling time.Duration

	// WindowBuckets is the resolution of the sliding window when one is in
	// force (a rule or headers whose burst the bucket does not hold to the
	// limit, and for one window after a learned cut): the window is split
	// into this many buckets, and a window costs up to 1/WindowBuckets of
	// its capacity (see package window). Zero means 64.
	WindowBuckets int
}

// params is a Config with the defaults resolved. Limiters of one Registry
// share one.
type params struct {
	headerTTL     int64
	maxPause      int64
	probeTimeout  int64
	minRate       float64
	decrease      float64
	headroom      float64
	hold          float64 // seconds
	probeDoubling float64 // seconds
	windowBuckets int
}

var defaultParams = Config{}.params()

func (c Config) params() *params {
	p := &params{
		headerTTL:     int64(c.HeaderTTL),
		maxPause:      int64(c.MaxPause),
		probeTimeout:  int64(c.ProbeTimeout),
		minRate:       c.MinRate,
		decrease:      c.Decrease,
		headroom:      c.Headroom,
		hold:          c.Hold.Seconds(),
		probeDoubling: c.ProbeDoubling.Seconds(),
		windowBuckets: c.WindowBuckets,
	}
	if p.headerTTL <= 0 {
		p.headerTTL = int64(10 * time.Second)
	}
	if p.maxPause <= 0 {
		p.maxPause = int64(time.Minute)
	}
	if p.probeTimeout <= 0 {
		p.probeTimeout = int64(2 * time.Second)
	}
	if !(p.minRate > 0) {
		p.minRate = 0.5
	}
	if !(p.decrease > 0 && p.decrease < 1) {
		p.decrease = 0.7
	}
	if !(p.headroom > 0 && p.headroom <= 1) {
		p.headroom = 0.97
	}
	if !(p.hold > 0) {
		p.hold = 1
	}
	if !(p.probeDoubling > 0) {
		p.probeDoubling = 0.1
	}
	if p.windowBuckets <= 0 {
		p.windowBuckets = 64
	}
	return p
}

// ruleLimits resolves a Rule's zero fields: rate per second, burst, window
// limit and window length.
func ruleLimits(r quota.Rule) (rate float64, burst int, limit int64, win time.Duration) {
	rate, limit, win = r.Rate, r.Limit, r.Window
	if !(rate > 0) {
		rate = 0
	}
	burst = r.Burst
	if burst <= 0 {
		burst = 1
		if rate > 1 {
			burst = int(rate + 0.999999)
		}
	}
	if limit <= 0 {
		limit, win = 0, 0
	} else if win <= 0 {
		win = time.Second
	}
	return rate, burst, limit, win
}
