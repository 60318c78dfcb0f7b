package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// faultKind is a fault -faults can inject: a field of fakecloud.Faults.
type faultKind string

// The kinds of fault -faults knows.
const (
	fault503  faultKind = "503"  // Faults.UnavailableRate: 503 ServiceUnavailable, before admission
	faultDrop faultKind = "drop" // Faults.DropRate: the connection closed mid-answer, after admission
)

// faultSpec is one item of -faults: a fault at a rate over a part of each
// run, from offset from to offset to (0: the end of the run).
type faultSpec struct {
	kind     faultKind
	rate     float64
	from, to time.Duration
}

// String returns the item as -faults spells it, e.g. "503=0.8@5s-10s".
func (f faultSpec) String() string {
	s := fmt.Sprintf("%s=%v@%v", f.kind, f.rate, f.from)
	if f.to > 0 {
		s += fmt.Sprintf("-%v", f.to)
	}
	return s
}

// covers reports whether the fault is on at offset d of a run.
func (f faultSpec) covers(d time.Duration) bool {
	return d >= f.from && (f.to == 0 || d < f.to)
}

// set sets the fault's rate in fs.
func (f faultSpec) set(fs *fakecloud.Faults) {
	switch f.kind {
	case fault503:
		fs.UnavailableRate = f.rate
	case faultDrop:
		fs.DropRate = f.rate
	}
}

// parseFaults parses -faults: a comma-separated list of KIND=RATE@FROM-TO.
// KIND is 503 or drop, RATE a probability in [0, 1], FROM and TO offsets
// into each run in time.ParseDuration's syntax, FROM < TO. TO may be left
// out ("503=0.8@5s" or "503=0.8@5s-"), and so may @FROM-TO: the fault then
// lasts to the end of the run. Two items of the same kind may not overlap.
// An empty s means no faults.
func parseFaults(s string) ([]faultSpec, error) {
	if s == "" {
		return nil, nil
	}
	var specs []faultSpec
	for item := range strings.SplitSeq(s, ",") {
		f, err := parseFault(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("-faults %q: %w", item, err)
		}
		for _, g := range specs {
			if g.kind == f.kind && f.overlaps(g) {
				return nil, fmt.Errorf("-faults: %v overlaps %v", f, g)
			}
		}
		specs = append(specs, f)
	}
	return specs, nil
}

// overlaps reports whether f and g are on at a common offset.
func (f faultSpec) overlaps(g faultSpec) bool {
	end := func(x faultSpec) time.Duration {
		if x.to == 0 {
			return math.MaxInt64
		}
		return x.to
	}
	return f.from < end(g) && g.from < end(f)
}

// parseFault parses one item of -faults.
func parseFault(s string) (faultSpec, error) {
	var f faultSpec
	kindRate, window, timed := strings.Cut(s, "@")
	kind, rate, ok := strings.Cut(kindRate, "=")
	if !ok {
		return f, fmt.Errorf("want KIND=RATE@FROM-TO, e.g. 503=0.8@5s-10s")
	}
	switch f.kind = faultKind(kind); f.kind {
	case fault503, faultDrop:
	default:
		return f, fmt.Errorf("unknown kind %q, want 503 or drop", kind)
	}
	r, err := strconv.ParseFloat(rate, 64)
	if err != nil || !(r >= 0 && r <= 1) {
		return f, fmt.Errorf("rate %q: want a number from 0 to 1", rate)
	}
	f.rate = r
	if !timed {
		return f, nil
	}
	from, to, _ := strings.Cut(window, "-")
	if f.from, err = time.ParseDuration(from); err != nil || f.from < 0 {
		return f, fmt.Errorf("FROM %q: want a duration ≥ 0, e.g. 5s", from)
	}
	if to == "" {
		return f, nil
	}
	if f.to, err = time.ParseDuration(to); err != nil {
		return f, fmt.Errorf("TO %q: want a duration, e.g. 10s", to)
	}
	if f.to <= f.from {
		return f, fmt.Errorf("TO %v is not after FROM %v", f.to, f.from)
	}
	return f, nil
}

// baseFaults are the faults of the fake gateway throughout a run: its
// latency.
var baseFaults = fakecloud.Faults{LatencyRate: 1, Latency: 20 * time.Millisecond, LatencyJitter: 10 * time.Millisecond}

// faultsAt returns the fake gateway's faults at offset d of a run: the
// base latency and the -faults that are on.
func (o options) faultsAt(d time.Duration) fakecloud.Faults {
	fs := baseFaults
	for _, f := range o.faults {
		if f.covers(d) {
			f.set(&fs)
		}
	}
	return fs
}

// faulting returns the -faults on at offset d of a run, e.g. "503=0.8";
// empty if none.
func (o options) faulting(d time.Duration) string {
	var on []string
	for _, f := range o.faults {
		if f.covers(d) {
			on = append(on, fmt.Sprintf("%s=%v", f.kind, f.rate))
		}
	}
	return strings.Join(on, ",")
}

// faultChanges returns the offsets within a run at which -faults turn on
// or off, in order.
func (o options) faultChanges() []time.Duration {
	var ts []time.Duration
	for _, f := range o.faults {
		ts = append(ts, f.from)
		if f.to > 0 {
			ts = append(ts, f.to)
		}
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	return slices.DeleteFunc(ts, func(d time.Duration) bool { return d >= o.duration })
}

// storm is what the fake gateway saw while a fault of -faults was on.
type storm struct {
	requests int64 // API requests it answered
	failed   int64 // of which 503 ServiceUnavailable or dropped
}

// add adds what happened between the counters a and b.
func (s *storm) add(a, b fakecloud.Counters) {
	s.requests += b.Requests - a.Requests
	s.failed += b.Unavailable - a.Unavailable + b.Dropped - a.Dropped
}

// applyFaults turns -faults on and off in cloud at their offsets from
// start, as the run begun at start goes on, and returns what cloud counted
// while a fault was on. It returns when ctx ends, or after the last change
// if no fault is on by then.
func applyFaults(ctx context.Context, o options, cloud *fakecloud.Cloud, start time.Time) storm {
	var s storm
	var last fakecloud.Counters
	on := false
	for _, d := range o.faultChanges() {
		if !sleepUntil(ctx, start.Add(d)) {
			break
		}
		now := cloud.Stats().Total
		if on {
			s.add(last, now)
		}
		cloud.SetFaults(o.faultsAt(d))
		last, on = now, o.faulting(d) != ""
	}
	if on { // until the end of the run
		<-ctx.Done()
		s.add(last, cloud.Stats().Total)
	}
	return s
}

// sleepUntil sleeps until t, reporting whether it got there before ctx
// ended.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
