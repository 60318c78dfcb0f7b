package retry

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
)

// refusal is what transport.Transport returns when a request's wait for
// quota would pass its deadline: 5 s needed, 2 s left.
func refusal() *adaptive.WaitError {
	return &adaptive.WaitError{Wait: 5 * time.Second, Left: 2 * time.Second, Reason: "rate"}
}

// TestDoGivesUpAtOnceOnRefusal: a refusal whose wait does not fit in the
// call's context is its own reason, found at once, without a retry, a sleep
// or a spin; the WaitError stays reachable through what Do returns.
func TestDoGivesUpAtOnceOnRefusal(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"WaitError", refusal()},
		{"in a *url.Error, as http.Client returns it", &url.Error{Op: "Post", URL: "https://ecs.aliyuncs.com/", Err: refusal()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if got := Classify(nil, tt.err, time.Now()); got != (Outcome{Class: ClassRefused, Hint: 5 * time.Second}) {
					t.Errorf("Classify = %+v (%v), want refused with the 5s wait as hint", got, got.Class)
				}
				rec := &recorder{}
				p := &Policy{NoBudget: true, Observer: rec}
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancel()
				calls := 0
				start := time.Now()
				err := Do(ctx, p, func(context.Context) error { calls++; return tt.err })
				if calls != 1 || time.Since(start) != 0 {
					t.Errorf("%d attempts in %v, want 1 at once", calls, time.Since(start))
				}
				g := giveUp(t, err)
				var we *adaptive.WaitError
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Wait != 5*time.Second {
					t.Errorf("Do = %v: want it to match context.DeadlineExceeded and hold the *WaitError", err)
				}
				if g.Reason != ErrRefused || errors.Is(err, ErrPermanent) || g.Wait != 5*time.Second {
					t.Errorf("reason %v, Wait %v; want not permanent, the 5s the Transport needed", g.Reason, g.Wait)
				}
				if len(rec.giveUps) != 1 || len(rec.retries) != 0 {
					t.Fatalf("observer saw %d retries, %d give-ups; want 0, 1", len(rec.retries), len(rec.giveUps))
				}
				if ev := rec.giveUps[0]; ev.ReasonName() != "refused" || ev.Class != ClassRefused || ev.Wait != 5*time.Second {
					t.Errorf("give-up: reason %q, class %v, wait %v; want refused, refused, 5s", ev.ReasonName(), ev.Class, ev.Wait)
				}
			})
		})
	}
}

// TestDoRetriesRefusalAfterItsWait: a refusal under a per-attempt deadline
// shorter than the call's is retried, after the wait the Transport said it
// needed, never at once.
func TestDoRetriesRefusalAfterItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		p := &Policy{NoBudget: true, Rand: constRand(0),
			OnRetry: func(_ int, _ error, wait time.Duration) { waits = append(waits, wait) }}
		calls := 0
		start := time.Now()
		err := Do(t.Context(), p, func(ctx context.Context) error {
			calls++
			if calls == 1 {
				return &url.Error{Op: "Get", URL: "https://ecs.aliyuncs.com/", Err: refusal()}
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("Do = %v after %d attempts, want success on the 2nd", err, calls)
		}
		if got := time.Since(start); got != 5*time.Second || len(waits) != 1 || waits[0] != 5*time.Second {
			t.Errorf("took %v, waits %v; want one wait of the 5s the Transport needed", got, waits)
		}
	})
}

// TestCheckRetryStopsOnRefusal: retryablehttp's Backoff cannot see the wait a
// refusal needs, so CheckRetry does not retry one; it says why, and keeps
// the WaitError reachable.
func TestCheckRetryStopsOnRefusal(t *testing.T) {
	p := &Policy{NoBudget: true}
	refused := &url.Error{Op: "Get", URL: "https://ecs.aliyuncs.com/", Err: refusal()}
	ok, err := p.CheckRetry(context.Background(), nil, refused)
	if ok || !errors.Is(err, ErrRefused) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CheckRetry(refusal) = %v, %v; want false and an error matching ErrRefused and context.DeadlineExceeded", ok, err)
	}
}
