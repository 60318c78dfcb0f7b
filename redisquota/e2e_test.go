package redisquota_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/loadtest"
	"github.com/tollgate-go/tollgate/internal/redistest"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/redisquota"
	"github.com/tollgate-go/tollgate/transport"
)

// The end-to-end tests run Transports, each with its own Redis client as
// separate processes would have, against the fake gateway in memory and a
// real redis-server, in real time, for a few seconds each.

// fleetSalt is the Salt every Transport of a fleet shares, so that they
// agree on the tenant (see transport.Config.Salt).
var fleetSalt = []byte("e2e-fleet-salt")

// newFleet returns n Transports on cloud, each with its own client of the
// Redis at addr and its own Store.
func newFleet(t *testing.T, cloud *fakecloud.Cloud, addr string, n int) ([]*transport.Transport, []*redisquota.Store) {
	t.Helper()
	return newFleetWith(t, cloud, addr, n, redisquota.Config{})
}

// newFleetWith is newFleet with the stores configured by cfg (its Client
// is each Transport's own).
func newFleetWith(t *testing.T, cloud *fakecloud.Cloud, addr string, n int, cfg redisquota.Config) ([]*transport.Transport, []*redisquota.Store) {
	t.Helper()
	trs := make([]*transport.Transport, n)
	stores := make([]*redisquota.Store, n)
	for i := range n {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		cfg.Client = rdb
		s, err := redisquota.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
		trs[i] = transport.New(cloud.RoundTripper(), transport.Config{Store: s, Salt: fleetSalt})
	}
	return trs, stores
}

// runAll runs per workers of akid through each Transport of trs until ctx
// ends, counting into l; the WaitGroup waits for all of them.
func runAll(ctx context.Context, t *testing.T, l *loadtest.Load, trs []*transport.Transport, akid string, per int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, tr := range trs {
		wg.Go(l.Run(ctx, t, tr, akid, per).Wait)
	}
	return &wg
}

// headersCloud is a fake gateway with a quota of limit a second that says
// it in Alibaba's headers on every answer, answering in 20 ± 10 ms.
func headersCloud(limit int) *fakecloud.Cloud {
	return fakecloud.New(fakecloud.Config{
		Quotas:               []fakecloud.Quota{{API: "DescribeInstances", Limit: limit, Window: time.Second}},
		Headers:              fakecloud.HeadersAlibaba,
		HeadersOnEveryAnswer: true,
		Faults:               fakecloud.Faults{LatencyRate: 1, Latency: 20 * time.Millisecond, LatencyJitter: 10 * time.Millisecond},
	})
}

// TestFleetOnRedis runs four Transports on one real Redis against one 50/s
// quota that the server says: together they spend it as one client would.
func TestFleetOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	const limit = 50
	cloud := headersCloud(limit)
	trs, stores := newFleet(t, cloud, srv.Addr(), 4)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Second)
	defer cancel()
	var l loadtest.Load
	wg := runAll(ctx, t, &l, trs, "AK1", 8)
	time.Sleep(2 * time.Second)
	m := loadtest.NewMeter(cloud, "")
	time.Sleep(4*time.Second - 10*time.Millisecond)
	s := m.Since()
	wg.Wait()
	var calls uint64
	for _, st := range stores {
		calls += st.Stats().Calls
	}
	sent := l.OK.Load() + l.Throttled.Load()
	t.Logf("settled: goodput %.1f%%, %.2f%% throttled; %d Redis calls for %d requests", 100*s.Goodput(limit), 100*s.ThrottledShare(), calls, sent)
	if n := l.Failed.Load(); n != 0 {
		t.Errorf("%d calls failed", n)
	}
	// REGRESSION FLOORS, in real time: 99.7% and 0 throttled alone, 98.7%
	// and 3.9% throttled under -race beside another package's tests (the
	// requests then leave well after their turn, and crowd windows' ends),
	// and 88.7% once in CI's full race run on a clean clone (two cores
	// shared with the other packages' tests), which failed the floor of
	// 90% this had before: so 85%, under the spread a loaded machine
	// shows. The goals (≥ 99%, ≤ 0.5%) are measured by the example.
	if g := s.Goodput(limit); g < 0.85 || g > 1.01 {
		t.Errorf("settled goodput %.1f%% of the quota, want 85-100%%", 100*g)
	}
	if th := s.ThrottledShare(); th > 0.06 {
		t.Errorf("settled: %.2f%% throttled, want ≤ 6%%", 100*th)
	}
	// A REGRESSION FLOOR too: 1.22-1.32 calls a request alone, as at the
	// commit before the fleet learned (24b6f46), and 1.62 under -race
	// beside another package's tests (a request held past its turn gives
	// it back and takes another: two calls more).
	if perRequest := float64(calls) / float64(sent); perRequest < 0.9 || perRequest > 2 {
		t.Errorf("%.2f Redis calls per request, want 1 to 2", perRequest)
	}
}

