package adaptive

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/tollgate-go/tollgate/fit"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestSnapshotFit: 32 workers against a fixed window of 50/1s that says
// nothing but "throttled" (answers 10–40 ms late): the record begins at
// the first throttle, and after 10 s the fit beside the estimate names a
// fixed window of 1 s and 50 within one. Where the server says its limit,
// the learner keeps no record.
func TestSnapshotFit(t *testing.T) {
	for _, c := range []struct {
		name    string
		headers fakecloud.HeaderMode
	}{{"none", fakecloud.HeadersNone}, {"alibaba", fakecloud.HeadersAlibaba}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:               []fakecloud.Quota{{API: simAction, Limit: 50, Window: time.Second}},
					Headers:              c.headers,
					HeadersOnEveryAnswer: true,
					Faults:               simLatency,
				})
				lim := New(Config{})
				if f := lim.Snapshot().Fit; f != (fit.Fit{}) {
					t.Fatalf("fit before any answer: %+v", f)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				var wg sync.WaitGroup
				simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
				wg.Wait()
				f := lim.Snapshot().Fit
				t.Logf("fit %v (score %.3f), then %v (%.3f), Ô %.1f, delay %.2f, %d answers", f.Best, f.Score, f.RunnerUp, f.RunnerUpScore, f.Others, f.Delay, f.Answers)
				if c.headers != fakecloud.HeadersNone {
					if f.Answers != 0 {
						t.Errorf("a record where the server says its limit: %+v", f)
					}
					return
				}
				b := f.Best
				if b.Kind != fit.Fixed || b.Window != time.Second || b.Limit < 49 || b.Limit > 51 {
					t.Errorf("fit %v, want fixed 50/1s", b)
				}
				if f.Answers == 0 || f.Answers > fit.Size {
					t.Errorf("fit on %d answers", f.Answers)
				}
			})
		})
	}
}

// TestFittedSize: a throttled tenant's record, with its fit, stays within
// the 16 KiB the learner may spend on it (#35); a fit's working space is
// pooled, not kept per tenant.
func TestFittedSize(t *testing.T) {
	if n := unsafe.Sizeof(fitted{}); n > 16<<10 {
		t.Errorf("a tenant's record takes %d bytes, want at most 16 KiB", n)
	} else {
		t.Logf("a tenant's record takes %d bytes", n)
	}
}
