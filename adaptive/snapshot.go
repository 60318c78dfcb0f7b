package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/fit"
)

// Source says where a Limiter's current limit came from.
type Source uint8

// The sources of a limit.
const (
	SourceNone    Source = iota // no limit: nothing said yet, no rule
	SourceRule                  // the static quota.Rule
	SourceHeaders               // the server's rate-limit headers
	SourceLearned               // learned from throttles
)

func (s Source) String() string {
	switch s {
	case SourceNone:
		return "none"
	case SourceRule:
		return "rule"
	case SourceHeaders:
		return "headers"
	case SourceLearned:
		return "learned"
	}
	return "Source(?)"
}

// Snapshot is a Limiter's state at one moment, for metrics and debugging.
type Snapshot struct {
	Rate       float64       // requests per second paced at; 0 means no pacing
	Burst      int           // bucket depth; 0 when there is no pacing
	Limit      int64         // at most Limit per Window is kept; 0 means no window limit
	Window     time.Duration // the window Limit applies to
	Remaining  int64         // the server's last Remaining; -1 if never said
	ResetAt    time.Time     // when that Remaining refills
	Stale      bool          // Remaining is older than HeaderTTL and ignored
	SaidShare  float64       // our share of the quota the server says, where others spend it too (1 alone; see Rate)
	PauseUntil time.Time     // end of the latest pause (the gate is closed before it); zero if none yet
	Probing    bool          // a probe is wanted or in flight
	InFlight   int64         // tickets neither done nor cancelled
	Waiting    int64         // callers of Wait in the tenant's line
	Source     Source        // where Rate came from
	Share      float64       // the share of the quota this process spends on its own (see Fleet.SetShare)

	// Classes is the line by class, highest first: Interactive, Default,
	// Batch (see Class).
	Classes [3]ClassSnapshot

	// Breaker is the state of the tenant's circuit breaker (closed if it
	// has none; see Limiter.Breaker), and BreakerUntil, if it is open,
	// when it lets a probe through.
	Breaker      breaker.State
	BreakerUntil time.Time

	// The learner's estimate of a server that does not say its limit
	// (see the package doc): L̂ requests per Ŵ, with Ŵ bounded in
	// (WindowLow, WindowHigh].
	Phase         Phase         // cold, measuring or settled
	Learned       float64       // the learned rate, LearnedLimit per LearnedWindow; 0 if none
	LearnedLimit  int64         // L̂, requests the server grants per window; 0 if none
	LearnedWindow time.Duration // Ŵ, the server's window as learned; 0 while unbounded
	WindowLow     time.Duration // the learned window is longer than this
	WindowHigh    time.Duration // and at most this; 0 while unbounded
	// N̂, the learned cap on requests in flight (see the package doc); 0
	// if none is found. InFlightCap is what is in force: N̂, or N̂+1 while
	// a probe tests whether the server's cap grew.
	InFlightLimit, InFlightCap int64

	// Fit is the family of server rules fitted to the tenant's answers
	// (package fit): the rule that explains them best and its score, the
	// best of another kind, and Ô, what someone we cannot see spends. The
	// zero Fit until the tenant's first throttle while the server says no
	// limit. PacedByFit says the estimate above is the fit's: a fixed
	// window, a sliding log (Limit less Ô per Window) or a token bucket
	// it named, which the record showed right where the estimator's own
	// was wrong (see the package doc). PacedBy is the rule the estimate paces by, as
	// package fit names rules: where the fit named a token bucket, its
	// rate and depth (LearnedLimit per LearnedWindow is then 1% under
	// that rate, kept as about 100 per window); zero while not settled.
	Fit        fit.Fit
	PacedByFit bool
	PacedBy    fit.Rule
}

// ClassSnapshot is one priority class's part of a tenant's line (see
// Priority). A caller admitted at once, with no one in line, is in none of
// its counts: the classes order only those who wait.
type ClassSnapshot struct {
	Waiting  int64  // callers of the class in line now
	Admitted uint64 // callers of the class admitted from the line so far
	// Refused counts the callers of the class refused in line because
	// their estimated admission passed their deadline (a *WaitError).
	Refused uint64
}

// Snapshot.Classes has one entry per class.
var _ [classes]ClassSnapshot = Snapshot{}.Classes

// Class returns the part of the line of class p.
func (sn Snapshot) Class(p Priority) ClassSnapshot { return sn.Classes[p.Index()] }

// Snapshot returns the Limiter's current state.
func (l *Limiter) Snapshot() Snapshot {
	var sn Snapshot
	if u := l.g.until.Load(); u != 0 {
		sn.PauseUntil = time.Unix(0, u)
	}
	sn.Probing = l.g.probe.Load() != 0
	sn.InFlight = l.inflight.Load()
	if ln := l.line.Load(); ln != nil {
		ln.mu.Lock()
		sn.Waiting = int64(len(ln.q))
		for c := range sn.Classes {
			sn.Classes[c] = ClassSnapshot{Waiting: int64(ln.waiting[c]), Admitted: ln.admitted[c], Refused: ln.refused[c]}
		}
		ln.mu.Unlock()
	}
	sn.Share = l.shareNow()
	sn.Breaker, sn.BreakerUntil = l.brk.State(), l.brk.OpenUntil()
	l.mu.Lock()
	s := &l.s
	sn.Remaining, sn.SaidShare = -1, 1
	if s.said != nil {
		sn.SaidShare = s.said.share()
	}
	if s.hRemAt > 0 {
		sn.Remaining, sn.ResetAt, sn.Stale = s.hRem, time.Unix(0, s.hReset), s.stale
	}
	sn.Limit, sn.Window = s.wlim, s.wlen // also when the bucket alone enforces it
	sn.Source = s.src
	if e := s.e; e != nil {
		sn.Phase = e.phase
		sn.LearnedLimit, sn.LearnedWindow = e.limit, time.Duration(e.win)
		sn.WindowLow, sn.WindowHigh = time.Duration(e.wlo), time.Duration(e.whi)
		if e.limit > 0 && e.win > 0 {
			sn.Learned = float64(e.limit) / time.Duration(e.win).Seconds()
		}
		sn.PacedByFit = e.followed && e.phase == PhaseSettled
		if e.phase == PhaseSettled {
			sn.PacedBy = e.rule()
		}
	}
	if f := s.f; f != nil {
		sn.InFlightLimit, sn.InFlightCap = f.limit, f.cap()
	}
	if d := s.fit; d != nil {
		sn.Fit = d.fit
	}
	sn.Rate, sn.Burst = s.rateNow, int(s.burstNow)
	if sn.Rate == 0 {
		sn.Burst = 0
	}
	l.mu.Unlock()
	return sn
}
