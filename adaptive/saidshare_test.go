package adaptive

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestSaidShareArithmetic: the share is our count over the server's in
// its counting period (here a trailing window), both without the request
// answered.
func TestSaidShareArithmetic(t *testing.T) {
	const w = int64(time.Second)
	for _, c := range []struct {
		name   string
		others int64 // others' count in each window, beside our 8
		want   float64
	}{
		{"alone", 0, 1},
		{"one other alike", 8, 0.5},
		{"three others alike", 24, 0.25},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSaidShare()
			// Ours: 8 per window, evenly, none throttled, for four
			// windows; the server counts 8 of ours before each answer
			// and the others', and the request answered.
			for i := range int64(32) {
				at := i * w / 8
				h.update(at, uint64(i+1), 9+c.others, w)
				h.sample(at, uint64(i+1), w)
			}
			if math.Abs(h.share()-c.want) > 0.01 {
				t.Errorf("share %.3f, want %.3f", h.share(), c.want)
			}
		})
	}
}

// TestSaidShareThrottlesAreNotOurs: what the server throttled it did not
// count, so it is not ours: sending twice what it counts of us, every
// other request throttled, is the same share as sending what it counts.
// And a throttle answered late comes off the admissions after its own
// only: alone, late throttles of requests sent long ago leave the share
// whole.
func TestSaidShareThrottlesAreNotOurs(t *testing.T) {
	const w = int64(time.Second)
	t.Run("twice what is counted", func(t *testing.T) {
		h := newSaidShare()
		for i := range int64(64) {
			at, seq := i*w/16, uint64(i+1)
			if i%2 == 1 {
				h.throttled(seq) // answered at once
				continue
			}
			// Ours counted: 8 a window; the other's 8; and this one.
			h.update(at, seq, 17, w)
			h.sample(at, seq, w)
		}
		if math.Abs(h.share()-0.5) > 0.02 {
			t.Errorf("share %.3f, want 0.5", h.share())
		}
	})
	t.Run("answered late", func(t *testing.T) {
		h := newSaidShare()
		for i := range int64(32) {
			at, seq := i*w/8, uint64(i+1)
			h.update(at, seq, 9, w) // alone: 8 of ours and this one
			h.sample(at, seq, w)
		}
		for range 5 {
			h.throttled(1) // the first request's, answered now
		}
		h.update(32*w/8, 33, 9, w)
		if h.share() != 1 {
			t.Errorf("share %.3f after late throttles, want 1", h.share())
		}
	})
}

// TestSaidShareSplitsSlidingLog: processes without a store that spend one
// sliding log, whose server says its limit and Remaining on every answer,
// each pace at their share of it. Two clients of 16 callers on 200 per
// 10 s: paced at the whole limit each (the share left out of the pacer),
// 100% of the quota and 6.1% of the requests throttled from 20 s to 60 s,
// three runs; at their shares, 99.1–100% and 1.23–1.48%, ten runs. Alone,
// 99.9–100% and 0%, five runs. The floors are regression floors with
// that margin.
func TestSaidShareSplitsSlidingLog(t *testing.T) {
	for _, clients := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d clients", clients), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { saidShareRun(t, clients) })
		})
	}
}

// saidShareRun runs clients Limiters of 16 callers each on a sliding log
// of 200 per 10 s that says its limit on every answer, and checks the
// throttled share and goodput from 20 s to 60 s.
func saidShareRun(t *testing.T, clients int) {
	const limit, window = 200, 10 * time.Second
	cloud := fakecloud.New(fakecloud.Config{
		Quotas:               []fakecloud.Quota{{API: simAction, Limit: limit, Window: window, Policy: fakecloud.SlidingWindow}},
		Headers:              fakecloud.HeadersXRateLimit,
		HeadersOnEveryAnswer: true,
		ThrottleStatus:       429,
		Faults:               simLatency,
	})
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var lims []*Limiter
	for range clients {
		lim := New(Config{})
		lims = append(lims, lim)
		simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 16)
	}
	s := measure(simMeter{cloud, "AK1"}, start, 20*time.Second, 60*time.Second-time.Millisecond, "shared", limit/window.Seconds())
	wg.Wait()
	var shares []float64
	for _, l := range lims {
		shares = append(shares, l.Snapshot().SaidShare)
	}
	t.Logf("goodput %.1f%%, throttled %.2f%%; shares %.2f", 100*s.goodput(), 100*s.throttledShare(), shares)
	if clients > 1 && slices.Max(shares) >= 1 {
		t.Errorf("shares %.2f: each should see the others spend", shares)
	}
	if s.throttledShare() > 0.02 {
		t.Errorf("throttled %.2f%% of the settled requests, want at most 2%%", 100*s.throttledShare())
	}
	if s.goodput() < 0.9 {
		t.Errorf("goodput %.1f%%, want at least 90%%", 100*s.goodput())
	}
}
