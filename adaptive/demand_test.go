package adaptive

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestProbeNeedsDemand settles a tenant on a 50/s quota with 32 callers,
// then leaves one caller, who sends about 40/s, for 22 s, then brings the
// 32 back. A probe above L̂ in that time sees all its requests through,
// but no window saw more than L̂: it must not be taken for a raised
// quota, which would send the tenant back to slow start and cost a
// measurement's throttles when the callers return (77 before the span
// had to be kept up, 0-2 now).
func TestProbeNeedsDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas: []fakecloud.Quota{{API: simAction, Limit: 50, Window: time.Second}},
			Faults: fakecloud.Faults{LatencyRate: 1, Latency: 20 * time.Millisecond, LatencyJitter: 10 * time.Millisecond},
		})
		lim := New(Config{})
		var wg sync.WaitGroup
		defer wg.Wait()
		heavy, stop := context.WithTimeout(t.Context(), 8*time.Second)
		defer stop()
		simClient(heavy, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
		light, stop2 := context.WithTimeout(t.Context(), 40*time.Second)
		defer stop2()
		simClient(light, t, &wg, lim, cloud.RoundTripper(), "AK1", 1)
		time.Sleep(8 * time.Second)
		if p := lim.Snapshot().Phase; p != PhaseSettled {
			t.Fatalf("phase %v after 8 s of 32 callers, want settled", p)
		}
		probed := false
		for range 22 * 10 {
			time.Sleep(100 * time.Millisecond)
			s := lim.Snapshot()
			probed = probed || s.Rate > 51
			if s.Phase != PhaseSettled {
				t.Fatalf("phase %v with one caller below the quota, want settled", s.Phase)
			}
		}
		if !probed {
			t.Error("no probe above L̂ while the one caller sent: the test tests nothing")
		}
		again, stop3 := context.WithTimeout(t.Context(), 10*time.Second)
		defer stop3()
		m := simMeter{cloud, "AK1"}
		_, th0 := m.counts()
		simClient(again, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
		time.Sleep(10 * time.Second)
		if _, th1 := m.counts(); th1-th0 > 5 {
			t.Errorf("%d throttles when the callers came back, want ≤ 5", th1-th0)
		}
	})
}

// TestProbeNeedsMoreThanLimit: a tenant settled on 20 per 500 ms (40/s) by 16
// callers is left to callers that send 39 a second between them, on a
// clock of their own, for 30 s, on 6 seeds of the fake. A probe's span
// all got through, and its callers sent more than 90% of L̂ per window,
// which was once enough for it to tell: at 98% of the quota, L̂ rose
// with each probe (on 2 of the 6 seeds to 21 per 484 ms and 21 per
// 496 ms, 43.4/s and 42.3/s, 9 and 13 throttles in the 5 s after the 16
// came back). It is what a real-time test saw with its CPUs starved: the
// callers lagged the pacer, L̂ climbed to 20 per 300 ms, and 17% of the
// requests were throttled. Only a span in which more than L̂ per window
// went through raises L̂: the estimate never passes what was sent.
func TestProbeNeedsMoreThanLimit(t *testing.T) {
	const limit, window = 20, 500 * time.Millisecond
	quotaRate := float64(limit) / window.Seconds()
	for seed := range uint64(6) {
		synctest.Test(t, func(t *testing.T) {
			cloud := seededFixedCloud(seed+1, limit, window)
			lim := New(Config{})
			var wg sync.WaitGroup
			heavy, stop := context.WithTimeout(t.Context(), 8*time.Second)
			defer stop()
			simClient(heavy, t, &wg, lim, cloud.RoundTripper(), "AK1", 16)
			wg.Wait()
			before := lim.Snapshot()
			light, stop2 := context.WithTimeout(t.Context(), 30*time.Second)
			defer stop2()
			tickedClient(light, t, &wg, lim, cloud.RoundTripper(), "AK1", 4, 4*time.Second/39)
			wg.Wait()
			after := lim.Snapshot()
			m := simMeter{cloud, "AK1"}
			_, th0 := m.counts()
			again, stop3 := context.WithTimeout(t.Context(), 5*time.Second)
			defer stop3()
			simClient(again, t, &wg, lim, cloud.RoundTripper(), "AK1", 16)
			wg.Wait()
			_, th1 := m.counts()
			t.Logf("seed %d: %d per %v at 8 s; %d per %v (%.1f/s) after 30 s at 39/s; %d throttles in the 5 s after",
				seed+1, before.LearnedLimit, before.LearnedWindow, after.LearnedLimit, after.LearnedWindow, after.Learned, th1-th0)
			// The light stretch may raise nothing above both the quota
			// and what was learned before it (whose Ŵ the arrivals'
			// spread leaves a few ms either side of 500 ms), 1% aside.
			if most := max(quotaRate, before.Learned) * 1.01; after.Learned > most {
				t.Errorf("seed %d: learned %.1f/s (%d per %v) from callers that sent 39/s, above the quota's %.0f/s and the %.1f/s before",
					seed+1, after.Learned, after.LearnedLimit, after.LearnedWindow, quotaRate, before.Learned)
			}
		})
	}
}