// TestRedisStoppedAndRestarted stops the Redis of two Transports mid-run
// and starts it again, empty: no call fails, none waits on Redis past its
// timeout, and they share again within a few seconds of its return.
func TestRedisStoppedAndRestarted(t *testing.T) {
	srv := redistest.Start(t)
	outage(t, srv, "stopped", srv.Stop, srv.Restart)
}

// TestRedisHangs freezes the Redis of two Transports mid-run (it keeps its
// connections, and answers nothing) and thaws it: calls to it time out
// rather than fail at once, and still no call fails or waits on it past its
// bound, and once it answers again the Transports share again.
func TestRedisHangs(t *testing.T) {
	srv := redistest.Start(t)
	outage(t, srv, "hung", srv.Freeze, srv.Thaw)
}

// outage runs two Transports on srv at a 50/s quota the server says, 8
// workers each, and 2 s in calls fail for 1.5 s and then resume, and
// checks: no call fails; while it is out both Transports are down at half
// their pace; no call begun meanwhile takes longer than twice the store's
// timeout plus its own pacing (its place in line at half of 50/s behind 7
// others, and a pause until the reset when the server's Remaining is
// spent) plus 100 ms; within 3 s of resume both share again at full pace;
// and from 2 s after resume the quota is used with few throttles.
func outage(t *testing.T, srv *redistest.Server, what string, fail, resume func()) {
	const limit, perWorkers = 50, 8
	cloud := headersCloud(limit)
	trs, _ := newFleet(t, cloud, srv.Addr(), 2)
	ctx, cancel := context.WithTimeout(t.Context(), 9*time.Second)
	defer cancel()
	var l loadtest.Load
	wg := runAll(ctx, t, &l, trs, "AK1", perWorkers)
	shares := func() (down int, shares []float64) {
		for _, tr := range trs {
			if tr.StoreDown() {
				down++
			}
			tr.Range(func(_ quota.Key, lim *adaptive.Limiter) bool {
				shares = append(shares, lim.Snapshot().Share)
				return true
			})
		}
		return down, shares
	}

	time.Sleep(2 * time.Second)
	l.From.Store(time.Now().UnixNano())
	fail()
	time.Sleep(1500 * time.Millisecond)
	down, during := shares()
	longest := time.Duration(l.Longest.Load())
	resume()
	back := time.Now()
	var rejoined time.Duration
	for rejoined == 0 && time.Since(back) < 3*time.Second {
		time.Sleep(50 * time.Millisecond)
		if d, sh := shares(); d == 0 && len(sh) == 2 && sh[0] == 1 && sh[1] == 1 {
			rejoined = time.Since(back)
		}
	}
	time.Sleep(time.Until(back.Add(2 * time.Second)))
	m := loadtest.NewMeter(cloud, "")
	<-ctx.Done()
	s := m.Since()
	wg.Wait()

	t.Logf("Redis %s: %d of 2 Transports down, shares %v, longest call begun meanwhile %v; shared again %v after it came back; then goodput %.1f%%, %.2f%% throttled",
		what, down, during, longest, rejoined, 100*s.Goodput(limit), 100*s.ThrottledShare())
	if n := l.Failed.Load(); n != 0 {
		t.Errorf("%d calls failed", n)
	}
	if down != 2 || len(during) != 2 || during[0] != 0.5 || during[1] != 0.5 {
		t.Errorf("with Redis %s: %d of 2 Transports down, shares %v; want both down at 0.5", what, down, during)
	}
	if bound := 2*redisquota.DefaultTimeout + perWorkers*time.Second/(limit/2) + time.Second + 100*time.Millisecond; longest > bound {
		t.Errorf("a call begun while Redis was %s took %v, want ≤ %v", what, longest, bound)
	}
	if rejoined == 0 {
		t.Errorf("not shared again within 3 s of Redis coming back (%s)", what)
	}
	if g, th := s.Goodput(limit), s.ThrottledShare(); g < 0.9 || th > 0.02 {
		t.Errorf("after Redis came back: goodput %.1f%%, %.2f%% throttled; want ≥ 90%% and ≤ 2%%", 100*g, 100*th)
	}
}

