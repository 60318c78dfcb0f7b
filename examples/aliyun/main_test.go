package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
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
// So the median of 8 seeds holds the floors that catch a regression (it
// fails by chance only if 4 seeds of 8 fall in the tail, about 1 run in
// 500), and each seed only a loose one.
func TestDemo(t *testing.T) {
	var settled, whole []float64
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := testDemo(t, seed)
				settled, whole = append(settled, r.settled.goodput()), append(whole, r.goodput)
			})
		})
	}
	if g := median(settled); g < 0.90 {
		t.Errorf("median settled goodput %.1f%% of the quota over the seeds, want ≥ 90%%", 100*g)
	}
	if g := median(whole); g < 0.85 {
		t.Errorf("median goodput %.1f%% of the quota over the whole run, over the seeds, want ≥ 85%%", 100*g)
	}
}

// median returns the median of xs, the lower middle for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func testDemo(t *testing.T, seed uint64) *result {
	o := options{duration: 15 * time.Second, workers: 16, quota: defaultQuota, region: "cn-hangzhou", memory: true, seed: seed}
	var out bytes.Buffer
	r, err := runOnce(t.Context(), o, true, &out)
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
	if g := r.settled.goodput(); g < 0.50 {
		t.Errorf("settled goodput %.1f%% of the quota, want ≥ 50%%", 100*g)
	}
	if th := r.settled.throttledShare(); th > 0.25 {
		t.Errorf("settled: %.1f%% of requests throttled, want ≤ 25%%", 100*th)
	}
	if r.goodput < 0.55 {
		t.Errorf("goodput %.1f%% of the quota over the whole run, want ≥ 55%%", 100*r.goodput)
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
		o := options{duration: 6 * time.Second, workers: 16, quota: defaultQuota, region: "cn-hangzhou", memory: true, compare: true}
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

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-headers", "bogus"},
		{"-workers", "0"},
		{"extra"},
		{"-endpoint", "ecs.cn-hangzhou.aliyuncs.com"}, // no credentials in the environment
	} {
		t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "")
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("run %q: want an error", args)
		}
	}
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
