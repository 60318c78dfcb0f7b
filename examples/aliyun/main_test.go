package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/redistest"
)

// TestDemo runs the example's whole code path, the fake gateway in memory
// and fake time (a full 15 s run takes a fraction of a second), and checks
// its report: no failed call, the quota used, no nonce reused, and the
// AccessKeyId nowhere in the output. It runs the default settings over
// several seeds of the fake gateway's latency jitter.
//
// REGRESSION FLOORS, moved by the learner's model (issue #20), which
// measures windows again after each change, at a few throttles each. Over
// 96 seeds with -race before issue #15's changes: settled goodput 78-100%
// (median 98%), whole run 78-99% (median 94.6%), 5 seeds of 96 below 90%
// settled; after them, the same medians (98%, 94.4%), 7 below 90%, and a
// tail down to 59% settled / 64% whole in about 1 seed of 40. The tail is
// a whole second with no request sent while the learner measures (a run of
// 15 s against a quota that steps down and up), seen as often before the
// changes (2 and 3 such seeds in 60) under the race detector's scheduling.
// So the median of 8 seeds held the floors that caught a regression (it
// failed by chance only if 4 seeds of 8 fell in the tail, about 1 run in
// 500), and each seed only a loose one. That one moved from 50% settled
// and 55% whole when CI met 49.3% / 58.2% (a learner measuring for 9 s,
// then settled on a 1.7 s window) with the learner unchanged: over 120
// seeds each under -race, the commit before issue #22 and the one after
// fell below 80% settled in 12 and 10 seeds, down to 61.7% and 65%.
//
// Since issue 33's line the floors are these, and say why. A seed's
// settled goodput is bimodal: 95-100% where the learner's probe above its
// estimate finds the step up at 10 s, 78-80% where its first probe after
// the fall came before 10 s, failed, and put the next 20 s away (the
// line settles the learner after the fall a window sooner, which makes
// that more common; the probe's cadence is the learner's, issue 35).
// Measured under -race over 24 seeds, six times (alone, with the CPUs
// busy, at -cpu 1 and 4, in the full suite): 13-20 seeds found the step
// up, medians 96-98% settled; one full-suite run had its median at 86.4%
// (83.8% whole), which the old floor of 90% on the median failed. So the
// floors: at least 6 of 24 seeds find the step up (under 1 run in 1000
// fails by chance if half the seeds find it), and the medians stay above
// the missed step up's 78-80% (75%), which a learner that stalls or loses
// windows more than today falls under.
func TestDemo(t *testing.T) {
	var settled, whole []float64
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := testDemo(t, seed)
				settled, whole = append(settled, r.settled.goodput()), append(whole, r.goodput)
			})
		})
	}
	found := 0
	for _, g := range settled {
		if g >= 0.95 {
			found++
		}
	}
	if found < 6 {
		t.Errorf("%d seeds of %d found the step up (settled goodput ≥ 95%%), want ≥ 6", found, len(settled))
	}
	if g := median(settled); g < 0.75 {
		t.Errorf("median settled goodput %.1f%% of the quota over the seeds, want ≥ 75%%", 100*g)
	}
	if g := median(whole); g < 0.75 {
		t.Errorf("median goodput %.1f%% of the quota over the whole run, over the seeds, want ≥ 75%%", 100*g)
	}
}

// median returns the median of xs, the lower middle for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func testDemo(t *testing.T, seed uint64) *result {
	o := options{duration: 15 * time.Second, workers: 16, processes: 1, quota: defaultQuota, step: true, settle: defaultSettle, region: "cn-hangzhou", memory: true, seed: seed, breaker: true}
	var out bytes.Buffer
	r, err := runOnce(t.Context(), o, mode{tollgate: true, breaker: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	printReport(&out, o, []*result{r})
	t.Log("\n" + out.String())
	if r.failed != 0 {
		t.Errorf("%d calls failed, want 0: %v", r.failed, r.firstErr)
	}
	// Settled (2 s after the start and after each change of the quota);
	// each seed's loose floor (see TestDemo).
	if g := r.settled.goodput(); g < 0.40 {
		t.Errorf("settled goodput %.1f%% of the quota, want ≥ 40%%", 100*g)
	}
	if th := r.settled.throttledShare(); th > 0.25 {
		t.Errorf("settled: %.1f%% of requests throttled, want ≤ 25%%", 100*th)
	}
	if r.goodput < 0.45 {
		t.Errorf("goodput %.1f%% of the quota over the whole run, want ≥ 45%%", 100*r.goodput)
	}
	if share := float64(r.throttles) / float64(r.requests); share > 0.25 {
		t.Errorf("%.1f%% of requests throttled over the whole run, want ≤ 25%%", 100*share)
	}
	if r.replays != 0 {
		t.Errorf("%d nonces reused", r.replays)
	}
	if strings.Contains(out.String(), fakeAKID) {
		t.Error("the output holds the AccessKeyId")
	}
	return r
}

// TestDemoCompare checks that -compare shows the plain SDK failing where
// tollgate does not.
func TestDemoCompare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := options{duration: 6 * time.Second, workers: 16, processes: 1, quota: defaultQuota, step: true, settle: defaultSettle, region: "cn-hangzhou", memory: true, compare: true, breaker: true}
		var out bytes.Buffer
		if err := demo(t.Context(), o, &out); err != nil {
			t.Fatal(err)
		}
		report := out.String()
		if !strings.Contains(report, "plain SDK") || !strings.Contains(report, "tollgate") {
			t.Fatalf("report lacks a column:\n%s", report)
		}
		if !strings.Contains(report, "first failed call (plain SDK)") || !strings.Contains(report, "Throttling.User") {
			t.Errorf("the plain SDK's throttle failures do not show:\n%s", report)
		}
	})
}