// TestColdProcessJoins starts a process while another spends a quota the
// server says: from its first request the newcomer takes turns at the
// shared pace, before any answer has told it the limit, and the two never
// spend more than the quota.
func TestColdProcessJoins(t *testing.T) {
	srv := redistest.Start(t)
	const limit = 50
	cloud := headersCloud(limit)
	trs, stores := newFleet(t, cloud, srv.Addr(), 2)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var l loadtest.Load
	var wg sync.WaitGroup
	wg.Go(l.Run(ctx, t, trs[0], "AK1", 8).Wait)
	time.Sleep(2 * time.Second)
	m := loadtest.NewMeter(cloud, "")
	wg.Go(l.Run(ctx, t, trs[1], "AK1", 16).Wait)
	wg.Wait()
	s := m.Since()
	joined := stores[1].Stats().Calls
	t.Logf("after the join: goodput %.1f%%, %d throttled; the newcomer made %d Redis calls", 100*s.Goodput(limit), s.Throttled, joined)
	if s.Throttled > 1 {
		t.Errorf("%d throttles after a process joined, want none (one, at most, in real time)", s.Throttled)
	}
	if g := s.Goodput(limit); g > 1.01 {
		t.Errorf("the two spent %.1f%% of the quota", 100*g)
	}
	if joined == 0 {
		t.Error("the newcomer never called the store")
	}
	if n := l.Failed.Load(); n != 0 {
		t.Errorf("%d calls failed", n)
	}
}

