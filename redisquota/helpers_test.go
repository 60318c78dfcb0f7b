package redisquota

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/quotastore"
)

// t0 is when the tests' miniredis clock starts.
var t0 = time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)

// forever is the maxWait of a caller with no deadline.
const forever = time.Duration(math.MaxInt64)

// tenant is the tests' tenant.
var tenant = quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "1234567890123456", API: "DescribeInstances"}

// mini is a miniredis whose clock stands still until advance moves it:
// TIME, in scripts too, reads it, and keys expire as it passes them.
type mini struct {
	*miniredis.Miniredis
	now    time.Time
	client *redis.Client
}

func newMini(t *testing.T) *mini {
	t.Helper()
	m := &mini{Miniredis: miniredis.RunT(t), now: t0}
	m.SetTime(t0)
	m.ClockTTL(true)
	m.client = redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { m.client.Close() })
	return m
}

// advance moves the clock d on.
func (m *mini) advance(d time.Duration) {
	m.now = m.now.Add(d)
	m.SetTime(m.now)
}

// store returns a Store on m set up by cfg. A zero Timeout is 5 s here:
// these tests check what the scripts do, not how fast, and gopher-lua
// under the race detector is slow.
func (m *mini) store(t *testing.T, cfg Config) *Store {
	t.Helper()
	cfg.Client = m.client
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reserve reserves tenant's next admission at p with no deadline, failing
// the test on an error.
func reserve(t *testing.T, s *Store, p adaptive.Pace) quotastore.Reservation {
	t.Helper()
	r, err := s.Reserve(context.Background(), tenant, p, forever)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK {
		t.Fatalf("Reserve with no deadline refused: %+v", r)
	}
	return r
}

// waits reserves n admissions at p and returns their waits.
func waits(t *testing.T, s *Store, p adaptive.Pace, n int) []time.Duration {
	t.Helper()
	w := make([]time.Duration, n)
	for i := range w {
		w[i] = reserve(t, s, p).Wait
	}
	return w
}

// ms is a list of durations in milliseconds, for tables.
func ms(v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x) * time.Millisecond
	}
	return d
}