// TestDemoFaults runs a 503 storm (80% of requests, from 3 s to 7 s of a
// 9 s run) against tollgate without and with the circuit breaker, the same
// seed, and checks what must hold whatever the scheduling: the fake gateway
// counts the storm's requests and their 503s, the breaker opens and spares
// the failing service requests, no nonce is reused, and the report shows
// it all.
func TestDemoFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, err := parseFaults("503=0.8@3s-7s")
		if err != nil {
			t.Fatal(err)
		}
		o := options{duration: 9 * time.Second, workers: 16, processes: 1, quota: defaultQuota, step: true, settle: defaultSettle, region: "cn-hangzhou", memory: true, seed: 1, breaker: true, faults: faults}
		var out bytes.Buffer
		var results []*result
		for _, m := range []mode{{tollgate: true}, {tollgate: true, breaker: true}} {
			r, err := runOnce(t.Context(), o, m, &out)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
		}
		printReport(&out, o, results)
		report := out.String()
		t.Log("\n" + report)
		without, with := results[0], results[1]

		if n := without.storm.requests; n < 100 {
			t.Fatalf("without the breaker the fake gateway saw %d requests in the storm, want ≥ 100", n)
		}
		// 4 s at a quota of 20-40/s: ≥ 100 draws, so 80% ± 4 standard
		// deviations.
		if share := float64(without.storm.failed) / float64(without.storm.requests); share < 0.6 || share > 0.95 {
			t.Errorf("without the breaker %.1f%% of the storm's requests failed, want 60-95%% (the fault is 80%%)", 100*share)
		}
		if with.opened < 1 {
			t.Errorf("the breaker opened %d times, want ≥ 1", with.opened)
		}
		if without.opened != 0 || without.open != 0 {
			t.Errorf("without the breaker: opened %d, refused %d, want 0", without.opened, without.open)
		}
		if with.storm.requests >= without.storm.requests {
			t.Errorf("the fake gateway saw %d requests in the storm with the breaker, %d without: want fewer with it", with.storm.requests, without.storm.requests)
		}
		for _, r := range results {
			if r.replays != 0 {
				t.Errorf("%s: %d nonces reused", r.name, r.replays)
			}
		}
		for _, want := range []string{
			"faults 503=0.8@3s-7s",
			"tollgate+breaker",
			"requests during faults",
			"refused by breaker",
			"  cut short",
			"breaker opened",
			"probes (failed)",
		} {
			if !strings.Contains(report, want) {
				t.Errorf("report lacks %q", want)
			}
		}
	})
}

