package adaptive

import (
	"sync"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

func TestRegistrySeedsFromRules(t *testing.T) {
	var rules quota.Rules
	rules.Set(quota.Key{Product: "ecs"}, quota.Every(10, time.Second))
	rules.Set(tenantKey(1), quota.Every(99, time.Second))
	r := NewRegistry(RegistryConfig{Rules: &rules})
	if got := r.GetAt(tenantKey(0), t0).Snapshot().Rate; got != 10 {
		t.Fatalf("tenant 0 rate %v, want 10", got)
	}
	if got := r.GetAt(tenantKey(1), t0).Snapshot().Rate; got != 99 {
		t.Fatalf("tenant 1 rate %v, want 99", got)
	}
	if a, b := r.GetAt(tenantKey(0), t0), r.GetAt(tenantKey(0), t0); a != b {
		t.Fatal("two limiters for one key")
	}
	other := quota.Key{Product: "rds", Region: "x", Account: "1"}
	if got := r.GetAt(other, t0).Snapshot(); got.Rate != 0 || got.Source != SourceNone {
		t.Fatalf("unmatched key: %+v", got)
	}
	if r.Len() != 3 {
		t.Fatalf("Len = %d", r.Len())
	}
}

func TestRegistryIdleAndBound(t *testing.T) {
	r := NewRegistry(RegistryConfig{MaxTenants: 64 * 4, IdleTTL: time.Minute})
	for i := range 1000 {
		r.GetAt(tenantKey(i), t0.Add(time.Duration(i)*time.Second))
	}
	if n := r.Len(); n > 64*4 {
		t.Fatalf("Len = %d past MaxTenants", n)
	}
	first := r.GetAt(tenantKey(999), t0.Add(999*time.Second))
	busy := r.GetAt(tenantKey(5000), t0.Add(2000*time.Second))
	tk, _ := busy.ReserveAt(t0)
	dropped := r.Sweep(t0.Add(time.Hour))
	if r.Len() != 1 || dropped == 0 {
		t.Fatalf("after Sweep: Len %d, dropped %d; want only the busy tenant left", r.Len(), dropped)
	}
	if !first.Evicted() || busy.Evicted() {
		t.Fatalf("Evicted: dropped tenant %v, busy tenant %v; want true, false", first.Evicted(), busy.Evicted())
	}
	first.AllowAt(t0.Add(2 * time.Hour)) // a use after eviction keeps the mark
	if !first.Evicted() {
		t.Fatal("an admission cleared the eviction mark")
	}
	tk.Cancel()
	r.Sweep(t0.Add(time.Hour))
	if r.Len() != 0 || !busy.Evicted() {
		t.Fatalf("Len %d after the last ticket ended, busy evicted %v", r.Len(), busy.Evicted())
	}

	n := 0
	r.Range(func(quota.Key, *Limiter) bool { n++; return true })
	if n != 0 {
		t.Fatal("Range saw evicted tenants")
	}
	if again := r.Get(tenantKey(5000)); again == busy || again.Evicted() {
		t.Fatal("Get after eviction did not make a fresh Limiter")
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry(RegistryConfig{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				r.Get(tenantKey((i * (g + 1)) % 500)).Allow()
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			r.Range(func(k quota.Key, l *Limiter) bool { return true })
		}
	})
	wg.Wait()
	if r.Len() != 500 {
		t.Fatalf("Len = %d, want 500", r.Len())
	}
}
