package redisquota

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/quotastore"
)

var (
	every100ms = adaptive.Pace{Interval: 100 * time.Millisecond, Burst: 1, Source: adaptive.SourceRule}
	burst3     = adaptive.Pace{Interval: 100 * time.Millisecond, Burst: 3, Source: adaptive.SourceRule}
)

func TestReservePacesByInterval(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	if got, want := waits(t, s, every100ms, 4), ms(0, 100, 200, 300); !slices.Equal(got, want) {
		t.Fatalf("waits at the same instant = %v, want %v", got, want)
	}
	m.advance(250 * time.Millisecond)
	if got, want := reserve(t, s, every100ms).Wait, 150*time.Millisecond; got != want {
		t.Fatalf("wait 250 ms later = %v, want %v", got, want)
	}
}

// TestReserveShared checks that processes reserving at once share one
// pacer: 2 Stores, 8 goroutines each, get every slot once.
func TestReserveShared(t *testing.T) {
	m := newMini(t)
	stores := []*Store{m.store(t, Config{}), m.store(t, Config{})}
	const each = 5
	var (
		mu  sync.Mutex
		got []time.Duration
		wg  sync.WaitGroup
	)
	for _, s := range stores {
		for range 8 {
			wg.Go(func() {
				for range each {
					r, err := s.Reserve(context.Background(), tenant, every100ms, forever)
					if err != nil || !r.OK {
						t.Errorf("Reserve = %+v, %v", r, err)
						return
					}
					mu.Lock()
					got = append(got, r.Wait)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(got)
	want := make([]time.Duration, 2*8*each)
	for i := range want {
		want[i] = time.Duration(i) * 100 * time.Millisecond
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sorted waits = %v, want every 100 ms slot once", got)
	}
}

func TestReserveBurst(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	if got, want := waits(t, s, burst3, 5), ms(0, 0, 0, 100, 200); !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	// Idle long enough to refill: a whole burst again, no more.
	m.advance(time.Second)
	if got, want := waits(t, s, burst3, 4), ms(0, 0, 0, 100); !slices.Equal(got, want) {
		t.Fatalf("waits after a second idle = %v, want %v", got, want)
	}
}

// TestReserveToken checks that the token is the new arrival time in
// microseconds, exact although it is past 2^50: the scripts keep numbers
// as integer strings.
func TestReserveToken(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	m.advance(1234567 * time.Microsecond)
	r := reserve(t, s, every100ms)
	if want := m.now.UnixMicro() + 100000; r.Token != want {
		t.Fatalf("Token = %d, want %d", r.Token, want)
	}
	if got, want := m.HGet(keysOf(DefaultPrefix, tenant).tat, "t"), strconv.FormatInt(r.Token, 10); got != want {
		t.Fatalf("stored tat = %q, want %q", got, want)
	}
}

func TestReserveBeyondMaxWaitTakesNothing(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	ctx := context.Background()
	reserve(t, s, every100ms)
	for _, maxWait := range []time.Duration{99 * time.Millisecond, 0, -time.Second} {
		r, err := s.Reserve(ctx, tenant, every100ms, maxWait)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK || r.Wait != 100*time.Millisecond {
			t.Fatalf("Reserve with maxWait %v = %+v, want not OK, Wait 100ms", maxWait, r)
		}
	}
	r, err := s.Reserve(ctx, tenant, every100ms, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Wait != 100*time.Millisecond {
		t.Fatalf("Reserve with maxWait 100ms = %+v, want OK, Wait 100ms: the refusals took nothing", r)
	}
	// Nothing is due within a negative maxWait, not even now.
	m.advance(time.Hour)
	if r, err := s.Reserve(ctx, tenant, every100ms, -time.Nanosecond); err != nil || r.OK {
		t.Fatalf("Reserve with negative maxWait = %+v, %v; want not OK", r, err)
	}
}

func TestCancelGivesBackOnlyTheLatest(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	ctx := context.Background()
	r1, r2 := reserve(t, s, every100ms), reserve(t, s, every100ms)

	cancel := func(r quotastore.Reservation) {
		t.Helper()
		if err := s.Cancel(ctx, tenant, r); err != nil {
			t.Fatal(err)
		}
	}
	cancel(r1) // r2 came after it: nothing
	cancel(r2) // the latest: given back
	cancel(r2) // given back already
	cancel(r1) // now tat is r1's token, but r1 is not the latest given
	if got, want := reserve(t, s, every100ms).Wait, 100*time.Millisecond; got != want {
		t.Fatalf("wait after giving back r2 = %v, want %v (r2's slot, and only it)", got, want)
	}

	calls := s.Stats().Calls
	cancel(quotastore.Reservation{Wait: time.Second}) // not OK: took nothing
	if got := s.Stats().Calls; got != calls {
		t.Fatalf("Cancel of a reservation that took nothing made %d calls", got-calls)
	}
}

func TestCancelLeavesWindowLog(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	p := adaptive.Pace{Interval: time.Millisecond, Burst: 10, Limit: 2, Window: time.Second, Source: adaptive.SourceHeaders}
	reserve(t, s, p)
	r := reserve(t, s, p)
	if err := s.Cancel(context.Background(), tenant, r); err != nil {
		t.Fatal(err)
	}
	if got := reserve(t, s, p).Wait; got != 0 {
		t.Fatalf("wait after giving back the second of 2 per second = %v, want 0", got)
	}
	if got, want := reserve(t, s, p).Wait, time.Second; got != want {
		t.Fatalf("wait of the third = %v, want %v", got, want)
	}
}

func TestPauseHoldsReservations(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	ctx := context.Background()
	if err := s.Pause(ctx, tenant, time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A shorter pause does not shorten it.
	if err := s.Pause(ctx, tenant, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// The end went as a duration from this process's clock, which moved
	// a little since.
	if got := reserve(t, s, burst3).Wait; got <= 1900*time.Millisecond || got > 2*time.Second {
		t.Fatalf("wait during a 2 s pause = %v, want just under 2 s", got)
	}
	// After the pause, admissions resume at the interval, not in a burst.
	m.advance(3 * time.Second)
	if got, want := waits(t, s, burst3, 3), ms(0, 0, 0); !slices.Equal(got, want) {
		t.Fatalf("waits after the pause = %v, want %v", got, want)
	}
}

func TestPauseBounds(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	ctx := context.Background()
	calls := s.Stats().Calls
	if err := s.Pause(ctx, tenant, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Calls; got != calls {
		t.Fatalf("a pause that has ended made %d calls", got-calls)
	}
	if got := reserve(t, s, every100ms).Wait; got != 0 {
		t.Fatalf("wait after a pause in the past = %v, want 0", got)
	}
	if err := s.Pause(ctx, tenant, time.Now().Add(5*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := reserve(t, s, every100ms).Wait; got > time.Hour || got < 59*time.Minute {
		t.Fatalf("wait during a 5 h pause = %v, want it cut to 1 h", got)
	}
}

// TestWindowLog checks a window limit the bucket does not imply: a burst
// of 5 at 100/s would let about 100 through in a second, the window 3.
func TestWindowLog(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	p := adaptive.Pace{Interval: 10 * time.Millisecond, Burst: 5, Limit: 3, Window: time.Second, Source: adaptive.SourceHeaders}
	if got, want := waits(t, s, p, 7), ms(0, 0, 0, 1000, 1000, 1000, 2000); !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	m.advance(2500 * time.Millisecond)
	// The log holds 3 at 1 s and 1 at 2 s: one more fits before 3 s.
	if got, want := waits(t, s, p, 3), ms(0, 0, 500); !slices.Equal(got, want) {
		t.Fatalf("waits 2.5 s on = %v, want %v", got, want)
	}
	// Without the window, the bucket alone: the last took tat to 3.01 s,
	// a burst of 5 spans 40 ms, so the next is due at 2.97 s.
	p.Limit, p.Window = 0, 0
	if got, want := reserve(t, s, p).Wait, 470*time.Millisecond; got != want {
		t.Fatalf("wait without the window = %v, want %v", got, want)
	}
}

// TestWindowLogKeepsOrder checks that with a window log admissions are
// due in the order they are taken, even when a larger burst would let a
// later one go sooner: the log stays sorted, so its Limit-th entry is the
// oldest of the latest Limit.
func TestWindowLogKeepsOrder(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	p := adaptive.Pace{Interval: 100 * time.Millisecond, Burst: 1, Limit: 3, Window: time.Second, Source: adaptive.SourceHeaders}
	got := waits(t, s, p, 2)
	p.Burst = 3 // the server raised the burst
	got = append(got, waits(t, s, p, 2)...)
	if want := ms(0, 100, 100, 1000); !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
}

func TestPeers(t *testing.T) {
	m := newMini(t)
	a := m.store(t, Config{ID: "a"})
	b := m.store(t, Config{ID: "b"})
	if got := reserve(t, a, every100ms).Peers; got != 1 {
		t.Fatalf("peers seen by the first process = %d, want 1", got)
	}
	if got := reserve(t, b, every100ms).Peers; got != 2 {
		t.Fatalf("peers seen by the second process = %d, want 2", got)
	}
	m.advance(5 * time.Second)
	if got := reserve(t, a, every100ms).Peers; got != 2 {
		t.Fatalf("peers 5 s later = %d, want 2", got)
	}
	m.advance(DefaultPeerTTL + time.Millisecond)
	if got := reserve(t, a, every100ms).Peers; got != 1 {
		t.Fatalf("peers after b was idle past PeerTTL = %d, want 1", got)
	}

	// Stores with no ID get random, distinct ones.
	c, d := m.store(t, Config{}), m.store(t, Config{})
	reserve(t, c, every100ms)
	if got := reserve(t, d, every100ms).Peers; got != 3 {
		t.Fatalf("peers after two Stores with default IDs = %d, want 3", got)
	}
}

// TestKeys checks the keys a tenant gets, their TTLs, that they hold
// nothing but numbers and the process ID, and that an idle tenant's go.
func TestKeys(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{ID: "proc-1"})
	ctx := context.Background()
	p := adaptive.Pace{Interval: 100 * time.Millisecond, Burst: 1, Limit: 5, Window: time.Second, Source: adaptive.SourceHeaders}
	reserve(t, s, p)
	if err := s.Pause(ctx, tenant, time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}

	base := "tollgate:{acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances}:"
	want := []string{base + "log", base + "pause", base + "peers", base + "tat"}
	if got := m.Keys(); !slices.Equal(got, want) {
		t.Fatalf("keys = %q, want %q", got, want)
	}
	ttls := map[string][2]time.Duration{ // range of each key's TTL
		"tat":   {1100 * time.Millisecond, 1100 * time.Millisecond}, // tat 100 ms on, plus a second
		"log":   {2 * time.Second, 2 * time.Second},                 // due now, in the window for 1 s, plus a second
		"pause": {2900 * time.Millisecond, 3 * time.Second},         // the pause, plus a second
		"peers": {11 * time.Second, 11 * time.Second},               // PeerTTL, plus a second
	}
	for suffix, r := range ttls {
		if got := m.TTL(base + suffix); got < r[0] || got > r[1] {
			t.Errorf("TTL of %s = %v, want in [%v, %v]", suffix, got, r[0], r[1])
		}
	}

	number := regexp.MustCompile(`^[0-9]+$`)
	fields, _ := m.HKeys(base + "tat")
	if !slices.Equal(fields, []string{"d", "i", "l", "s", "t", "u", "w"}) {
		t.Errorf("tat fields = %q, want d, i, l, s, t, u, w", fields)
	}
	var values []string
	for _, f := range fields {
		values = append(values, m.HGet(base+"tat", f))
	}
	log, _ := m.List(base + "log")
	pause, _ := m.Get(base + "pause")
	values = append(append(values, log...), pause)
	for _, v := range values {
		if !number.MatchString(v) {
			t.Errorf("a key holds %q, not a number", v)
		}
	}
	if peers, _ := m.ZMembers(base + "peers"); !slices.Equal(peers, []string{"proc-1"}) {
		t.Errorf("peers = %q, want only the process ID", peers)
	}

	m.advance(10 * time.Second)
	if got := m.Keys(); !slices.Equal(got, []string{base + "peers"}) {
		t.Fatalf("keys 10 s on = %q, want only peers", got)
	}
	m.advance(time.Second + time.Millisecond)
	if got := m.Keys(); len(got) != 0 {
		t.Fatalf("keys of a tenant idle past every TTL = %q, want none", got)
	}
}

// TestLostKeysReleaseAtMostBurst checks that a Redis that lost the keys
// (a restart, FLUSHALL) lets at most Burst through at once, however far
// ahead the tenant had reserved.
func TestLostKeysReleaseAtMostBurst(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	waits(t, s, burst3, 20)
	m.FlushAll()
	if got, want := waits(t, s, burst3, 5), ms(0, 0, 0, 100, 200); !slices.Equal(got, want) {
		t.Fatalf("waits after the keys were lost = %v, want %v", got, want)
	}
}

// TestTenantsApart checks that tenants, and Stores with different
// prefixes, do not share a pacer.
func TestTenantsApart(t *testing.T) {
	m := newMini(t)
	s := m.store(t, Config{})
	other := m.store(t, Config{Prefix: "other:"})
	reserve(t, s, every100ms)
	if got := reserve(t, other, every100ms).Wait; got != 0 {
		t.Fatalf("wait under another prefix = %v, want 0", got)
	}
	r, err := s.Reserve(context.Background(), quota.Key{Product: "ecs"}, every100ms, forever)
	if err != nil || r.Wait != 0 {
		t.Fatalf("another tenant's reservation = %+v, %v; want no wait", r, err)
	}
	if got := reserve(t, s, every100ms).Wait; got != 100*time.Millisecond {
		t.Fatalf("the tenant's second wait = %v, want 100ms", got)
	}
}

// TestReserveJoinsThePaceInForce checks that a zero Pace, from a process
// that knows nothing of the tenant yet, takes its turn at the pace of the
// latest admission, burst and window included, and that with no pace in
// force it takes nothing.
func TestReserveJoinsThePaceInForce(t *testing.T) {
	m := newMini(t)
	a := m.store(t, Config{ID: "a"})
	b := m.store(t, Config{ID: "b"})
	r, err := b.Reserve(context.Background(), tenant, adaptive.Pace{}, forever)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || !r.NoPace || r.Peers != 1 {
		t.Fatalf("with no pace in force: %+v, want NoPace, nothing taken, 1 peer", r)
	}
	if keys := m.Keys(); len(keys) != 1 || !strings.HasSuffix(keys[0], ":peers") {
		t.Fatalf("keys after it: %q, want the peers' only", keys)
	}
	p := adaptive.Pace{Interval: 10 * time.Millisecond, Burst: 2, Limit: 3, Window: time.Second, Source: adaptive.SourceHeaders}
	if got, want := waits(t, a, p, 2), ms(0, 0); !slices.Equal(got, want) {
		t.Fatalf("a's waits = %v, want %v", got, want)
	}
	// b knows no pace: it takes a's, whose window holds one more now,
	// then none until a second after the first.
	if got, want := waits(t, b, adaptive.Pace{}, 2), ms(10, 1000); !slices.Equal(got, want) {
		t.Fatalf("b's waits at the pace in force = %v, want %v", got, want)
	}
	if r := reserve(t, b, adaptive.Pace{}); r.Peers != 2 || r.Interval != 10*time.Millisecond {
		t.Fatalf("peers %d, interval %v; want 2 and a's 10ms", r.Peers, r.Interval)
	}
}
