package adaptive

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// benchLimiter has both a bucket and a window in force (burst > 1 makes the
// window necessary), every call admitted: the full decision.
func benchLimiter() *Limiter {
	return New(Config{Rule: quota.Rule{Rate: benchRate, Burst: 1000, Limit: 1 << 23, Window: time.Second}})
}

func BenchmarkLimiterAllowAt(b *testing.B) {
	l := benchLimiter()
	if l.win.Load() == nil {
		b.Fatal("no window in force")
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.AllowAt(t0.Add(time.Duration(i) * time.Microsecond))
	}
}

func BenchmarkLimiterAllowAtParallel(b *testing.B) {
	l := benchLimiter()
	var clock atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.AllowAt(t0.Add(time.Duration(clock.Add(1000))))
		}
	})
}

func BenchmarkLimiterAllow(b *testing.B) {
	l := benchLimiter()
	b.ReportAllocs()
	for b.Loop() {
		l.Allow()
	}
}

func BenchmarkLimiterAllowParallel(b *testing.B) {
	l := benchLimiter()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow()
		}
	})
}

func BenchmarkLimiterReserveDone(b *testing.B) {
	l := benchLimiter()
	obs := quota.Observation{At: t0, Status: 200}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tk, _ := l.ReserveAt(t0.Add(time.Duration(i) * time.Microsecond))
		tk.Done(obs)
	}
}

func BenchmarkLimiterWaitParallel(b *testing.B) {
	l := benchLimiter()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, _ := l.Wait(ctx)
			tk.Cancel()
		}
	})
}

var (
	benchRegOnce sync.Once
	benchReg     *Registry
	benchKeys    []quota.Key
)

func BenchmarkRegistryGet100k(b *testing.B) {
	benchRegOnce.Do(func() {
		benchReg = NewRegistry(RegistryConfig{MaxTenants: 200_000})
		benchKeys = make([]quota.Key, 100_000)
		for i := range benchKeys {
			benchKeys[i] = tenantKey(i)
			benchReg.GetAt(benchKeys[i], t0)
		}
		runtime.GC()
	})
	r, keys := benchReg, benchKeys
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.GetAt(keys[i%len(keys)], t0)
			i += 7919
		}
	})
}

// TestMemoryPerTenant measures the heap a Registry holds per tenant with
// 100 000 tenants, for a rule without a window (the bucket implies it) and a
// rule with burst > 1 (a window in force).
func TestMemoryPerTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100k limiters")
	}
	const n = 100_000
	keys := make([]quota.Key, n)
	for i := range keys {
		keys[i] = tenantKey(i)
	}
	for _, c := range []struct {
		name string
		rule quota.Rule
	}{
		{"no rule", quota.Rule{}},
		{"Every(50/s)", quota.Every(50, time.Second)},
		{"burst 10 + window 100/10s", quota.Rule{Rate: 10, Burst: 10, Limit: 100, Window: 10 * time.Second}},
	} {
		var rules quota.Rules
		rules.Set(quota.Key{Product: "ecs"}, c.rule)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := NewRegistry(RegistryConfig{Rules: &rules})
		for _, k := range keys {
			r.GetAt(k, t0).AllowAt(t0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		t.Logf("%s: %d tenants, %.0f bytes per tenant (keys' strings not counted)", c.name, r.Len(), per)
		if c.rule.Burst <= 1 && per > 640 {
			t.Errorf("%s: %.0f bytes per tenant, want <= 640", c.name, per)
		}
		runtime.KeepAlive(r)
	}
}

// BenchmarkRegistryCreateFull creates new tenants in a Registry held at
// MaxTenants, so that each creation evicts one. The pre-fill is not timed;
// the timed loop makes each new key (a small allocation) as well.
func BenchmarkRegistryCreateFull(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			r := NewRegistry(RegistryConfig{MaxTenants: n})
			for i := range n {
				r.GetAt(tenantKey(i), t0)
			}
			runtime.GC()
			b.ReportAllocs()
			for i := n; b.Loop(); i++ {
				r.GetAt(tenantKey(i), t0.Add(time.Duration(i-n)*time.Microsecond))
			}
			if r.Len() > n {
				b.Fatalf("Len = %d past MaxTenants %d", r.Len(), n)
			}
		})
	}
}
