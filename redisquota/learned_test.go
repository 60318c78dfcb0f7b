package redisquota

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
)

// TestPublishedEstimateReadCold: what Publish keeps, a process that asks
// for the shared pace (a zero Pace) and finds none reads back, to the
// microsecond; reading it keeps it another EstimateTTL, and after that
// long unread it is gone.
func TestPublishedEstimateReadCold(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{EstimateTTL: time.Hour})
	if r, err := s.Reserve(context.Background(), tenant, adaptive.Pace{}, forever); err != nil || !r.NoPace || r.Learned != (adaptive.Estimate{}) {
		t.Fatalf("before Publish: %+v, %v; want NoPace and no estimate", r, err)
	}
	e := adaptive.Estimate{Limit: 50, Window: time.Second, WindowLow: 943806 * time.Microsecond, WindowHigh: 1045171 * time.Microsecond}
	if err := s.Publish(context.Background(), tenant, e); err != nil {
		t.Fatal(err)
	}
	m.advance(50 * time.Minute)
	r, err := s.Reserve(context.Background(), tenant, adaptive.Pace{}, forever)
	if err != nil || !r.NoPace || r.OK || r.Learned != e {
		t.Fatalf("after Publish: %+v, %v; want NoPace, nothing taken, Learned %+v", r, err, e)
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

// TestPublishedEstimateNotForPacedTenants: a process whose tenant has a
// pace in force takes its turn; the estimate is only for those that find
// none.
func TestPublishedEstimateNotForPacedTenants(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	if err := s.Publish(context.Background(), tenant, adaptive.Estimate{Limit: 5, Window: time.Second}); err != nil {
		t.Fatal(err)
	}
	reserve(t, s, adaptive.Pace{Interval: 100 * time.Millisecond, Burst: 1})
	if r := reserve(t, s, adaptive.Pace{}); r.Learned != (adaptive.Estimate{}) || r.Interval != 100*time.Millisecond {
		t.Errorf("zero Pace with a pace in force: %+v, want a turn at it and no estimate", r)
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
		r, err := s.Reserve(context.Background(), tenant, adaptive.Pace{}, forever)
		if err != nil || !r.NoPace || r.Learned != (adaptive.Estimate{}) {
			t.Errorf("learned hash %v: %+v, %v; want NoPace, no estimate, no error", v, r, err)
		}
	}
}

// reserveCold asks for the shared pace, as a process that knows nothing
// of the tenant, failing the test on an error.
func reserveCold(t *testing.T, s *Store) adaptive.Estimate {
	t.Helper()
	r, err := s.Reserve(context.Background(), tenant, adaptive.Pace{}, forever)
	if err != nil || !r.NoPace {
		t.Fatalf("zero Pace: %+v, %v; want NoPace", r, err)
	}
	return r.Learned
}
