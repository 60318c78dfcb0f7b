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

// TestRegistryEvictsColdFirst fills a Registry to MaxTenants and creates a
// wave of new tenants: the count never passes MaxTenants, and the tenants
// evicted are long-unused ones, never one used since the fill nor one with a
// request in flight, though both were created before all the others. A
// sample of 16 finds an unused tenant as long as fewer than 15 new ones went
// to its shard of about 64 (2 on average; 14 or more somewhere: ~1e-6).
func TestRegistryEvictsColdFirst(t *testing.T) {
	const max, wave = 64 * 64, 128
	r := NewRegistry(RegistryConfig{MaxTenants: max})
	used := r.GetAt(tenantKey(0), t0.Add(-5*time.Minute))
	busy := r.GetAt(tenantKey(1), t0.Add(-5*time.Minute))
	tk, ok := busy.ReserveAt(t0.Add(-5 * time.Minute))
	if !ok {
		t.Fatal("no ticket for the busy tenant")
	}
	defer tk.Cancel()
	cold := make([]*Limiter, 0, max)
	for i := 2; i < max; i++ {
		cold = append(cold, r.GetAt(tenantKey(i), t0))
	}
	r.GetAt(tenantKey(0), t0.Add(time.Minute))

	later := t0.Add(2 * time.Minute)
	fresh := make([]*Limiter, wave)
	for i := range fresh {
		fresh[i] = r.GetAt(tenantKey(max+i), later)
		if n := r.Len(); n > max {
			t.Fatalf("Len = %d past MaxTenants after %d creations", n, i+1)
		}
	}
	if used.Evicted() || busy.Evicted() {
		t.Fatalf("evicted: the tenant used since the fill %v, the one in flight %v; want neither", used.Evicted(), busy.Evicted())
	}
	if r.GetAt(tenantKey(0), later) != used || r.GetAt(tenantKey(1), later) != busy {
		t.Fatal("a surviving tenant's key gives a new Limiter")
	}
	for i, l := range fresh {
		if l.Evicted() {
			t.Fatalf("new tenant %d evicted while %d-odd unused ones remain", i, max-wave)
		}
	}
	gone := 0
	for _, l := range cold {
		if l.Evicted() {
			gone++
		}
	}
	seen, stale := 0, 0
	r.Range(func(k quota.Key, l *Limiter) bool {
		seen++
		if l.Evicted() {
			stale++
		}
		return true
	})
	if gone != wave || r.Len() != max || seen != max || stale != 0 {
		t.Fatalf("%d unused tenants evicted, Len %d, Range saw %d (%d evicted); want %d, %d, %d (0)",
			gone, r.Len(), seen, stale, wave, max, max)
	}
}
