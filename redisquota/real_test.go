package redisquota

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/redistest"
	"github.com/tollgate-go/tollgate/quotastore"
)

// newReal starts a redis-server for the test and returns it with a client,
// closed when the test ends.
func newReal(t testing.TB) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return srv, c
}

// within fails the test unless lo < d <= hi.
func within(t *testing.T, what string, d, lo, hi time.Duration) {
	t.Helper()
	if d <= lo || d > hi {
		t.Fatalf("%s = %v, want in (%v, %v]", what, d, lo, hi)
	}
}

// TestRealRedis runs Reserve, Cancel and Pause on a real Redis, whose Lua
// and clock are not miniredis's, and checks that a restart that lost the
// keys and the script cache costs one more command and no more than a
// burst.
func TestRealRedis(t *testing.T) {
	srv, c := newReal(t)
	s, err := New(Config{Client: c, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := adaptive.Pace{Interval: time.Second, Burst: 2, Limit: 3, Window: 10 * time.Second, Source: adaptive.SourceHeaders}

	r1, r2, r3 := reserve(t, s, p), reserve(t, s, p), reserve(t, s, p)
	if r1.Wait != 0 || r2.Wait != 0 || r1.Peers != 1 {
		t.Fatalf("first two reservations = %+v, %+v; want no wait, 1 peer", r1, r2)
	}
	within(t, "third wait", r3.Wait, 800*time.Millisecond, time.Second)

	if err := s.Cancel(ctx, tenant, r3); err != nil {
		t.Fatal(err)
	}
	again := reserve(t, s, p)
	if again.Token != r3.Token {
		t.Fatalf("the reservation after giving back the third has token %d, want the third's %d", again.Token, r3.Token)
	}
	within(t, "wait after giving back", again.Wait, 700*time.Millisecond, time.Second)

	// The window (3 per 10 s) now holds the next one back.
	within(t, "fourth wait", reserve(t, s, p).Wait, 9*time.Second, 10*time.Second)

	if err := s.Pause(ctx, tenant, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	within(t, "wait in a 1 min pause", reserve(t, s, p).Wait, 59*time.Second, time.Minute)

	keys, err := c.Keys(ctx, DefaultPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 {
		t.Fatalf("keys = %q, want 4", keys)
	}
	for _, k := range keys { // the log's lasts longest: the pause, then the window, then a second
		if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 || ttl > 72*time.Second {
			t.Errorf("%s has TTL %v", k, ttl)
		}
	}

	srv.Restart()
	before := s.Stats()
	var got []time.Duration
	for range 3 {
		r, err := s.Reserve(ctx, tenant, p, forever)
		if err != nil {
			t.Fatalf("Reserve after a restart: %v", err)
		}
		got = append(got, r.Wait)
	}
	if n := s.Stats().Calls - before.Calls; n != 4 {
		t.Errorf("3 reservations after a restart took %d commands, want 4: EVALSHA, EVAL, and EVALSHA twice", n)
	}
	if got[0] != 0 || got[1] != 0 {
		t.Fatalf("waits after a restart = %v, want a burst of 2", got)
	}
	within(t, "third wait after a restart", got[2], 800*time.Millisecond, time.Second)
}

// TestRealRedisDown checks that while Redis is down every method fails
// within Timeout, and that the Store works again once Redis is back.
func TestRealRedisDown(t *testing.T) {
	srv, c := newReal(t)
	const timeout = 50 * time.Millisecond
	s, err := New(Config{Client: c, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	// The admission the calls below need is taken through a store at the
	// default timeout: the first call to a fresh redis-server loads the
	// scripts, and on a loaded CI machine took longer than 50 ms once.
	setup, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	r := reserve(t, setup, every100ms)

	srv.Stop()
	for name, call := range methods(s, r) {
		start := time.Now()
		err := call(context.Background())
		elapsed := time.Since(start)
		t.Logf("%s %s: %v after %v", name, "with Redis down", err, elapsed)
		if err == nil || !strings.HasPrefix(err.Error(), "redisquota: "+name+": ") {
			t.Errorf("%s with Redis down: %v; want a redisquota: %s: error", name, err, name)
		}
		if elapsed > timeout+timeoutMargin {
			t.Errorf("%s with Redis down took %v, want at most %v", name, elapsed, timeout+timeoutMargin)
		}
	}
	if st := s.Stats(); st.Errors < 3 {
		t.Errorf("Stats after 3 failed calls = %+v", st)
	}

	// Once Redis is back the store works again: within a few tries, as a
	// try may meet the 50 ms timeout while the fresh server loads the
	// scripts on a loaded machine.
	srv.Restart()
	for try := 1; ; try++ {
		_, err := s.Reserve(context.Background(), tenant, every100ms, forever)
		if err == nil {
			break
		}
		if try == 5 {
			t.Fatalf("Reserve once Redis is back, %d tries: %v", try, err)
		}
	}
}

// timeoutMargin is how much longer than Timeout a failing call may take
// in the tests: scheduling on a busy CI machine, and the race detector.
// A client that ignored the deadline would take its ReadTimeout, 5 s.
const timeoutMargin = 200 * time.Millisecond

// methods returns a call of each of s's methods, by the name its errors
// give, that reaches Redis: r must have taken an admission.
func methods(s *Store, r quotastore.Reservation) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"reserve": func(ctx context.Context) error {
			_, err := s.Reserve(ctx, tenant, every100ms, forever)
			return err
		},
		"cancel": func(ctx context.Context) error {
			return s.Cancel(ctx, tenant, r)
		},
		"pause": func(ctx context.Context) error {
			return s.Pause(ctx, tenant, time.Now().Add(time.Second))
		},
	}
}
