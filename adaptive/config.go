package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Config configures a Limiter. Every zero field means the documented
// default, so Config{} is a Limiter with no static rule, which learns the
// server's quota from its answers.
type Config struct {
	// Rule is the starting point: the quota assumed before the server has
	// said anything, in place of slow start. The zero Rule means none.
	Rule quota.Rule

	// HeaderTTL is how long the server's Remaining and reset stay valid
	// without a fresh answer. After it the last good limit stays in force.
	// Zero means 10 s.
	HeaderTTL time.Duration

	// LimitTTL is how long a limit the server's headers gave stays in force
	// without an answer that says it again. After it the limit is
	// forgotten and the learner takes over (see the package doc), so that
	// a limit a server said once, wrongly, cannot hold a tenant for good.
	// Zero means 10 min.
	LimitTTL time.Duration

	// MaxPause caps every pause, whatever the server asks, and the time
	// between two requests at any pace the answers set (a Rule's pace is
	// the user's and is kept): a tenant paced or paused for longer still
	// sends one request per MaxPause, which lets the server correct it.
	// A learned quota is probed for a raise within MaxPause at first;
	// probes that keep failing space out, up to 200 requests apart.
	// Zero means 1 min.
	MaxPause time.Duration

	// ProbeTimeout is how long the waiters wait for a probe's answer before
	// they go anyway. Zero means 2 s.
	ProbeTimeout time.Duration

	// WindowBuckets is the resolution of the sliding window when one is in
	// force (a rule or headers whose burst the bucket does not hold to the
	// limit, and a measured window's budget): the window is split
	// into this many buckets, and a window costs up to 1/WindowBuckets of
	// its capacity (see package window). Zero means 64.
	WindowBuckets int

	// PriorityFloor is the share of admissions from the line that each
	// class below the highest waiting keeps while it has callers waiting
	// (see Priority): with Interactive callers enough to take the whole
	// quota, Batch callers still get this share. A class's floor that it
	// leaves idle goes to the others. Zero means 0.1; negative means none
	// (strict order between classes); above a third, a third.
	PriorityFloor float64
}

// params is a Config with the defaults resolved. Limiters of one Registry
// share one.
type params struct {
	headerTTL     int64
	limitTTL      int64
	maxPause      int64
	probeTimeout  int64
	windowBuckets int
	floor         float64 // PriorityFloor resolved: 0 for none
}

var defaultParams = Config{}.params()

func (c Config) params() *params {
	p := &params{
		headerTTL:     int64(c.HeaderTTL),
		limitTTL:      int64(c.LimitTTL),
		maxPause:      int64(c.MaxPause),
		probeTimeout:  int64(c.ProbeTimeout),
		windowBuckets: c.WindowBuckets,
		floor:         c.PriorityFloor,
	}
	if p.headerTTL <= 0 {
		p.headerTTL = int64(10 * time.Second)
	}
	if p.limitTTL <= 0 {
		p.limitTTL = int64(10 * time.Minute)
	}
	if p.maxPause <= 0 {
		p.maxPause = int64(time.Minute)
	}
	if p.probeTimeout <= 0 {
		p.probeTimeout = int64(2 * time.Second)
	}
	if p.windowBuckets <= 0 {
		p.windowBuckets = 64
	}
	switch {
	case p.floor == 0:
		p.floor = 0.1
	case !(p.floor > 0): // negative or NaN
		p.floor = 0
	case p.floor > 1.0/classes:
		p.floor = 1.0 / classes // every class its floor: no more to share
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
