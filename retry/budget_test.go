package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/call"
	"github.com/tollgate-go/tollgate/quota"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// withdrawAll withdraws until refused and returns how many were allowed.
func withdrawAll(b *Budget, k quota.Key, now time.Time) int {
	n := 0
	for b.Withdraw(k, now) {
		n++
		if n > 1e6 {
			panic("budget never refuses")
		}
	}
	return n
}

func TestBudgetRatioAndFloor(t *testing.T) {
	b := NewBudget(BudgetConfig{Ratio: 0.1, MinPerSecond: 1, Window: 10 * time.Second})
	var k quota.Key
	if got := withdrawAll(b, k, t0); got != 10 {
		t.Errorf("no calls: %d retries allowed, want the floor, 10", got)
	}
	for range 100 {
		b.Deposit(k, t0)
	}
	if got := withdrawAll(b, k, t0); got != 10 {
		t.Errorf("after 100 calls: %d more retries allowed, want 10", got)
	}
	// 5 s later nothing has expired.
	if b.Withdraw(k, t0.Add(5*time.Second)) {
		t.Error("retry allowed at +5s, want the window to still count")
	}
	// A whole window later everything has expired: the floor again.
	if got := withdrawAll(b, k, t0.Add(10*time.Second)); got != 10 {
		t.Errorf("at +10s: %d retries allowed, want 10", got)
	}
}

func TestBudgetSlides(t *testing.T) {
	b := NewBudget(BudgetConfig{Ratio: 0.5, MinPerSecond: -1, Window: 10 * time.Second})
	var k quota.Key
	for range 10 {
		b.Deposit(k, t0)
	}
	for range 10 {
		b.Deposit(k, t0.Add(5*time.Second))
	}
	if got := withdrawAll(b, k, t0.Add(9*time.Second)); got != 10 {
		t.Errorf("at +9s: %d retries, want 10 (20 calls × 0.5)", got)
	}
	// At +10s the first 10 calls leave the window; the 10 retries made
	// at +9s still count against the 5 calls' worth that remain.
	if b.Withdraw(k, t0.Add(10*time.Second)) {
		t.Error("at +10s: retry allowed, want refused")
	}
	for range 10 {
		b.Deposit(k, t0.Add(12*time.Second))
	}
	// 20 calls × 0.5 against the 10 retries of +9s.
	if got := withdrawAll(b, k, t0.Add(14*time.Second+999*time.Millisecond)); got != 0 {
		t.Errorf("at +14.999s: %d retries, want 0", got)
	}
	// At +19s only the calls of +12s count: 10 × 0.5.
	if got := withdrawAll(b, k, t0.Add(19*time.Second)); got != 5 {
		t.Errorf("at +19s: %d retries, want 5", got)
	}
}

func TestBudgetPerTenant(t *testing.T) {
	b := NewBudget(BudgetConfig{MinPerSecond: 1, Window: time.Second})
	a := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "1"}
	c := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "2"}
	if got := withdrawAll(b, a, t0); got != 1 {
		t.Fatalf("tenant a: %d retries, want 1", got)
	}
	if !b.Withdraw(c, t0) {
		t.Error("tenant c refused after tenant a spent its budget")
	}
	if !b.Withdraw(quota.Key{}, t0) {
		t.Error("keyless calls refused after tenant a spent its budget")
	}
}

func TestBudgetBoundedTenants(t *testing.T) {
	b := NewBudget(BudgetConfig{Ratio: -1, MinPerSecond: 1, Window: time.Second, MaxTenants: 8})
	key := func(i int) quota.Key {
		return quota.Key{Product: "ecs", Account: string(rune('a'+i%26)) + string(rune('a'+i/26))}
	}
	for i := range 100 {
		b.Deposit(key(i), t0)
	}
	if n := len(b.tenants); n != 8 {
		t.Errorf("%d tenants tracked, want 8", n)
	}
	// Tenants 8..99 share the overflow account: one floor between them.
	if got := withdrawAll(b, key(50), t0); got != 1 {
		t.Errorf("overflow: %d retries, want 1", got)
	}
	if b.Withdraw(key(60), t0) {
		t.Error("overflow tenant 60 allowed a retry after tenant 50 spent the shared one")
	}
	// A window later the idle tenants make room for new ones.
	later := t0.Add(2 * time.Second)
	for i := 100; i < 200; i++ {
		b.Deposit(key(i), later)
	}
	if n := len(b.tenants); n != 8 {
		t.Errorf("%d tenants tracked, want 8", n)
	}
	if _, ok := b.tenants[key(100)]; !ok {
		t.Error("new tenant 100 not tracked after idle ones expired")
	}
}

