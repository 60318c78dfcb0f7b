package retry

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/call"
)

// failing returns an op that fails with errs in turn, then succeeds, and
// counts its calls.
func failing(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

func giveUp(t *testing.T, err error) *GiveUpError {
	t.Helper()
	var g *GiveUpError
	if !errors.As(err, &g) {
		t.Fatalf("err = %v (%T), want a *GiveUpError", err, err)
	}
	return g
}

func TestDoSucceedsAfterBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		p := &Policy{Rand: constRand(0.5), NoBudget: true,
			OnRetry: func(n int, err error, wait time.Duration) { waits = append(waits, wait) }}
		calls := 0
		start := time.Now()
		err := Do(t.Context(), p, failing(&calls, errTransient, errTransient, errTransient))
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		if calls != 4 {
			t.Errorf("calls = %d, want 4", calls)
		}
		// 50 + 100 + 200 ms: full jitter at 0.5 of 100 ms doubling.
		if got, want := time.Since(start), 350*time.Millisecond; got != want {
			t.Errorf("elapsed = %v, want %v (waits %v)", got, want, waits)
		}
	})
}

func TestDoHintIsFloor(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"hint above backoff", &hintError{errThrottle, 5 * time.Second}, 5 * time.Second},
		{"backoff above hint", &hintError{errThrottle, 100 * time.Millisecond}, 500 * time.Millisecond},
		{"hint on a transient", &hintError{errTransient, 3 * time.Second}, 3 * time.Second},
		{"hint alone is a throttle", &hintError{errors.New("wait"), 2 * time.Second}, 2 * time.Second},
		{"hint capped", &hintError{errThrottle, time.Hour}, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &Policy{Rand: constRand(0.5), NoBudget: true}
				calls := 0
				start := time.Now()
				if err := Do(t.Context(), p, failing(&calls, tt.err)); err != nil {
					t.Fatalf("Do: %v", err)
				}
				if got := time.Since(start); got != tt.want {
					t.Errorf("waited %v, want %v", got, tt.want)
				}
			})
		})
	}
}

func TestDoHintFromHeaders(t *testing.T) {
	needParser(t)
	synctest.Test(t, func(t *testing.T) {
		p := &Policy{Rand: constRand(0), NoBudget: true}
		calls := 0
		start := time.Now()
		err := Do(t.Context(), p, failing(&calls,
			&headerError{errThrottle, http.Header{"Retry-After": {"7"}}},
			&headerError{errThrottle, http.Header{"Retry-After": {"3600"}}}))
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		if got, want := time.Since(start), 7*time.Second+time.Minute; got != want {
			t.Errorf("waited %v, want %v (7 s, then 1 h capped to 1 min)", got, want)
		}
	})
}

func TestDoGivesUpAtOnceWhenHintTooLong(t *testing.T) {
	t.Run("context deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			calls := 0
			start := time.Now()
			err := Do(ctx, &Policy{NoBudget: true}, failing(&calls, &hintError{errThrottle, 45 * time.Second}))
			g := giveUp(t, err)
			if !errors.Is(err, context.DeadlineExceeded) || g.Wait != 45*time.Second || g.Attempts != 1 || calls != 1 {
				t.Errorf("err = %v (%+v), want context.DeadlineExceeded after 1 attempt with Wait 45s", err, g)
			}
			if got := time.Since(start); got != 0 {
				t.Errorf("slept %v before giving up, want 0", got)
			}
		})
	})
	t.Run("max elapsed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			start := time.Now()
			err := Do(t.Context(), &Policy{NoBudget: true, MaxElapsed: 30 * time.Second},
				failing(&calls, &hintError{errThrottle, time.Hour}))
			g := giveUp(t, err)
			if !errors.Is(err, ErrElapsedExhausted) || g.Wait != time.Minute {
				t.Errorf("err = %v, want ErrElapsedExhausted with Wait 1m (hint capped)", err)
			}
			if !errors.Is(err, errThrottle) {
				t.Errorf("err = %v does not wrap the last error", err)
			}
			if got := time.Since(start); got != 0 {
				t.Errorf("slept %v before giving up, want 0", got)
			}
		})
	})
}

func TestDoCancelMidWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(2 * time.Second)
			cancel()
		}()
		calls := 0
		start := time.Now()
		err := Do(ctx, &Policy{NoBudget: true}, func(context.Context) error {
			calls++
			return &hintError{errThrottle, 50 * time.Second}
		})
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("Do returned after %v, want 2s (at cancel)", got)
		}
		g := giveUp(t, err)
		if !errors.Is(err, context.Canceled) || g.Attempts != 1 || calls != 1 {
			t.Errorf("err = %v (attempts %d, calls %d), want context.Canceled after 1 attempt", err, g.Attempts, calls)
		}
		synctest.Wait()
	})
}

func TestDoDoneContextMakesNoAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := Do(ctx, &Policy{NoBudget: true}, failing(&calls))
	if g := giveUp(t, err); calls != 0 || g.Attempts != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, calls = %d; want context.Canceled and no call", err, calls)
	}
}

func TestDoAttemptsExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := Do(t.Context(), &Policy{MaxAttempts: 3, NoBudget: true}, func(context.Context) error {
			calls++
			return errTransient
		})
		g := giveUp(t, err)
		if !errors.Is(err, ErrAttemptsExhausted) || g.Attempts != 3 || calls != 3 {
			t.Errorf("err = %v, calls = %d; want ErrAttemptsExhausted after 3", err, calls)
		}
		var se *sdkError
		if !errors.As(err, &se) || se.code != "ServiceUnavailable" {
			t.Errorf("errors.As(err, *sdkError) failed on %v", err)
		}
	})
}

// TestDoThrottledProbeNotCounted: an attempt that the limiter admitted as
// its tenant's probe (call.Probed) and the server throttled is not one of
// the call's MaxAttempts, though it is backed off as any other; a throttle
// of an attempt that was no probe, and a probe that failed otherwise, are
// counted. Before, the few callers of a 10 s window took the cold start's
// probes between them and gave up (the matrix's "fixed 200/10s, 4
// callers").
func TestDoThrottledProbeNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Attempts 1-4 are throttled probes, 5 a throttle, 6 and 7
		// probes that failed otherwise: 7 is the third counted, and Do
		// gives up at MaxAttempts 3.
		var at []time.Duration
		start := time.Now()
		err := Do(t.Context(), &Policy{MaxAttempts: 3, NoBudget: true, Rand: constRand(0.5)}, func(ctx context.Context) error {
			at = append(at, time.Since(start))
			switch n := len(at); {
			case n <= 4:
				call.Probed(ctx)
				return errThrottle
			case n == 5:
				return errThrottle
			default:
				call.Probed(ctx)
				return errTransient
			}
		})
		g := giveUp(t, err)
		if !errors.Is(err, ErrAttemptsExhausted) || g.Attempts != 7 {
			t.Fatalf("err = %v after %d attempts; want ErrAttemptsExhausted after 7 (4 probes not counted)", err, g.Attempts)
		}
		// Backed off by the attempt's number, probes included: half of
		// 1, 2, 4, 8 and 16 s after the throttles, half of 3.2 s after
		// the sixth, a 503.
		want := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond,
			7500 * time.Millisecond, 15500 * time.Millisecond, 17100 * time.Millisecond}
		if !slices.Equal(at, want) {
			t.Fatalf("attempts at %v, want %v", at, want)
		}
	})
}

// TestDoThrottledProbeSpendsBudget: a throttled probe's retry is not
// counted among MaxAttempts but spends the retry budget, so that a server
// that throttles every request still ends the storm.
func TestDoThrottledProbeSpendsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A few retries in any 10 s, and no more.
		b := NewBudget(BudgetConfig{Ratio: -1, MinPerSecond: 0.3, Window: 10 * time.Second})
		calls := 0
		err := Do(t.Context(), &Policy{MaxAttempts: 2, Budget: b}, func(ctx context.Context) error {
			calls++
			call.Probed(ctx)
			return errThrottle
		})
		if !errors.Is(err, ErrBudgetExhausted) || calls <= 2 || calls > 4 {
			t.Fatalf("err = %v after %d attempts; want ErrBudgetExhausted after 3 or 4 (past MaxAttempts 2)", err, calls)
		}
	})
}

func TestDoPermanentNeverRetried(t *testing.T) {
	perm := errors.New("bad input")
	tests := []struct {
		name string
		err  error
	}{
		{"SignatureNonceUsed", &sdkError{"SignatureNonceUsed", 400}},
		{"SignatureNonceUsed on 503", &sdkError{"SignatureNonceUsed", 503}},
		{"InvalidTimeStamp.Expired", &sdkError{"InvalidTimeStamp.Expired", 400}},
		{"InvalidAccessKeyId.NotFound", &sdkError{"InvalidAccessKeyId.NotFound", 404}},
		{"InvalidAccessKeyId.Inactive", &sdkError{"InvalidAccessKeyId.Inactive", 400}},
		{"SignatureDoesNotMatch", &sdkError{"SignatureDoesNotMatch", 400}},
		{"Forbidden.RAM", &sdkError{"Forbidden.RAM", 403}},
		{"Forbidden", &sdkError{"Forbidden", 403}},
		{"InvalidParameter", &sdkError{"InvalidParameter", 400}},
		{"InvalidParameter.Foo", &sdkError{"InvalidParameter.Foo", 400}},
		{"MissingParameter.RegionId", &sdkError{"MissingParameter.RegionId", 400}},
		{"permanent code with a hint", &hintError{&sdkError{"SignatureNonceUsed", 400}, time.Second}},
		{"unknown 400", &sdkError{"InvalidInstance.NotFound", 400}},
		{"Permanent wrapper", Permanent(&hintError{errThrottle, time.Second})},
		{"context.Canceled from op", context.Canceled},
		{"context.DeadlineExceeded from op", context.DeadlineExceeded},
		{"plain error", perm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Do(context.Background(), &Policy{NoBudget: true}, func(context.Context) error {
				calls++
				return tt.err
			})
			if calls != 1 {
				t.Errorf("op called %d times, want 1", calls)
			}
			g := giveUp(t, err)
			if !errors.Is(err, ErrPermanent) || g.Attempts != 1 {
				t.Errorf("err = %v, want ErrPermanent after 1 attempt", err)
			}
			if !errors.Is(err, unwrapPermanent(tt.err)) {
				t.Errorf("err = %v does not wrap %v", err, tt.err)
			}
		})
	}
}

