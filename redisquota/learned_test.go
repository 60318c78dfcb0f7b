package redisquota

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quotastore"
)

// TestPublishedEstimateReadCold: what Publish keeps, a process that knows
// nothing of the tenant yet reads back with its first turn, to the
// microsecond; reading it keeps it another EstimateTTL, and after that
// long unread it is gone.
func TestPublishedEstimateReadCold(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{EstimateTTL: time.Hour})
	if got := reserveCold(t, s); got != (adaptive.Estimate{}) {
		t.Fatalf("before Publish: %+v, want no estimate", got)
	}
	e := adaptive.Estimate{Limit: 50, Window: time.Second, WindowLow: 943806 * time.Microsecond, WindowHigh: 1045171 * time.Microsecond}
	if err := s.Publish(context.Background(), tenant, e); err != nil {
		t.Fatal(err)
	}
	m.advance(50 * time.Minute)
	if got := reserveCold(t, s); got != e {
		t.Fatalf("after Publish: %+v, want %+v", got, e)
	}
	m.advance(50 * time.Minute) // read 50 min ago: kept
	if got := reserveCold(t, s); got != e {
		t.Fatalf("50 min after it was read: %+v, want it kept", got)
	}
	m.advance(61 * time.Minute)
	if got := reserveCold(t, s); got != (adaptive.Estimate{}) {
		t.Errorf("unread for longer than EstimateTTL: %+v, want it gone", got)
	}
}

// TestPublishedEstimateOnlyForCold: the estimate comes to a process that
// knows nothing of the tenant yet, and to one that finds no pace in
// force; not to one that takes its turn at the leader's pace.
func TestPublishedEstimateOnlyForCold(t *testing.T) {
	m := newMini(t)
	a, b := m.store(t, Config{ID: "a"}), m.store(t, Config{ID: "b"})
	e := adaptive.Estimate{Limit: 5, Window: time.Second}
	if err := a.Publish(context.Background(), tenant, e); err != nil {
		t.Fatal(err)
	}
	learnTurn(t, a, quotastore.LearnedTurn{Pace: adaptive.Pace{Interval: 100 * time.Millisecond, Burst: 1, Source: adaptive.SourceLearned}})
	if r := learnTurn(t, b, quotastore.LearnedTurn{}); !r.OK || r.Learned != (adaptive.Estimate{}) {
		t.Errorf("a follower that knows the tenant: %+v, want a turn and no estimate", r)
	}
	if r := learnTurn(t, b, quotastore.LearnedTurn{Fresh: true}); !r.OK || r.Learned != e {
		t.Errorf("a follower that knows nothing: %+v, want a turn and the estimate", r)
	}
}

// TestPublishedEstimateGarbage: an estimate that is not Valid is not
// published, and garbage in Redis reads as none, without an error.
func TestPublishedEstimateGarbage(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	calls := s.Stats().Calls
	if err := s.Publish(context.Background(), tenant, adaptive.Estimate{Limit: 0, Window: time.Second}); err != nil || s.Stats().Calls != calls {
		t.Errorf("Publish of an invalid estimate: %v, %d calls; want nil and none", err, s.Stats().Calls-calls)
	}
	k := keysOf(DefaultPrefix, tenant).learn
	for _, v := range [][]string{
		{"l", "lots", "w", "1000000"},
		{"l", "5", "w", "-3"},
		{"l", "5", "w", "99999999999999999999"},
		{"l", "5"},
		{"l", "1e300", "w", "1000000"},
	} {
		m.Del(k)
		m.HSet(k, v...)
		if got := reserveCold(t, s); got != (adaptive.Estimate{}) {
			t.Errorf("learned hash %v: %+v, want no estimate", v, got)
		}
	}
}

// reserveCold asks for a turn as a process that knows nothing of the
// tenant and has no pace (it leads, and takes none), failing the test on
// an error; it returns the estimate that comes with the answer.
func reserveCold(t *testing.T, s *Store) adaptive.Estimate {
	t.Helper()
	r := learnTurn(t, s, quotastore.LearnedTurn{Fresh: true})
	if !r.NoPace || r.OK {
		t.Fatalf("a cold leader: %+v; want NoPace, nothing taken", r)
	}
	return r.Learned
}