// TestDemoProcesses runs tollgate as 4 processes, each its own Transport
// with no store, against a quota that holds still, and checks that all but
// a few calls succeed, that every process's Transport sent requests (the
// workers are split among them) and that the report says how many
// processes ran.
//
// REGRESSION FLOOR, not every call: processes that each learn the quota from throttles,
// with nothing shared, throttle each other, and now and then a call runs
// out of retries. Over 100 runs with -race, 22 had such failures, 1 or 2
// calls of about 245 (0.84% at most).
func TestDemoProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := options{duration: 6 * time.Second, workers: 16, processes: 4, quota: defaultQuota, settle: defaultSettle, region: "cn-hangzhou", memory: true, breaker: true}
		var out bytes.Buffer
		r, err := runOnce(t.Context(), o, mode{tollgate: true, breaker: true}, &out)
		if err != nil {
			t.Fatal(err)
		}
		printReport(&out, o, []*result{r})
		report := out.String()
		t.Log("\n" + report)
		if r.calls < 100 || r.failed > r.calls/50 {
			t.Errorf("%d of %d calls failed, want ≥ 100 calls and ≤ 2%% of them failed: %v", r.failed, r.calls, r.firstErr)
		}
		if len(r.requestsBy) != 4 || slices.Contains(r.requestsBy, 0) {
			t.Errorf("requests by process %v, want 4 processes that each sent some", r.requestsBy)
		}
		for _, want := range []string{`tollgate ×4\n`, `\n  processes +4\n`, `\n  cold-start throttles +\d+\n`} {
			if !regexp.MustCompile(want).MatchString(report) {
				t.Errorf("report lacks %#q", want)
			}
		}
	})
}

// TestRunRedis runs the command with two processes sharing a store on a
// real Redis (real time, the fake gateway on loopback) and checks that no
// call fails, that the store was used about once per request and never
// went down, and that no credential reached Redis: neither the
// AccessKeyId nor its secret is in any key or value left there. The fake
// gateway sends Alibaba's rate-limit headers: the store shares only a pace
// every process derives alike, and a pace learned from throttles alone is
// not (see quotastore.Store), so without headers it would not be called.
// And the processes must agree on the tenant: Redis holds one.
func TestRunRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real Redis")
	}
	srv := redistest.Start(t)
	var out bytes.Buffer
	args := []string{"-processes", "2", "-workers", "8", "-quota", "20", "-step=false", "-duration", "3s", "-headers", "alibaba", "-redis", srv.Addr()}
	if err := run(t.Context(), args, &out); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	t.Log("\n" + report)
	if !regexp.MustCompile(`\n  failed +0\n`).MatchString(report) {
		t.Error("report: calls failed, want none")
	}
	if m := regexp.MustCompile(`\n  redis calls/request +(\S+)\n`).FindStringSubmatch(report); m == nil {
		t.Error("report lacks redis calls/request")
	} else if n, err := strconv.ParseFloat(m[1], 64); err != nil || n < 0.5 || n > 3 {
		t.Errorf("redis calls/request %s, want 0.5 to 3", m[1])
	}
	if !regexp.MustCompile(`\n  store outages +0\n`).MatchString(report) {
		t.Error("report: the store went down, want no outage")
	}
	if !strings.Contains(report, "tollgate ×2 +redis") {
		t.Error("report lacks the run's name, tollgate ×2 +redis")
	}

	dump := redisDump(t, srv.Addr())
	t.Logf("Redis holds %v", dump)
	ours, peers := false, 0
	for k, v := range dump {
		ours = ours || strings.HasPrefix(k, "tollgate:demo-")
		if strings.HasSuffix(k, ":peers") {
			peers++
		}
		for _, secret := range []string{fakeAKID, fakeSecret} {
			if strings.Contains(k, secret) || strings.Contains(v, secret) {
				t.Errorf("Redis holds a credential in key %q: %q", k, v)
			}
		}
	}
	if !ours {
		t.Error("Redis holds no key of the run's prefix, tollgate:demo-, so nothing was checked")
	}
	if peers != 1 {
		t.Errorf("Redis holds %d tenants' peers, want 1: the processes, which share a Salt, must name the tenant alike", peers)
	}
}

// redisDump returns every key of the Redis at addr with its value as text,
// read by its type: SCAN, then GET, HGETALL, LRANGE or ZRANGE.
func redisDump(t *testing.T, addr string) map[string]string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := t.Context()
	dump := make(map[string]string)
	var cursor uint64
	for range 1000 {
		keys, next, err := rdb.Scan(ctx, cursor, "*", 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			typ, err := rdb.Type(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			var v any
			switch typ {
			case "string":
				v, err = rdb.Get(ctx, k).Result()
			case "hash":
				v, err = rdb.HGetAll(ctx, k).Result()
			case "list":
				v, err = rdb.LRange(ctx, k, 0, -1).Result()
			case "zset":
				v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
			case "none": // expired since SCAN
				continue
			default:
				t.Errorf("key %q is a %s, which the store does not write", k, typ)
				continue
			}
			switch {
			case errors.Is(err, redis.Nil): // expired since SCAN
				continue
			case err != nil:
				t.Fatal(err)
			}
			dump[k] = fmt.Sprint(v)
		}
		if cursor = next; cursor == 0 {
			return dump
		}
	}
	t.Fatal("SCAN did not end within 1000 calls")
	return nil
}

func TestRunFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		akid string // ALIBABA_CLOUD_ACCESS_KEY_ID and _SECRET
		want string // in the error
	}{
		{args: []string{"-headers", "bogus"}, want: "bogus"},
		{args: []string{"-workers", "0"}, want: "-workers"},
		{args: []string{"extra"}, want: "unexpected"},
		{args: []string{"-endpoint", "ecs.cn-hangzhou.aliyuncs.com"}, want: "ALIBABA_CLOUD_ACCESS_KEY_ID"},
		{args: []string{"-faults", "503=2@1s-2s"}, want: "rate"},
		{args: []string{"-settle", "-1s"}, want: "-settle"},
		{args: []string{"-processes", "0"}, want: "-processes 0: want 1 to -workers (16)"},
		{args: []string{"-processes", "5", "-workers", "4"}, want: "-processes 5: want 1 to -workers (4)"},
		{args: []string{"-redis", closedAddr(t)}, want: "Redis did not answer PING within 1s"},
		{args: []string{"-faults", "503=0.8@5s-10s", "-duration", "5s"}, want: "not within -duration"},
		{args: []string{"-faults", "503=0.8@5s-10s", "-endpoint", "ecs.cn-hangzhou.aliyuncs.com"}, akid: "LTAIx", want: "-endpoint"},
	} {
		t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", tt.akid)
		t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", tt.akid)
		var out bytes.Buffer
		err := run(context.Background(), tt.args, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run %q: %v, want an error about %q", tt.args, err, tt.want)
		}
	}
}

// TestModes checks the runs each combination of -compare, -redis,
// -faults, -breaker and -processes makes, by their names.
func TestModes(t *testing.T) {
	faults := []faultSpec{{fault503, 0.8, 0, 0}}
	for _, tt := range []struct {
		o    options
		want []string
	}{
		{options{processes: 1, breaker: true}, []string{"tollgate"}},
		{options{processes: 1, breaker: true, compare: true}, []string{"plain SDK", "tollgate"}},
		{options{processes: 4, breaker: true, compare: true}, []string{"plain SDK", "tollgate ×4"}},
		{options{processes: 1, breaker: true, redis: "r"}, []string{"tollgate +redis"}},
		{options{processes: 4, breaker: true, redis: "r", compare: true}, []string{"tollgate ×4", "tollgate ×4 +redis"}},
		{options{processes: 1, breaker: true, faults: faults, compare: true}, []string{"plain SDK", "tollgate", "tollgate+breaker"}},
		{options{processes: 2, breaker: false, faults: faults, compare: true}, []string{"plain SDK", "tollgate ×2"}},
		{options{processes: 2, breaker: true, faults: faults, compare: true, redis: "r"}, []string{"tollgate+breaker ×2", "tollgate+breaker ×2 +redis"}},
	} {
		var got []string
		for _, m := range tt.o.modes() {
			got = append(got, m.name(tt.o))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%+v: runs %q, want %q", tt.o, got, tt.want)
		}
	}
}

