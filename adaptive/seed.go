package adaptive

import "time"

// Estimate is what the learner has learned of a quota the server does not
// say (see the package doc): at most Limit requests per Window, the
// server's window bounded in (WindowLow, WindowHigh]. Window is the round
// value the bounds hold, or WindowHigh.
//
// A store that shares a tenant's quota among processes keeps the latest
// Estimate a process learned (Fleet.Learned), so that a process that
// starts cold on the tenant takes it up (Fleet.Seed) instead of learning
// the quota again: what is learned outlives the process that learned it.
type Estimate struct {
	Limit                 int64
	Window                time.Duration
	WindowLow, WindowHigh time.Duration
}

// maxSeedLimit and maxSeedWindow bound the estimates Seed takes: beyond
// them an estimate read from a store is not one a learner made.
const (
	maxSeedLimit  = 1 << 40
	maxSeedWindow = 24 * time.Hour
)

// Valid reports whether e can seed a Limiter: a positive Limit and Window,
// the Window at most a day and the Limit at most 2^40.
func (e Estimate) Valid() bool {
	return e.Limit > 0 && e.Limit <= maxSeedLimit && e.Window > 0 && e.Window <= maxSeedWindow
}

// Learned returns what the tenant's learner estimates of its quota once
// it has settled (PhaseSettled) on a server that says no limit, and true;
// otherwise (cold, measuring, testing a throttle, or the server says its
// limit) false. While other processes spend the same quota unseen, the
// estimate is what the server leaves this one: its share.
func (f Fleet) Learned() (Estimate, bool) {
	l := f.l
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.s.e
	if e == nil || !l.learning() || e.phase != PhaseSettled || e.seeking || e.limit <= 0 || e.win <= 0 {
		return Estimate{}, false
	}
	return Estimate{
		Limit:      e.limit,
		Window:     time.Duration(e.win),
		WindowLow:  time.Duration(e.wlo),
		WindowHigh: time.Duration(e.whi),
	}, true
}

// Seed starts a Limiter that knows nothing of its quota yet (see Fresh)
// from est, learned by another process of the same quota (or by this one
// before it restarted): the learner takes it as settled, the pacer admits
// Limit per Window evenly at once instead of slow-starting, and the
// learner goes on from there as from any settled estimate. A throttle
// tests it and, confirmed, measures the window again; probes above Limit
// come as they do once settled for a while (a window and 200 admissions
// on, if callers wait), and find a quota that grew. The window's phase is
// not known, so the first throttle is what places it.
//
// Bounds that do not hold Window are widened to hold it. Seed reports
// whether it took est: not if the Limiter knows anything already (a rule,
// the server's headers, a throttle) or est is not Valid.
func (f Fleet) Seed(est Estimate) bool {
	l := f.l
	if !est.Valid() {
		return false
	}
	win := int64(est.Window)
	lo, hi := int64(est.WindowLow), int64(est.WindowHigh)
	if lo < 0 || lo >= win {
		lo = 0
	}
	if hi < win || hi > int64(maxSeedWindow) {
		hi = win
	}
	now := time.Now().UnixNano()
	l.mu.Lock()
	s := &l.s
	if s.src != SourceNone || s.e != nil || !l.learning() {
		l.mu.Unlock()
		return false
	}
	e := &estimator{phase: PhaseSettled, limit: est.Limit, wlo: lo, whi: hi, win: win}
	e.schedule(now, l.seq.Load()+1, l.params().maxPause, false)
	s.e = e
	big := l.recompute(now)
	l.mu.Unlock()
	if big {
		l.notify()
	}
	return true
}
