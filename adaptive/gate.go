package adaptive

import "sync/atomic"

// probeNeeded in gate.probe: the next admission after the pause is the probe.
const probeNeeded = -1

// gate is the pause gate. until is the Unix nanosecond time before which
// nothing is admitted (0: open). probe is 0 when no probe is wanted,
// probeNeeded when the next admission must be the probe, and otherwise the
// deadline (Unix ns) of the probe in flight: until then the others wait for
// its answer.
type gate struct {
	until atomic.Int64
	probe atomic.Int64
}

// enter asks to pass at now. It returns 0 and the probe deadline (0 if the
// caller is not the probe) when the caller may go on, else how long to wait
// (> 0); for a caller waiting on a probe that is the time left until the
// probe times out.
func (g *gate) enter(now, timeout int64) (wait, probe int64) {
	if u := g.until.Load(); now < u {
		return u - now, 0
	}
	for {
		p := g.probe.Load()
		switch {
		case p == 0:
			return 0, 0
		case p == probeNeeded:
			d := now + timeout
			if g.probe.CompareAndSwap(p, d) {
				return 0, d
			}
		case now < p:
			return p - now, 0
		default: // the probe timed out: let everyone go
			if g.probe.CompareAndSwap(p, 0) {
				return 0, 0
			}
		}
	}
}

// probeWanted reports whether the next caller to pass at now would be the
// probe.
func (g *gate) probeWanted(now int64) bool {
	return now >= g.until.Load() && g.probe.Load() == probeNeeded
}

// pause closes the gate until u (it never shortens a pause) and, if probe,
// asks for a probe when it opens. It reports whether the pause was
// extended.
func (g *gate) pause(u int64, probe bool) (longer bool) {
	for {
		old := g.until.Load()
		if u <= old {
			break
		}
		if g.until.CompareAndSwap(old, u) {
			longer = true
			break
		}
	}
	if probe {
		g.probe.Store(probeNeeded)
	}
	return longer
}

// resolve ends the probe with deadline d: the waiters may go. It does nothing
// if another pause has asked for a new probe meanwhile.
func (g *gate) resolve(d int64) bool { return g.probe.CompareAndSwap(d, 0) }

// release hands the probe with deadline d back unsent: the next admission
// probes instead.
func (g *gate) release(d int64) bool { return g.probe.CompareAndSwap(d, probeNeeded) }