// TestPhases checks the quota over a run with and without -step.
func TestPhases(t *testing.T) {
	o := options{duration: 15 * time.Second, quota: 40, step: true}
	if got, want := o.phases(), []phase{{0, 5 * time.Second, 40}, {5 * time.Second, 10 * time.Second, 20}, {10 * time.Second, 15 * time.Second, 40}}; !slices.Equal(got, want) {
		t.Errorf("-step: phases %v, want %v", got, want)
	}
	if q := o.quotaAt(7 * time.Second); q != 20 {
		t.Errorf("-step: quota %d/s at 7s, want 20", q)
	}
	o.step = false
	if got, want := o.phases(), []phase{{0, 15 * time.Second, 40}}; !slices.Equal(got, want) {
		t.Errorf("-step=false: phases %v, want %v", got, want)
	}
	if q, total := o.quotaAt(7*time.Second), o.quotaTotal(); q != 40 || total != 600 {
		t.Errorf("-step=false: quota %d/s at 7s and %v in the run, want 40 and 600", q, total)
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestParseFaults(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []faultSpec
		err  string // in the error; empty: no error
	}{
		{in: "", want: nil},
		{in: "503=0.8@5s-10s", want: []faultSpec{{fault503, 0.8, 5 * time.Second, 10 * time.Second}}},
		{in: "drop=0.05", want: []faultSpec{{faultDrop, 0.05, 0, 0}}},
		{in: "503=1@5s", want: []faultSpec{{fault503, 1, 5 * time.Second, 0}}},
		{in: "503=0@1.5s-", want: []faultSpec{{fault503, 0, 1500 * time.Millisecond, 0}}},
		{in: "503=0.8@0s-2s, 503=0.5@2s-4s,drop=0.1@1s-3s", want: []faultSpec{
			{fault503, 0.8, 0, 2 * time.Second},
			{fault503, 0.5, 2 * time.Second, 4 * time.Second},
			{faultDrop, 0.1, time.Second, 3 * time.Second},
		}},
		{in: "503=0.8@1m-1m30s", want: []faultSpec{{fault503, 0.8, time.Minute, 90 * time.Second}}},

		{in: "503", err: "KIND=RATE"},
		{in: "500=0.8@5s-10s", err: "unknown kind"},
		{in: "=0.8@5s-10s", err: "unknown kind"},
		{in: "503=@5s-10s", err: "rate"},
		{in: "503=1.5@5s-10s", err: "rate"},
		{in: "503=-0.1@5s-10s", err: "rate"},
		{in: "503=NaN@5s-10s", err: "rate"},
		{in: "503=80%@5s-10s", err: "rate"},
		{in: "503=0.8@", err: "FROM"},
		{in: "503=0.8@5-10s", err: "FROM"},
		{in: "503=0.8@-5s-10s", err: "FROM"},
		{in: "503=0.8@5s-10", err: "TO"},
		{in: "503=0.8@5s-10s-20s", err: "TO"},
		{in: "503=0.8@10s-5s", err: "not after"},
		{in: "503=0.8@5s-5s", err: "not after"},
		{in: "503=0.8@5s-10s,", err: "KIND=RATE"},
		{in: "503=0.8@5s-10s,503=0.5@9s-12s", err: "overlaps"},
		{in: "503=0.8@5s,503=0.5@20s-30s", err: "overlaps"},
		{in: "503=0.8,drop=0.1,503=0.5@1s-2s", err: "overlaps"},
	} {
		got, err := parseFaults(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("parseFaults(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseFaults(%q) = %v, %v; want an error about %q", tt.in, got, err, tt.err)
		case tt.err == "" && !slices.Equal(got, tt.want):
			t.Errorf("parseFaults(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestApplyFaults checks that a fault goes on at FROM and off at TO, over
// the demo's base latency, which stays.
func TestApplyFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, err := parseFaults("503=0.8@1s-3s,drop=0.1@2s")
		if err != nil {
			t.Fatal(err)
		}
		o := options{duration: 4 * time.Second, faults: faults}
		cloud := fakecloud.New(fakecloud.Config{Faults: o.faultsAt(0)})
		ctx, cancel := context.WithTimeout(t.Context(), o.duration)
		defer cancel()
		start := time.Now()
		done := make(chan storm)
		go func() { done <- applyFaults(ctx, o, cloud, start) }()
		for _, tt := range []struct {
			at       time.Duration
			rate503  float64
			rateDrop float64
		}{{500 * time.Millisecond, 0, 0}, {1500 * time.Millisecond, 0.8, 0}, {2500 * time.Millisecond, 0.8, 0.1}, {3500 * time.Millisecond, 0, 0.1}} {
			time.Sleep(time.Until(start.Add(tt.at)))
			synctest.Wait()
			f := cloud.Faults()
			if f.UnavailableRate != tt.rate503 || f.DropRate != tt.rateDrop || f.LatencyRate != baseFaults.LatencyRate || f.Latency != baseFaults.Latency {
				t.Errorf("at %v: faults %+v, want 503 at %v, drop at %v, and the base latency", tt.at, f, tt.rate503, tt.rateDrop)
			}
		}
		<-done // returns once the run ends: no goroutine left behind
	})
}

// TestRunLoopback runs the command as `go run` does, briefly: the fake
// gateway on loopback, real time, metrics served.
func TestRunLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-duration", "2s", "-workers", "4", "-metrics", "127.0.0.1:0"}, &out); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	for _, want := range []string{"metrics at http://127.0.0.1:", "tollgate", "goodput (of quota)", "nonces reused                          0"} {
		if !strings.Contains(report, want) {
			t.Errorf("output lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, fakeAKID) {
		t.Error("the output holds the AccessKeyId")
	}
}

func TestServeMetrics(t *testing.T) {
	o := options{metrics: "127.0.0.1:0"}
	var out bytes.Buffer
	stop, err := serveMetrics(&o, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := strings.TrimSpace(strings.TrimPrefix(out.String(), "metrics at "))
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || o.observer == nil {
		t.Errorf("GET %s: %s, observer %v", url, resp.Status, o.observer)
	}
}
