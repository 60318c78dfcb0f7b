package redisquota

import (
	"math"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
)

func TestReserveArgsOf(t *testing.T) {
	const span = int64(maxSpan / time.Microsecond)
	tests := []struct {
		name    string
		p       adaptive.Pace
		maxWait time.Duration
		want    reserveArgs
	}{
		{"plain", adaptive.Pace{Interval: 50 * time.Millisecond, Burst: 4}, time.Second,
			reserveArgs{interval: 50000, tau: 150000, maxWait: 1000000}},
		{"interval rounds up", adaptive.Pace{Interval: 1500 * time.Nanosecond, Burst: 1}, 1999 * time.Nanosecond,
			reserveArgs{interval: 2, maxWait: 1}},
		{"zero pace asks for the one in force", adaptive.Pace{Burst: 3, Limit: 5, Window: time.Second}, time.Second,
			reserveArgs{maxWait: 1000000}},
		{"tiny interval is 1 µs", adaptive.Pace{Interval: time.Nanosecond}, 0,
			reserveArgs{interval: 1}},
		{"no deadline", adaptive.Pace{Interval: time.Second, Burst: 1}, math.MaxInt64,
			reserveArgs{interval: 1000000, maxWait: maxWaitMicros}},
		{"deadline passed", adaptive.Pace{Interval: time.Second, Burst: 1}, -time.Nanosecond,
			reserveArgs{interval: 1000000, maxWait: -1}},
		{"huge burst", adaptive.Pace{Interval: time.Second, Burst: math.MaxInt}, 0,
			reserveArgs{interval: 1000000, tau: span}},
		{"huge interval", adaptive.Pace{Interval: math.MaxInt64, Burst: 3}, 0,
			reserveArgs{interval: span, tau: span}},
		{"window", adaptive.Pace{Interval: time.Millisecond, Burst: 10, Limit: 100, Window: time.Minute}, 0,
			reserveArgs{interval: 1000, tau: 9000, logLimit: 100, logWindow: 60000000}},
		{"window at the log's size", adaptive.Pace{Interval: time.Millisecond, Burst: 1, Limit: 10000, Window: time.Hour}, 0,
			reserveArgs{interval: 1000, logLimit: 10000, logWindow: 3600000000}},
		{"window past the log's size", adaptive.Pace{Interval: time.Millisecond, Burst: 1, Limit: 10001, Window: time.Hour}, 0,
			reserveArgs{interval: 1000, logLimit: 5000, logWindow: 1800000000}},
		{"window split in 3", adaptive.Pace{Interval: time.Millisecond, Burst: 1, Limit: 25000, Window: 10 * time.Microsecond}, 0,
			reserveArgs{interval: 1000, logLimit: 8333, logWindow: 4}},
		{"limit without window", adaptive.Pace{Interval: time.Millisecond, Burst: 1, Limit: 5}, 0,
			reserveArgs{interval: 1000}},
	}
	for _, tt := range tests {
		if got := reserveArgsOf(tt.p, tt.maxWait); got != tt.want {
			t.Errorf("%s: reserveArgsOf(%+v, %v) = %+v, want %+v", tt.name, tt.p, tt.maxWait, got, tt.want)
		}
	}
}

// TestReserveArgsStayExact checks that the largest arguments, added to a
// Unix time in microseconds as the scripts add them, stay below 2^53,
// where doubles hold every integer.
func TestReserveArgsStayExact(t *testing.T) {
	a := reserveArgsOf(adaptive.Pace{Interval: math.MaxInt64, Burst: math.MaxInt, Limit: math.MaxInt64, Window: math.MaxInt64}, 0)
	now := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	if sum := now + a.tau + 2*a.interval + a.logWindow + int64(maxPause/time.Microsecond); sum >= 1<<53 {
		t.Fatalf("now + tau + 2 intervals + window + pause = %d, past 2^53", sum)
	}
}
