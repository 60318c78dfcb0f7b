package adaptive

import (
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

// TestRegistryBreakers: each tenant gets its own breaker, made once with
// its Limiter and dropped with it; Snapshot shows its state.
func TestRegistryBreakers(t *testing.T) {
	made := map[quota.Key]int{}
	r := NewRegistry(RegistryConfig{IdleTTL: time.Minute, Breaker: func(k quota.Key) *breaker.Breaker {
		made[k]++
		return breaker.New(breaker.Config{ConsecutiveFailures: 2}, nil)
	}})
	a, b := r.GetAt(tenantKey(0), t0), r.GetAt(tenantKey(1), t0)
	if a.Breaker() == nil || a.Breaker() == b.Breaker() || r.GetAt(tenantKey(0), t0).Breaker() != a.Breaker() {
		t.Fatal("want one breaker per tenant, the same on each lookup")
	}
	for range 2 {
		p, err := a.Breaker().Allow(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p.Done(breaker.Failure)
	}
	if s := a.Snapshot(); s.Breaker != breaker.StateOpen || !s.BreakerUntil.After(time.Now()) {
		t.Fatalf("Snapshot after two failures: breaker %v until %v, want open", s.Breaker, s.BreakerUntil)
	}
	if s := b.Snapshot(); s.Breaker != breaker.StateClosed || !s.BreakerUntil.IsZero() {
		t.Fatalf("the other tenant's breaker is %v", s.Breaker)
	}
	r.Sweep(t0.Add(time.Hour))
	fresh := r.GetAt(tenantKey(0), t0.Add(time.Hour))
	if fresh == a || fresh.Breaker() == a.Breaker() || fresh.Breaker().State() != breaker.StateClosed {
		t.Fatal("an evicted tenant's breaker outlived it")
	}
	if made[tenantKey(0)] != 2 || made[tenantKey(1)] != 1 {
		t.Fatalf("breakers made: %v", made)
	}
	if New(Config{}).Breaker() != nil || NewRegistry(RegistryConfig{}).Get(tenantKey(2)).Breaker() != nil {
		t.Fatal("a breaker without RegistryConfig.Breaker")
	}
}
