package quotastore

import (
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
)

// Relayed is a follower's answer, carried to the tenant's leader.
type Relayed struct {
	Sent, Answered       time.Time // on the clock of the process that holds it
	Throttled, Transient bool
}

// LearnedTurn is what a process asks of a Store for a turn on a tenant
// the processes learn as one (Store.ReserveLearned).
type LearnedTurn struct {
	// Pace is the caller's learned pace (adaptive.Fleet.LearnedPace):
	// if the caller leads the tenant, the fleet's from now on. Zero if
	// its learner has not settled; a leader with none takes no turn.
	Pace adaptive.Pace
	// Hold, if positive, asks the followers to hold their requests for
	// that long, if the caller leads: its learner learns alone. Zero
	// lets them go.
	Hold time.Duration
	// MaxWait is how long the caller may wait for its turn; a negative
	// one takes none (a call that only relays Answers).
	MaxWait time.Duration
	// BookAhead, if positive, is how far ahead a turn at a learned pace
	// may be taken (the Transport takes 250 ms): one due later is not taken, and the
	// answer says when it would be.
	BookAhead time.Duration
	// Answers are the caller's answers to requests it sent as a
	// follower, since its last call.
	Answers []Relayed
	// NotBefore, if the caller leads, is when its own limiter's turns
	// end (adaptive.Fleet.Booked): its turns in the shared pacer begin
	// no earlier.
	NotBefore time.Time
	// Fresh says the caller knows nothing of the tenant yet
	// (adaptive.Fleet.Fresh): the estimate kept comes back with the
	// answer (Reservation.Learned).
	Fresh bool
}

// LearnedReservation is a Store's answer to a LearnedTurn.
type LearnedReservation struct {
	Reservation // the turn taken, at the leader's pace; or NoPace; with the estimate kept (Learned) for a Fresh caller or NoPace
	// Leader says the caller leads the tenant: its Limiter learns for
	// all, and Answers are the followers' answers since its last call.
	Leader  bool
	Answers []Relayed
	// Held says the caller follows, and the leader holds the followers:
	// nothing is taken; ask again after Wait.
	Held bool
	// Epoch counts the holds the leader began: a turn handed out before
	// the latest is void, whatever its due time (the leader learned
	// something since that it had not paced it by).
	Epoch int64
	// Said says the turn was taken at a pace said to another process
	// (Reserve), not learned: no process leads the tenant, and the
	// caller's own limiter learns the pace from its answers.
	Said bool
}
