package adaptive

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// TestHeaderLimitExpires: a limit the headers said once, and never again,
// is forgotten after LimitTTL; until then it paces.
func TestHeaderLimitExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{LimitTTL: 5 * time.Minute})
		l.Observe(quota.Observation{At: time.Now(), Status: 200, Known: quota.FieldLimit | quota.FieldWindow,
			Limit: 1, Window: time.Minute})
		if s := l.Snapshot(); s.Source != SourceHeaders || s.Rate != 1.0/60 {
			t.Fatalf("after the header: source %v, rate %v; want headers, 1/60", s.Source, s.Rate)
		}
		time.Sleep(5*time.Minute - time.Second)
		admit(t, l)
		if s := l.Snapshot(); s.Source != SourceHeaders {
			t.Fatalf("forgotten before LimitTTL: source %v", s.Source)
		}
		time.Sleep(2 * time.Second)
		admit(t, l)
		if s := l.Snapshot(); s.Source == SourceHeaders {
			t.Errorf("still paced by the header (rate %v) after LimitTTL", s.Rate)
		}
	})
}

// TestPaceFloor: however slow a pace the answers set, one request per
// MaxPause goes; a window longer than MaxPause does not hold it back.
func TestPaceFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{MaxPause: 30 * time.Second})
		l.Observe(quota.Observation{At: time.Now(), Status: 200, Known: quota.FieldLimit | quota.FieldWindow,
			Limit: 1, Window: 366 * 24 * time.Hour})
		start := time.Now()
		for range 3 {
			admit(t, l)
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("3 requests took %v, want at most 2 × MaxPause", took)
		}
	})
}

// admit waits for one admission, with a deadline, and reports its answer.
func admit(t *testing.T, l *Limiter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tk, err := l.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(quota.Observation{At: time.Now(), Status: 200})
}
