package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/fit"
)

// fitted is the learner's record of a tenant's answers and the family of
// server rules fitted to it (package fit). It begins at the tenant's first
// throttle while the server says no limit, so a tenant never throttled
// pays nothing for it. Limiter.mu guards it.
//
// It does not pace yet: today's estimator does (estimate.go). The fit
// shows in Snapshot.Fit, beside it, to be judged on the shape matrix.
type fitted struct {
	rec   fit.Record
	fit   fit.Fit
	thr   bool   // the last answer recorded was a throttle
	since uint64 // answers recorded since the last fit
}

// record keeps the answer to ticket t, answered at now, and fits again
// where the answers turn: at the first throttle of a run (a count spent)
// and at the first success after one (a refill, a window's end seen). It
// fits no more often than once per sixteenth of the record, so answers
// that turn at every request (shedding) cost a fit per 32 answers at most.
//
// The record holds the newest answers (fit.Size): a settled tenant that
// throttles once in hundreds keeps the fit it made while it still held
// throttles. Counts that outlive the ring, so that long windows and rare
// probes keep their evidence, are the next stage's (#35).
func (d *fitted) record(t *Ticket, now int64, throttled bool) {
	d.rec.Add(fit.Answer{
		Sent:      time.Unix(0, t.at),
		Answered:  time.Unix(0, now),
		InFlight:  int(t.level),
		Throttled: throttled,
	})
	d.since++
	if throttled != d.thr && d.since >= uint64(max(d.rec.Len()/16, 1)) {
		if f := d.rec.Fit(); !d.stands(f) {
			d.fit = f
		}
		d.since = 0
	}
	d.thr = throttled
}

// stands reports whether the fit in force stands against a new one f:
// where the record's throttles have all scrolled out (a settled tenant
// probes rarely), it says nothing; where a quota explains more of them
// than no quota does, but by less than chance could (see package fit), it
// does not show the quota gone. Only evidence replaces a quota by none.
func (d *fitted) stands(f fit.Fit) bool {
	if d.fit.Best.Kind == fit.None {
		return false
	}
	if f.Throttles == 0 {
		return true
	}
	return f.Best.Kind == fit.None && f.RunnerUp.Kind != fit.None && f.RunnerUpScore < f.Score
}

// learnFit gives the answer to ticket t to the record, while the server
// says no limit: from the first throttle on. l.mu is held.
func (l *Limiter) learnFit(t *Ticket, now int64, throttled bool) {
	s := &l.s
	if !l.learning() {
		return
	}
	if s.fit == nil {
		if !throttled {
			return
		}
		s.fit = new(fitted)
	}
	s.fit.record(t, now, throttled)
}