// TestLearnedOutlivesProcess: a process learns a quota the server does not
// say, and stops; one started later reads what it learned from Redis and
// paces at it from its first request, without slow start's throttles.
//
// What the first process learns is the adaptive package's concern, so
// the server's window is one the learner's grid holds (1 s): against 20
// per 500 ms, off the grid, a starved first process twice in a few CI runs
// measured 40 per 1 s (refills a second apart, the one between missed),
// which holds the rate but not the count, and kept it for the 20 s (issue
// #35: the learner fitting windows shorter than the grid's). With
// the CPUs starved (this test beside the race-built shapes and adaptive
// tests), its fit sometimes names a sliding log shorter than the window
// while it measures (20 per 346–370 ms in 3 runs of 16), the learner
// settles on it and publishes it, and mends it seconds later. (A clean
// clone's CI once failed here so; before adaptive left a rule the record
// showed wrong, it was not mended in 20 s.) So the first process runs
// until what Redis keeps holds the quota (within its rate, no more than
// 20% under it, and no more than its count a window), for at most 20 s:
// 16 of 16 runs did so loaded. (Held by its rate alone, a clean clone's
// CI took 40 per 1 s, twice the count in one of the server's windows, and
// the second process, paced by it, was throttled 3 times in 2 s; 0 of 28
// runs here did so, 20 of them loaded.) The
// stores wait up to a second for Redis, not 50 ms: a starved process
// whose first call to the store timed out started cold (46 throttles in
// one run of 12), which TestFleetStoreDown covers.
func TestLearnedOutlivesProcess(t *testing.T) {
	srv := redistest.Start(t)
	const limit, window = 20, time.Second
	cloud := fakecloud.New(fakecloud.Config{
		Quotas: []fakecloud.Quota{{API: "DescribeInstances", Limit: limit, Window: window}},
		Faults: fakecloud.Faults{LatencyRate: 1, Latency: 10 * time.Millisecond, LatencyJitter: 10 * time.Millisecond},
	})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	rate := float64(limit) / window.Seconds()
	// kept returns what Redis keeps as learned, and whether it holds the
	// quota.
	kept := func() (map[string]string, bool) {
		keys := rdb.Keys(t.Context(), "*:learned").Val()
		if len(keys) == 0 {
			return nil, false
		}
		h := rdb.HGetAll(t.Context(), keys[0]).Val()
		l, _ := strconv.ParseFloat(h["l"], 64)
		w, _ := strconv.ParseFloat(h["w"], 64) // µs
		r := l / w * 1e6
		return h, w > 0 && r <= rate && r >= 0.8*rate && l <= limit
	}
	slow := redisquota.Config{Timeout: time.Second}

	first, _ := newFleetWith(t, cloud, srv.Addr(), 1, slow)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	var l loadtest.Load
	wg := l.Run(ctx, t, first[0], "AK1", 16)
	var was map[string]string
	for ctx.Err() == nil {
		h, ok := kept()
		if ok {
			break
		}
		if h != nil && !maps.Equal(h, was) {
			t.Logf("the first process published %v, not within the quota (%.0f/s)", h, rate)
			was = h
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if _, ok := kept(); !ok {
		t.Fatalf("the first process published nothing within the quota in 20 s: %d ok, %d throttled", l.OK.Load(), l.Throttled.Load())
	}
	var est adaptive.Estimate
	first[0].Range(func(_ quota.Key, lim *adaptive.Limiter) bool {
		est, _ = lim.Fleet().Learned()
		return false
	})
	h, _ := kept()
	t.Logf("learned %+v; Redis keeps %v", est, h)
	time.Sleep(time.Second) // the process is gone, its lease and its pace too

	second, _ := newFleetWith(t, cloud, srv.Addr(), 1, slow)
	m := loadtest.NewMeter(cloud, "")
	ctx, cancel = context.WithTimeout(t.Context(), 4*window)
	defer cancel()
	var l2 loadtest.Load
	l2.Run(ctx, t, second[0], "AK1", 16).Wait()
	s := m.Since()
	var sn adaptive.Snapshot
	second[0].Range(func(_ quota.Key, lim *adaptive.Limiter) bool {
		sn = lim.Snapshot()
		return false
	})
	t.Logf("the second process: %d ok, %d throttled in %.1f s; %d per %v learned", s.Admitted, s.Throttled, s.Seconds, sn.LearnedLimit, sn.LearnedWindow)
	if sn.LearnedLimit == 0 || sn.LearnedWindow == 0 {
		t.Errorf("the second process knows nothing learned: %+v", sn)
	}
	// In real time a request may cross a window's edge: one throttle.
	if s.Throttled > 1 {
		t.Errorf("the second process had %d throttles, want none (one, at most, in real time)", s.Throttled)
	}
	if most := float64(limit) * s.Seconds / window.Seconds(); float64(s.Admitted+s.Throttled) > most*1.05+1 {
		t.Errorf("the second process sent %d in %.1f s, more than the learned pace (%.0f)", s.Admitted+s.Throttled, s.Seconds, most)
	}
}

// TestNoCredentialInRedis runs a Transport with a known AccessKeyId, and
// two that learn a quota no one says for another, and scans every key and
// value the store wrote for them.
func TestNoCredentialInRedis(t *testing.T) {
	srv := redistest.Start(t)
	const akid = "LTAI5tNOxSUCHxKEYx0042"
	cloud := headersCloud(20)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	s, err := redisquota.New(redisquota.Config{Client: rdb})
	if err != nil {
		t.Fatal(err)
	}
	var rules quota.Rules // a rule with a window the bucket does not imply: every key is written
	rules.Set(quota.Key{}, quota.Rule{Rate: 20, Burst: 4, Limit: 20, Window: time.Second})
	tr := transport.New(cloud.RoundTripper(), transport.Config{Store: s, Rules: &rules})
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	var l loadtest.Load
	l.Run(ctx, t, tr, akid, 4).Wait()
	if l.OK.Load() == 0 {
		t.Fatal("no request went through")
	}
	// A second account, whose quota no one says, learned by two
	// processes: a leader, relayed answers, an estimate.
	const akid2 = "LTAI5tANOTHERxKEYx0043"
	silent := fakecloud.New(fakecloud.Config{
		Quotas: []fakecloud.Quota{{API: "DescribeInstances", Limit: 20, Window: 500 * time.Millisecond}},
		Faults: fakecloud.Faults{LatencyRate: 1, Latency: 10 * time.Millisecond},
	})
	fleet, _ := newFleet(t, silent, srv.Addr(), 2)
	ctx2, cancel2 := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel2()
	var l2 loadtest.Load
	wg := runAll(ctx2, t, &l2, fleet, akid2, 8)
	for ctx2.Err() == nil && len(rdb.Keys(t.Context(), "*:learned").Val()) == 0 {
		time.Sleep(50 * time.Millisecond) // until an estimate is published
	}
	cancel2()
	wg.Wait()
	if l2.OK.Load() == 0 || l2.Throttled.Load() == 0 {
		t.Fatalf("the learned tenant: %d ok, %d throttled; want both", l2.OK.Load(), l2.Throttled.Load())
	}

	var seen strings.Builder
	iter := rdb.Scan(t.Context(), 0, "*", 100).Iterator()
	keys := 0
	for iter.Next(t.Context()) {
		k := iter.Val()
		keys++
		seen.WriteString(k + "\n")
		switch typ := rdb.Type(t.Context(), k).Val(); typ {
		case "string":
			seen.WriteString(rdb.Get(t.Context(), k).Val())
		case "hash":
			for f, v := range rdb.HGetAll(t.Context(), k).Val() {
				seen.WriteString(f + "=" + v + "\n")
			}
		case "list":
			seen.WriteString(strings.Join(rdb.LRange(t.Context(), k, 0, -1).Val(), "\n"))
		case "zset":
			seen.WriteString(strings.Join(rdb.ZRange(t.Context(), k, 0, -1).Val(), "\n"))
		default:
			t.Errorf("key %q of type %q", k, typ)
		}
		seen.WriteString("\n")
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if keys < 3 {
		t.Fatalf("%d keys in Redis, want the tenant's tat, log and peers at least:\n%s", keys, seen.String())
	}
	t.Logf("%d keys:\n%s", keys, seen.String())
	for _, want := range []string{":lead", ":learned"} {
		if !strings.Contains(seen.String(), want) {
			t.Errorf("no %s key in Redis: the learned tenant's keys were not scanned", want)
		}
	}
	for _, secret := range []string{akid, strings.ToLower(akid), akid2, strings.ToLower(akid2), "Signature", "fakecloud"} { // "fakecloud" is the requests' signature
		if strings.Contains(seen.String(), secret) {
			t.Errorf("Redis holds %q", secret)
		}
	}
}
