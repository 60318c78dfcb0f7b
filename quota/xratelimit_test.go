package quota

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestResetKind(t *testing.T) {
	tests := []struct {
		v    int64
		at   time.Time
		want resetUnit
	}{
		{0, now, resetDelta},
		{30, now, resetDelta},
		{3600, now, resetDelta},
		{86400 * 365 * 20, now, resetDelta},
		{now.Unix() + 30, now, resetEpochSeconds},
		{now.Unix() - 86400, now, resetEpochSeconds},
		{now.UnixMilli() + 30000, now, resetEpochMillis},
		{now.UnixMilli() - 86400000, now, resetEpochMillis},
		{1<<63 - 1, now, resetEpochMillis},
		// A zero or fake clock still reads realistic values.
		{30, time.Time{}, resetDelta},
		{1733130030, time.Time{}, resetEpochSeconds},
		{1733130030000, time.Time{}, resetEpochMillis},
		{30, time.Unix(0, 0), resetDelta},
		{1733130030, time.Unix(0, 0), resetEpochSeconds},
		// A clock in the far future does not overflow.
		{1733130030, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), resetDelta},
		{30, time.Unix(1<<62, 0), resetDelta},
	}
	for _, tt := range tests {
		if got := resetKind(tt.v, tt.at); got != tt.want {
			t.Errorf("resetKind(%d, %v) = %d, want %d", tt.v, tt.at, got, tt.want)
		}
	}
}

