package redisquota

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quotastore"
)

// learnTurn asks s for a turn on tenant as ReserveLearned, failing the
// test on an error.
func learnTurn(t *testing.T, s *Store, lt quotastore.LearnedTurn) quotastore.LearnedReservation {
	t.Helper()
	if lt.MaxWait == 0 {
		lt.MaxWait = forever
	}
	r, err := s.ReserveLearned(context.Background(), tenant, lt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReserveLearnedLeads: the first process to call leads the tenant; a
// leader with no pace takes no turn; its hold holds the others, who take
// nothing and ask again soon; its pace, once it has one, is theirs; and
// its lease passes to another process once it stops calling.
func TestReserveLearnedLeads(t *testing.T) {
	m := newMini(t)
	a, b := m.store(t, Config{ID: "a"}), m.store(t, Config{ID: "b"})
	r := learnTurn(t, a, quotastore.LearnedTurn{Hold: time.Second})
	if !r.Leader || !r.NoPace || r.OK {
		t.Fatalf("first call, no pace: %+v; want the leader, no turn", r)
	}
	r = learnTurn(t, b, quotastore.LearnedTurn{})
	if r.Leader || !r.Held || r.OK || r.Wait <= 0 || r.Wait > heldPoll {
		t.Fatalf("a follower while the leader holds: %+v; want held, ask again within %v", r, heldPoll)
	}
	pace := adaptive.Pace{Interval: 20 * time.Millisecond, Burst: 1, Source: adaptive.SourceLearned}
	r = learnTurn(t, a, quotastore.LearnedTurn{Pace: pace})
	if !r.Leader || !r.OK || r.Wait != 0 {
		t.Fatalf("the leader with a pace, no hold: %+v; want a turn now", r)
	}
	r = learnTurn(t, b, quotastore.LearnedTurn{Pace: adaptive.Pace{Interval: time.Millisecond, Burst: 1}})
	if r.Leader || !r.OK || r.Interval != 20*time.Millisecond || r.Wait != 20*time.Millisecond {
		t.Fatalf("a follower with a pace of its own: %+v; want a turn at the leader's, 20ms on", r)
	}
	m.advance(leaderLease + time.Millisecond)
	if r = learnTurn(t, b, quotastore.LearnedTurn{}); !r.Leader {
		t.Fatalf("after the leader's lease: %+v; want b to lead", r)
	}
	if r = learnTurn(t, a, quotastore.LearnedTurn{Pace: pace}); r.Leader || r.Interval != 20*time.Millisecond {
		t.Fatalf("the old leader: %+v; want it to follow, at the pace in force", r)
	}
}

// TestReserveLearnedRelays: a follower's answers reach the leader at its
// next call, once, with their ages kept to the microsecond on Redis's
// clock however the two processes' clocks disagree.
func TestReserveLearnedRelays(t *testing.T) {
	m := newMini(t)
	a, b := m.store(t, Config{ID: "a"}), m.store(t, Config{ID: "b"})
	learnTurn(t, a, quotastore.LearnedTurn{})
	now := time.Now()
	sent := []quotastore.Relayed{
		{Sent: now.Add(-300 * time.Millisecond), Answered: now.Add(-250 * time.Millisecond)},
		{Sent: now.Add(-200 * time.Millisecond), Answered: now.Add(-100 * time.Millisecond), Throttled: true},
		{Sent: now.Add(-50 * time.Millisecond), Answered: now.Add(-40 * time.Millisecond), Transient: true},
	}
	learnTurn(t, b, quotastore.LearnedTurn{Answers: sent})
	m.advance(70 * time.Millisecond) // on Redis's clock; the processes' clocks do not move
	r := learnTurn(t, a, quotastore.LearnedTurn{})
	if !r.Leader || len(r.Answers) != len(sent) {
		t.Fatalf("the leader got %+v, want the %d answers relayed", r, len(sent))
	}
	slack := time.Since(now) + time.Millisecond // the real time the calls took
	for i, got := range r.Answers {
		w := sent[i]
		// 70 ms passed on Redis between the calls: the answers are as
		// much older.
		if d := w.Sent.Add(-70 * time.Millisecond).Sub(got.Sent); d < -slack || d > slack {
			t.Errorf("answer %d sent at %v, want %v", i, got.Sent.Sub(now), w.Sent.Add(-70*time.Millisecond).Sub(now))
		}
		if d := got.Answered.Sub(got.Sent) - w.Answered.Sub(w.Sent); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("answer %d took %v, want %v", i, got.Answered.Sub(got.Sent), w.Answered.Sub(w.Sent))
		}
		if got.Throttled != w.Throttled || got.Transient != w.Transient {
			t.Errorf("answer %d: %+v, want %+v", i, got, w)
		}
	}
	if r := learnTurn(t, a, quotastore.LearnedTurn{}); len(r.Answers) != 0 {
		t.Errorf("relayed twice: %+v", r.Answers)
	}
}

// TestReserveLearnedTakesSaidPace: a tenant whose pace another process is
// told is not learned: a process that knows nothing takes its turn at it,
// leads nothing, and is never held.
func TestReserveLearnedTakesSaidPace(t *testing.T) {
	m := newMini(t)
	a, b := m.store(t, Config{ID: "a"}), m.store(t, Config{ID: "b"})
	learnTurn(t, b, quotastore.LearnedTurn{Hold: time.Second}) // b leads, and holds
	reserve(t, a, adaptive.Pace{Interval: 10 * time.Millisecond, Burst: 1, Source: adaptive.SourceHeaders})
	r := learnTurn(t, b, quotastore.LearnedTurn{})
	if r.Leader || r.Held || !r.OK || r.Interval != 10*time.Millisecond {
		t.Errorf("with a said pace in force: %+v; want a turn at it", r)
	}
}

// TestRelayedGarbage: what cannot be a relayed answer is dropped.
func TestRelayedGarbage(t *testing.T) {
	now := time.Now()
	for _, s := range []string{"", "1,2", "a,b,1", "-1,0,1", "5,9,1", "1,2,3,4", "99999999999999999999,0,1"} {
		if a, ok := decodeRelayed(s, now); ok {
			t.Errorf("decodeRelayed(%q) = %+v, want garbage", s, a)
		}
	}
	if a, ok := decodeRelayed("9,5,1", now); !ok || !a.Throttled || now.Sub(a.Sent) != 9*time.Microsecond {
		t.Errorf("decodeRelayed(9,5,1) = %+v, %v", a, ok)
	}
}
