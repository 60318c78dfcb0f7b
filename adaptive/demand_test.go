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
