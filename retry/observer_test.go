package retry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/logtest"

	"github.com/tollgate-go/tollgate/quota"
)

// recorder is an Observer that keeps the events it is told of.
type recorder struct {
	mu      sync.Mutex
	retries []RetryEvent
	giveUps []GiveUpEvent
}

func (r *recorder) Retry(ev RetryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, ev)
}

func (r *recorder) GiveUp(ev GiveUpEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.giveUps = append(r.giveUps, ev)
}

func TestDoObserverRetriesAndGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var onRetry int
		p := &Policy{Rand: constRand(0.5), NoBudget: true, MaxAttempts: 3, Observer: &rec,
			OnRetry: func(int, error, time.Duration) { onRetry++ }}
		k := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "123"}
		calls := 0
		err := Do(quota.WithKey(t.Context(), k), p, failing(&calls, errThrottle, errTransient, errTransient))
		g := giveUp(t, err)
		if !errors.Is(err, ErrAttemptsExhausted) {
			t.Fatalf("Do = %v, want attempts exhausted", err)
		}
		if onRetry != 2 {
			t.Errorf("OnRetry called %d times, want 2 (it still works beside the Observer)", onRetry)
		}
		want := []RetryEvent{
			{Key: k, Attempt: 1, Wait: 500 * time.Millisecond, Class: ClassThrottle, Err: errThrottle},
			{Key: k, Attempt: 2, Wait: 100 * time.Millisecond, Class: ClassTransient, Err: errTransient},
		}
		if len(rec.retries) != len(want) {
			t.Fatalf("retries = %+v, want %+v", rec.retries, want)
		}
		for i := range want {
			if rec.retries[i] != want[i] {
				t.Errorf("retry %d = %+v, want %+v", i, rec.retries[i], want[i])
			}
		}
		if len(rec.giveUps) != 1 {
			t.Fatalf("give-ups = %+v, want one", rec.giveUps)
		}
		gu := rec.giveUps[0]
		if gu.Key != k || gu.Attempts != 3 || gu.Class != ClassTransient || gu.Err != errTransient ||
			gu.Reason != ErrAttemptsExhausted || gu.Elapsed != g.Elapsed || gu.ReasonName() != "attempts" {
			t.Errorf("give-up = %+v (%s), want key %v, 3 attempts, transient, reason attempts", gu, gu.ReasonName(), k)
		}
	})
}

func TestDoObserverSuccessIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var buf bytes.Buffer
		p := &Policy{NoBudget: true, Observer: &rec,
			Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		calls := 0
		if err := Do(t.Context(), p, failing(&calls)); err != nil {
			t.Fatal(err)
		}
		if len(rec.retries)+len(rec.giveUps) != 0 || buf.Len() != 0 {
			t.Errorf("a first-time success told the observer %+v, %+v and logged %q", rec.retries, rec.giveUps, buf.String())
		}
	})
}

func TestGiveUpReasonName(t *testing.T) {
	tests := []struct {
		reason error
		want   string
	}{
		{ErrPermanent, "permanent"},
		{ErrAttemptsExhausted, "attempts"},
		{ErrElapsedExhausted, "elapsed"},
		{context.DeadlineExceeded, "deadline"},
		{ErrRefused, "refused"},
		{ErrBudgetExhausted, "budget"},
		{context.Canceled, "canceled"},
		{errors.New("what"), "other"},
		{nil, "other"},
	}
	for _, tt := range tests {
		if got := (GiveUpEvent{Reason: tt.reason}).ReasonName(); got != tt.want {
			t.Errorf("ReasonName(%v) = %q, want %q", tt.reason, got, tt.want)
		}
	}
}

// credError is an error whose text quotes a signed URL and an SDK message
// with an AccessKeyId, as SDK errors do.
type credError struct{ code string }

const (
	leakAKID = "LTAI5tRETRYLEAKCHECK"
	leakSig  = "SIGRETRYLEAKCHECK0123"
)

func (e *credError) Error() string {
	return `Post "https://ecs.aliyuncs.com/?AccessKeyId=` + leakAKID + `&Action=DescribeInstances&Signature=` + leakSig +
		`": SDK.ServerError: ErrorCode: ` + e.code + `, Message: Specified AccessKeyId=` + leakAKID + ` is throttled`
}
func (e *credError) ErrorCode() string { return e.code }

func TestDoLoggerRedactsAndLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		p := &Policy{Rand: constRand(0), NoBudget: true, MaxAttempts: 3,
			Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		ctx := quota.WithKey(t.Context(), quota.Key{Product: "ecs"})
		calls := 0
		err := Do(ctx, p, failing(&calls, &credError{"Throttling.User"}, &credError{"Throttling.User"}, &credError{"Throttling.User"}))
		if !errors.Is(err, ErrAttemptsExhausted) {
			t.Fatalf("Do = %v", err)
		}
		// A permanent failure on the first attempt: Debug.
		calls = 0
		if err := Do(ctx, p, failing(&calls, &credError{"InvalidParameter"})); !errors.Is(err, ErrPermanent) {
			t.Fatalf("Do = %v", err)
		}

		for _, s := range []string{leakAKID, leakSig} {
			if strings.Contains(buf.String(), s) {
				t.Errorf("log holds %q:\n%s", s, buf.String())
			}
		}
		recs := logtest.Records(t, &buf)
		type line struct{ level, msg, reason string }
		var got []line
		for _, r := range recs {
			reason, _ := r["reason"].(string)
			got = append(got, line{r["level"].(string), r["msg"].(string), reason})
			if r["tenant"] != "acs:ecs" {
				t.Errorf("record %v: tenant %v, want acs:ecs", r, r["tenant"])
			}
			if e, _ := r["error"].(string); !strings.Contains(e, "REDACTED") || !strings.Contains(e, "ErrorCode") {
				t.Errorf("record %v: error %q, want a redacted text that keeps the code", r, e)
			}
		}
		want := []line{
			{"DEBUG", msgRetry, ""},
			{"DEBUG", msgRetry, ""},
			{"WARN", msgGiveUp, "attempts"},
			{"DEBUG", msgGiveUp, "permanent"},
		}
		if len(got) != len(want) {
			t.Fatalf("records = %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		if recs[2]["attempts"] != 3.0 || recs[2]["class"] != "throttle" {
			t.Errorf("give-up record %v: want attempts 3, class throttle", recs[2])
		}
	})
}

func TestDoLoggerInfoLevelOnlyGiveUps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		p := &Policy{Rand: constRand(0), NoBudget: true, MaxAttempts: 2,
			Logger: slog.New(slog.NewJSONHandler(&buf, nil))} // Info
		calls := 0
		if err := Do(t.Context(), p, failing(&calls, errThrottle, errThrottle)); err == nil {
			t.Fatal("Do succeeded")
		}
		recs := logtest.Records(t, &buf)
		if len(recs) != 1 || recs[0]["msg"] != msgGiveUp {
			t.Errorf("records at Info = %v, want the give-up only", recs)
		}
	})
}