func TestDoUserClassifierFirst(t *testing.T) {
	custom := errors.New("custom, retryable")
	p := &Policy{NoBudget: true, Rand: constRand(0),
		Classifier: func(_ *http.Response, err error) (Outcome, bool) {
			switch {
			case errors.Is(err, custom):
				return Outcome{Class: ClassTransient}, true
			case errors.Is(err, errThrottle):
				return Outcome{Class: ClassPermanent}, true
			}
			return Outcome{}, false
		}}
	calls := 0
	if err := Do(context.Background(), p, failing(&calls, custom, custom)); err != nil || calls != 3 {
		t.Errorf("custom retryable: err = %v, calls = %d; want nil, 3", err, calls)
	}
	calls = 0
	if err := Do(context.Background(), p, failing(&calls, errThrottle)); !errors.Is(err, ErrPermanent) || calls != 1 {
		t.Errorf("throttle made permanent: err = %v, calls = %d; want ErrPermanent, 1", err, calls)
	}
	calls = 0
	if err := Do(context.Background(), p, failing(&calls, errTransient)); err != nil || calls != 2 {
		t.Errorf("default rules: err = %v, calls = %d; want nil, 2", err, calls)
	}
}

func TestDoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		start := time.Now()
		v, err := DoValue(t.Context(), nil, func(context.Context) (string, error) {
			calls++
			if calls < 3 {
				return "", errThrottle
			}
			return "i-123", nil
		})
		if err != nil || v != "i-123" || calls != 3 {
			t.Errorf("DoValue = %q, %v after %d calls; want i-123, nil, 3", v, err, calls)
		}
		// nil Policy: throttle backoff from 1 s, full jitter: at most 1 s + 2 s.
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("waited %v, want at most 3s", d)
		}
	})
}

func TestGiveUpErrorMessage(t *testing.T) {
	err := &GiveUpError{Attempts: 2, Elapsed: time.Second, Wait: time.Minute, Last: errThrottle, Reason: context.DeadlineExceeded}
	want := "context deadline exceeded after 2 attempt(s) in 1s (next wait 1m0s): " + errThrottle.Error()
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q\nwant %q", got, want)
	}
}

// TestDoCarriesFirstAttempt: every attempt's context says when the call's
// first attempt began, so that a retry keeps that place in its tenant's
// line (see adaptive.Limiter.Wait); a Do within another's attempt keeps
// the outer call's start. Each attempt says its number (a call within
// another counts its own).
func TestDoCarriesFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &Policy{Rand: constRand(0.5), NoBudget: true}
		start := time.Now()
		var firsts []time.Time
		var attempts []int
		calls := 0
		err := Do(t.Context(), p, func(ctx context.Context) error {
			firsts = append(firsts, call.First(ctx))
			attempts = append(attempts, call.Attempts(ctx))
			time.Sleep(10 * time.Millisecond)
			if calls++; calls == 2 {
				// A call within the attempt: its own retries keep the
				// outer call's place.
				inner := 0
				if err := Do(ctx, p, func(ctx context.Context) error {
					firsts = append(firsts, call.First(ctx))
					attempts = append(attempts, call.Attempts(ctx))
					if inner++; inner < 2 {
						return errTransient
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			if calls < 3 {
				return errTransient
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(firsts) != 5 {
			t.Fatalf("%d attempts seen, want 5", len(firsts))
		}
		for i, f := range firsts {
			if !f.Equal(start) {
				t.Fatalf("attempt %d: first attempt at %v, want %v (when Do began)", i, f, start)
			}
		}
		// Outer 1, outer 2, inner 1, inner 2, outer 3.
		if want := []int{1, 2, 1, 2, 3}; !slices.Equal(attempts, want) {
			t.Fatalf("attempts %v, want %v", attempts, want)
		}
		if !call.First(t.Context()).IsZero() {
			t.Fatal("a context outside any Do says when a call began")
		}
	})
}