func TestXRateLimit(t *testing.T) {
	const (
		x   = SignalXRateLimit
		lrr = FieldLimit | FieldRemaining | FieldReset
	)
	epoch := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	epochMs := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	tests := []struct {
		name string
		h    http.Header
		want want
	}{
		{"delta reset", header("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "42", "X-RateLimit-Reset", "30"),
			want{known: lrr, limit: 100, remaining: 42, reset: 30 * time.Second, sources: x}},
		{"epoch seconds reset (GitHub)", header("X-RateLimit-Reset", epoch(30*time.Second)),
			want{known: FieldReset, reset: 30 * time.Second, sources: x}},
		{"epoch milliseconds reset", header("X-RateLimit-Reset", epochMs(1500*time.Millisecond)),
			want{known: FieldReset, reset: 1500 * time.Millisecond, sources: x}},
		{"epoch seconds with fraction", header("X-RateLimit-Reset", epoch(10*time.Second)+".25"),
			want{known: FieldReset, reset: 10250 * time.Millisecond, sources: x}},
		{"delta with fraction", header("X-RateLimit-Reset", "0.5"),
			want{known: FieldReset, reset: 500 * time.Millisecond, sources: x}},
		{"past epoch", header("X-RateLimit-Reset", epoch(-time.Hour)),
			want{known: FieldReset, reset: 0, sources: x}},
		{"far-future epoch capped", header("X-RateLimit-Reset", epoch(1000*time.Hour)),
			want{known: FieldReset, reset: time.Minute, sources: x}},
		{"long delta capped", header("X-RateLimit-Reset", "3600"),
			want{known: FieldReset, reset: time.Minute, sources: x}},
		{"reset repeated, same", header("X-RateLimit-Reset", "5", "X-RateLimit-Reset", "5"),
			want{known: FieldReset, reset: 5 * time.Second, sources: x}},
		{"reset conflict", header("X-RateLimit-Reset", "5, 9"),
			want{sources: x, malformed: x}},
		{"reset exponent", header("X-RateLimit-Reset", "1e400"),
			want{sources: x, malformed: x}},
		{"reset negative", header("X-RateLimit-Reset", "-3"),
			want{sources: x, malformed: x}},
		{"reset overflow", header("X-RateLimit-Reset", "99999999999999999999"),
			want{sources: x, malformed: x}},
		{"reset max int64", header("X-RateLimit-Reset", "9223372036854775807"),
			want{known: FieldReset, reset: time.Minute, sources: x}},
		{"limit with policies", header("X-RateLimit-Limit", "100, 100;w=60"),
			want{known: FieldLimit | FieldWindow, limit: 100, window: time.Minute, sources: x}},
		{"limit with its own window", header("X-RateLimit-Limit", "100;w=60"),
			want{known: FieldLimit | FieldWindow, limit: 100, window: time.Minute, sources: x}},
		{"limit with window on next line", header("X-RateLimit-Limit", "100", "X-RateLimit-Limit", "1000;w=3600, 100;w=1"),
			want{known: FieldLimit | FieldWindow, limit: 100, window: time.Second, sources: x}},
		{"limit without a matching policy", header("X-RateLimit-Limit", "100, 1000;w=3600"),
			want{known: FieldLimit, limit: 100, sources: x}},
		{"limit with bad window", header("X-RateLimit-Limit", "100;w=-1"),
			want{known: FieldLimit, limit: 100, sources: x, malformed: x}},
		{"limit with zero window", header("X-RateLimit-Limit", "100;w=0"),
			want{known: FieldLimit, limit: 100, sources: x, malformed: x}},
		{"a limit over a window beyond the horizon does not pace", header("X-RateLimit-Limit", "1;w=31622400"),
			want{sources: x}},
		{"limit unreadable", header("X-RateLimit-Limit", "lots, 100;w=60"),
			want{sources: x, malformed: x}},
		{"limit huge clamped", header("X-RateLimit-Limit", "9223372036854775807"),
			want{known: FieldLimit, limit: MaxCount, sources: x}},
		{"remaining with spaces", header("X-RateLimit-Remaining", "  7 "),
			want{known: FieldRemaining, remaining: 7, sources: x}},
		{"remaining repeated, same", header("X-RateLimit-Remaining", "7, 7"),
			want{known: FieldRemaining, remaining: 7, sources: x}},
		{"remaining conflict", header("X-RateLimit-Remaining", "5, 3"),
			want{sources: x, malformed: x}},
		{"remaining negative", header("X-RateLimit-Remaining", "-1"),
			want{sources: x, malformed: x}},
		{"remaining fraction", header("X-RateLimit-Remaining", "1.5"),
			want{sources: x, malformed: x}},
		{"quota id", header("X-RateLimit-Quota-ID", "ecs-describe", "X-RateLimit-Remaining", "1"),
			want{known: FieldRemaining, remaining: 1, quotaID: "ecs-describe", sources: x}},
		{"quota id with control byte", header("X-RateLimit-Quota-ID", "a\x01b"),
			want{sources: x, malformed: x}},
		{"quota id too long", header("X-RateLimit-Quota-ID", string(make([]byte, 200))),
			want{sources: x, malformed: x}},
		{"quota id conflict", header("X-RateLimit-Quota-ID", "a", "X-RateLimit-Quota-ID", "b"),
			want{sources: x, malformed: x}},
		{"lower-case names", http.Header{"x-ratelimit-limit": {"10"}, "x-ratelimit-remaining": {"0"}},
			want{known: FieldLimit | FieldRemaining, limit: 10, sources: x}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, parseHeader(t, tt.h), tt.want)
		})
	}
}

func FuzzXRateLimit(f *testing.F) {
	f.Add("100, 100;w=60", "42", "30", "q1")
	f.Add("100", "-1", "1733130030", "")
	f.Add("x", "5, 3", "1733130030000", "\x01")
	f.Add("100;w=99999999999", "1.5", "1e400", "a")
	f.Fuzz(func(t *testing.T, limit, remaining, reset, id string) {
		h := http.Header{
			"X-Ratelimit-Limit":     {limit},
			"X-Ratelimit-Remaining": {remaining},
			"X-Ratelimit-Reset":     {reset, reset},
			"X-Ratelimit-Quota-Id":  {id},
		}
		for _, at := range []time.Time{now, {}, time.Unix(1<<40, 0)} {
			o := new(Parser).ParseParts(http.StatusOK, h, nil, at)
			invariants(t, o, at, 0)
			if o.Throttled {
				t.Fatalf("a 200 is never a throttle")
			}
		}
	})
}
