package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Fleet is the side of a Limiter that a store sharing the tenant's quota
// among processes works with (package transport's Config.Store, and
// quotastore.Store): the pace said to the tenant (Pace), the share of it
// this process spends while the store is out of reach (SetShare), what the
// learner settled on and the seed that starts another process from it
// (Learned, Seed), and the fleet's learning through one leader. A user of
// one process needs none of it.
//
// A fleet of processes that spends one quota the server does not say
// learns it through one Limiter, its leader's: the others send at the pace
// it learned (LearnedPace), hold while it learns alone (Holding), and
// relay their answers to it (ObserveRelayed), so that its learner counts
// every request the server counts, as if the fleet were one client.
//
// A Fleet is a small value, got from Limiter.Fleet (the zero Fleet has no
// Limiter, and its methods panic); like its Limiter, it is safe for
// concurrent use.
type Fleet struct{ l *Limiter }

// Fleet returns the side of l that a store sharing its quota works with.
func (l *Limiter) Fleet() Fleet { return Fleet{l} }

// ObserveRelayed learns from an answer another process got, for a request
// it sent at sent (obs.At is when the answer came; both on this process's
// clock) at the pace this Limiter set for it: the learner counts it as one
// of its own, admitted at sent, but it is not in flight here and tells
// nothing of the round trip. A request sent while the learner measured or
// tested a throttle alone (see Holding) was sent before that began, as far
// as the learner can tell.
func (f Fleet) ObserveRelayed(obs quota.Observation, sent time.Time) {
	l := f.l
	if obs.At.IsZero() {
		obs.At = time.Now()
	}
	at := sent.UnixNano()
	if sent.IsZero() || sent.After(obs.At) {
		at = obs.At.UnixNano()
	}
	l.seq.Add(1) // an admission of the fleet's
	l.observe(obs, &Ticket{l: l, at: at, relayed: true})
}

// relayedSeq is the admission number the learner gives a relayed answer,
// whose request this Limiter did not number: 0 (before any mark the
// learner set), but for one sent within a probe above L̂, or before the
// throttle that failed it could be known (its arrival, the relay's lag and
// the spread of arrival delays), which counts as the probe's. l.mu is
// held.
func (l *Limiter) relayedSeq(t *Ticket) uint64 {
	e := l.s.e
	if e == nil || e.spanSeq == 0 || t.at < e.spanAt {
		return 0
	}
	if e.spanEnd != 0 || e.spanStop != 0 && t.at < e.stopAt+l.s.relayLag+l.spread() {
		return e.spanSeq
	}
	return 0
}

// Holding reports whether the processes that follow this Limiter's
// learned pace should hold their requests: its learner learns alone,
// which needs its own requests to be the only ones the server counts. So
// in slow start while its callers wait on its cap (without them, the
// others go on), while a window is measured, while a throttle is tested
// and its refill sought, while its gate is closed or its probe out, and
// once settled until the requests its own bucket paced meanwhile have
// gone. But no hold lasts longer than maxHold or four windows: a learner
// that cannot settle (a server whose window is no fixed one) starves no
// follower, which then goes on by its own limiter until this one
// settles.
func (f Fleet) Holding() bool {
	l := f.l
	now := time.Now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.alone(now) {
		l.s.holdAt = 0
		return false
	}
	if l.s.holdAt == 0 {
		l.s.holdAt = now
	}
	limit := int64(maxHold)
	if e := l.s.e; e != nil {
		limit = max(limit, 4*max(e.whi, e.win))
	}
	return now-l.s.holdAt < limit
}

// alone reports whether the learner learns alone at now (see Holding).
// l.mu is held.
func (l *Limiter) alone(now int64) bool {
	if u := l.g.until.Load(); now < u || l.g.probe.Load() != 0 {
		return true
	}
	if !l.learning() || l.s.src == SourceRule || l.s.hRemAt > 0 {
		return false
	}
	e := l.s.e
	if e == nil {
		// The first slow start: for coldHold from its first call, and
		// after it while this process's callers could send more than
		// its cap lets them. A leader that cannot find the quota's end
		// alone lets the others go.
		if l.s.coldAt == 0 {
			l.s.coldAt = now
		}
		return now-l.s.coldAt < int64(coldHold) || l.held(now, max(4*l.s.rtt, int64(100*time.Millisecond)))
	}
	// Settled, the followers go once this Limiter's own queue, paced by
	// its bucket before the shared pacer took over, has drained: until
	// then its bucket and the shared pacer would pace at once.
	return e.phase != PhaseSettled || e.seeking || now < l.b.tat.Load()-l.b.tau.Load()
}

// maxHold is how long, at least, a hold of the followers may last (see
// Holding): the learner's first slow start and a few windows measured,
// where windows are a second or so.
const maxHold = 10 * time.Second

// coldHold is how long, at least, the followers of a leader in its first
// slow start hold: long enough for its callers to spend a quota alone
// wherever they can, since slow start doubles what they send per round
// trip.
const coldHold = 2 * time.Second

// LearnedPace returns the pace the learner has settled on, as a store
// shares it with the processes that follow this Limiter, for turns due
// ahead from now (a shared pacer hands its turns out ahead of time, so a
// new pace reaches the server that much later): L̂ per Ŵ and the spread
// of arrival delays, evenly, or one more per window from the start of a
// probe above L̂ at now+ahead. It is the zero Pace while the learner is not
// settled, or the server says its limit, or a rule paces.
func (f Fleet) LearnedPace(ahead time.Duration) Pace {
	l := f.l
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.s.e
	if l.s.src != SourceLearned || e == nil || e.phase != PhaseSettled || e.seeking {
		return Pace{}
	}
	limit, win := e.paceAt(time.Now().UnixNano()+int64(max(ahead, 0)), l.spread())
	if limit <= 0 || win <= 0 {
		return Pace{}
	}
	rate := l.paced(float64(limit)*1e9/float64(win), SourceLearned)
	return Pace{Interval: intervalOf(rate), Burst: 1, Source: SourceLearned}
}

// Booked returns when the Limiter's own bucket is free again: the turns it
// handed out before then are taken. A shared pacer that takes over the
// pace from it (see LearnedPace) starts no earlier, or the two would
// overlap.
func (f Fleet) Booked() time.Time {
	l := f.l
	return time.Unix(0, l.b.tat.Load()-l.b.tau.Load())
}

// MarkDemand records that a caller waited for its turn at now in a pacer
// kept elsewhere (see WaitPaced): demand, as if this Limiter had held it
// back, which the learner needs before it probes above L̂.
func (f Fleet) MarkDemand(now time.Time) { f.l.markBlocked(now.UnixNano()) }