func TestBudgetZeroValue(t *testing.T) {
	var b Budget
	if got := withdrawAll(&b, quota.Key{}, t0); got != 100 {
		t.Errorf("zero Budget: %d retries with no calls, want 100 (10/s × 10 s)", got)
	}
}

func TestBudgetClockBeforeEpoch(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	old := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Deposit(quota.Key{}, old)
	if !b.Withdraw(quota.Key{}, old) {
		t.Error("retry refused")
	}
}

// TestDoRetriesWithinBudget: under 100% failure, retries stay within
// Ratio × calls + floor.
func TestDoRetriesWithinBudget(t *testing.T) {
	const calls = 2000
	cfg := BudgetConfig{Ratio: 0.1, MinPerSecond: 10, Window: 10 * time.Second}
	limit := int(cfg.Ratio*calls + cfg.MinPerSecond*cfg.Window.Seconds()) // 300

	t.Run("sequential", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := &Policy{Budget: NewBudget(cfg), Rand: constRand(0)}
			attempts, exhausted := 0, 0
			for range calls {
				err := Do(t.Context(), p, func(context.Context) error {
					attempts++
					return errTransient
				})
				if errors.Is(err, ErrBudgetExhausted) {
					exhausted++
				}
			}
			if retries := attempts - calls; retries != limit {
				t.Errorf("%d retries for %d calls, want exactly %d", retries, calls, limit)
			}
			if exhausted == 0 {
				t.Error("no call gave up with ErrBudgetExhausted")
			}
		})
	})
	t.Run("concurrent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := &Policy{Budget: NewBudget(cfg), Rand: constRand(0.01)}
			var (
				mu       sync.Mutex
				attempts int
				wg       sync.WaitGroup
			)
			for range 20 {
				wg.Go(func() {
					for range calls / 20 {
						_ = Do(t.Context(), p, func(context.Context) error {
							mu.Lock()
							attempts++
							mu.Unlock()
							return errThrottle
						})
					}
				})
			}
			wg.Wait()
			if retries := attempts - calls; retries > limit || retries < limit/2 {
				t.Errorf("%d retries for %d calls, want at most %d (and not far below)", retries, calls, limit)
			}
		})
	})
}

// TestDoLearnsTenantFromBelow checks that Do, given no key, spends the
// retry budget of the tenant the layer below names for the call's
// request (as transport.Transport does), so that a storm on one tenant
// leaves another's budget whole.
func TestDoLearnsTenantFromBelow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "a", API: "DescribeInstances"}
		b := a
		b.Account = "b"
		p := &Policy{Budget: NewBudget(BudgetConfig{Ratio: -1, MinPerSecond: 0.3, Window: 10 * time.Second})}
		storm := func(ctx context.Context) error {
			call.SetKey(ctx, a)
			return errThrottle
		}
		if err := Do(t.Context(), p, storm); !errors.Is(err, ErrBudgetExhausted) {
			t.Fatalf("storm on a: %v, want its budget exhausted", err)
		}
		n := 0
		err := Do(t.Context(), p, func(ctx context.Context) error {
			call.SetKey(ctx, b)
			if n++; n == 1 {
				return errThrottle
			}
			return nil
		})
		if err != nil || n != 2 {
			t.Errorf("b after a's storm: %v after %d attempts, want a retry on b's own budget", err, n)
		}
	})
}
