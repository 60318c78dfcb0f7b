// Package quotastore says what a store that shares tenants' quotas among
// processes does (Store), and the values it trades in, for the Transport
// (transport.Config.Store) and for implementations: package redisquota
// implements it on Redis. A user of a single process needs none of it;
// one whose processes share a quota sets transport.Config.Store to a
// Store, and reads the model in transport.Config.Store's doc.
package quotastore

import (
	"context"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
)

// Store shares tenants' quotas with the other processes that spend them
// (transport.Config.Store): before a request, the Transport reserves its admission
// from a pacer the processes share, sleeps until it is due, then waits on
// its own limiter as always. Package redisquota implements it on Redis.
//
// What is shared is the pace every process derives alike (see
// adaptive.Pace.Said): a rule's, and the one the server's rate-limit
// headers set, with the pauses the server asks for (Reserve).
//
// A tenant whose pace no process is told, the processes learn as one
// (ReserveLearned): one of them leads it, its learner learning for all
// from every answer the fleet gets, and the others follow its pace (see
// LearnedTurn). A process that knows nothing of a tenant yet
// (adaptive.Fleet.Fresh) asks so too: it takes its turn at the pace said
// to the others, if one is in force, until its own answers tell it. What
// a learner settles on (adaptive.Fleet.Learned) is kept (Publish), and
// a process that knows nothing of the tenant yet starts from it
// (adaptive.Fleet.Seed) instead of learning the quota again: learned
// quotas outlive the processes that learned them.
//
// Every method must return within the store's own timeout, however slow
// or far its backend: a caller waits on it before its request goes. An
// error makes the Transport go on without the store (see transport.Config.Store).
type Store interface {
	// Reserve takes tenant k's next admission from the shared pacer, at
	// the said pace p, if it is due within maxWait; otherwise it takes
	// nothing and says when it would be.
	Reserve(ctx context.Context, k quota.Key, p adaptive.Pace, maxWait time.Duration) (Reservation, error)
	// Cancel gives back a reservation whose request will not be sent, if
	// no later one was taken after it (as a token bucket gives back a
	// token).
	Cancel(ctx context.Context, k quota.Key, r Reservation) error
	// Pause holds tenant k's shared pacer until until: no admission
	// reserved after the call is due before it.
	Pause(ctx context.Context, k quota.Key, until time.Time) error
	// Publish keeps e as what a learner last settled on for tenant k, for
	// processes that start cold on it (LearnedTurn.Fresh), replacing
	// what was kept.
	Publish(ctx context.Context, k quota.Key, e adaptive.Estimate) error
	// ReserveLearned is Reserve for a tenant whose pace no process is
	// told, which the processes learn as one (see LearnedTurn): it makes
	// the caller the tenant's leader if it is, or if no process leads it
	// lately; it takes the leader's pace from the leader's calls, and
	// holds the followers while the leader asks; it carries the
	// followers' answers to the leader.
	ReserveLearned(ctx context.Context, k quota.Key, turn LearnedTurn) (LearnedReservation, error)
}

// Reservation is an admission reserved from a Store.
type Reservation struct {
	OK       bool          // it was due within maxWait, and is taken
	NoPace   bool          // no pace is in force, and the caller has none (ReserveLearned): nothing taken
	Wait     time.Duration // from the call until it is due (would be, if not OK)
	Interval time.Duration // the interval of the pace it was taken at
	Peers    int           // processes seen spending the tenant's quota lately, this one included
	Token    int64         // the store's mark of the reservation, for Cancel
	// Learned is what a learner last settled on for the tenant (see
	// Store.Publish), for a caller of ReserveLearned that knows nothing
	// yet or finds no pace in force; zero if nothing is kept.
	Learned adaptive.Estimate
}
