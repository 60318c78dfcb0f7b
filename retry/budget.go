package retry

import (
	"sync"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Defaults used for zero fields of a BudgetConfig.
const (
	DefaultBudgetRatio        = 0.1
	DefaultBudgetMinPerSecond = 10.0
	DefaultBudgetWindow       = 10 * time.Second
	DefaultBudgetMaxTenants   = 4096
)

// budgetSlots is the number of buckets a tenant's window is cut into.
const budgetSlots = 10

// BudgetConfig configures a Budget. Each zero field means its default.
type BudgetConfig struct {
	// Ratio is the retries allowed per call made, over the window. 0 means
	// DefaultBudgetRatio (0.1: retries add at most 10% to the load); a
	// negative value allows only the floor.
	Ratio float64
	// MinPerSecond is a floor of retries per second always allowed to each
	// tenant, so that a tenant making few calls can still retry. 0 means
	// DefaultBudgetMinPerSecond (10); a negative value means no floor.
	MinPerSecond float64
	// Window is how long a call or retry counts, in 10 steps. 0 means
	// DefaultBudgetWindow (10 s).
	Window time.Duration
	// MaxTenants bounds the tenants tracked. A new tenant beyond it, when no
	// tracked tenant has been idle for a whole window, shares one overflow
	// account. 0 means DefaultBudgetMaxTenants (4096).
	MaxTenants int
}

func (c BudgetConfig) withDefaults() BudgetConfig {
	switch {
	case c.Ratio == 0:
		c.Ratio = DefaultBudgetRatio
	case c.Ratio < 0:
		c.Ratio = 0
	}
	switch {
	case c.MinPerSecond == 0:
		c.MinPerSecond = DefaultBudgetMinPerSecond
	case c.MinPerSecond < 0:
		c.MinPerSecond = 0
	}
	if c.Window <= 0 {
		c.Window = DefaultBudgetWindow
	}
	c.Window = max(c.Window, budgetSlots) // at least 1 ns per slot
	if c.MaxTenants <= 0 {
		c.MaxTenants = DefaultBudgetMaxTenants
	}
	return c
}

// Budget limits retries per tenant, in the manner of Finagle's RetryBudget
// and gRPC's retry throttling: each call deposits, each retry withdraws, and
// a retry is allowed while, over the trailing window,
//
//	retries + 1 ≤ Ratio × calls + MinPerSecond × Window
//
// so that under total failure retries add at most Ratio to the load, plus a
// small floor. Calls and retries are counted in 10 buckets that expire as
// the window slides.
//
// Tenants are told apart by quota.Key; calls without a key share one
// account. A tenant idle for a whole window holds no state and is dropped
// when room is needed, so memory stays bounded by MaxTenants.
//
// The zero Budget uses the default BudgetConfig. A Budget is safe for
// concurrent use; it must not be copied after first use.
type Budget struct {
	mu        sync.Mutex // guards everything below
	cfg       BudgetConfig
	ready     bool // cfg has its defaults filled in
	tenants   map[quota.Key]*tenantBudget
	overflow  tenantBudget
	lastSweep int64 // slot of the last sweep for idle tenants
}

type tenantBudget struct {
	head     int64 // slot index (time / slot width) of the newest bucket
	calls    [budgetSlots]int64
	retries  [budgetSlots]int64
	nonEmpty bool // some bucket may be non-zero
}

// NewBudget returns a Budget with the given configuration.
func NewBudget(cfg BudgetConfig) *Budget {
	return &Budget{cfg: cfg.withDefaults(), ready: true}
}

var defaultBudget = NewBudget(BudgetConfig{})

// DefaultBudget returns the process-wide Budget used by every Policy whose
// Budget is nil (and NoBudget false). It has the default BudgetConfig.
func DefaultBudget() *Budget { return defaultBudget }

// Deposit records a call by tenant k at time now. Do deposits once per call,
// before its first attempt.
func (b *Budget) Deposit(k quota.Key, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, slot := b.tenantLocked(k, now)
	t.calls[bucket(slot)]++
	t.nonEmpty = true
}

// Withdraw reports whether tenant k may retry at time now, and if so records
// the retry.
func (b *Budget) Withdraw(k quota.Key, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, slot := b.tenantLocked(k, now)
	var calls, retries int64
	for i := range budgetSlots {
		calls += t.calls[i]
		retries += t.retries[i]
	}
	allowed := b.cfg.Ratio*float64(calls) + b.cfg.MinPerSecond*b.cfg.Window.Seconds()
	if float64(retries+1) > allowed {
		return false
	}
	t.retries[bucket(slot)]++
	t.nonEmpty = true
	return true
}

// tenantLocked returns k's account, advanced to now, and now's slot index.
// The caller holds b.mu.
func (b *Budget) tenantLocked(k quota.Key, now time.Time) (*tenantBudget, int64) {
	if !b.ready {
		b.cfg = b.cfg.withDefaults()
		b.ready = true
	}
	slot := now.UnixNano() / int64(b.cfg.Window/budgetSlots)
	t := b.tenants[k]
	if t == nil {
		t = b.newTenantLocked(k, slot)
	}
	t.advance(slot)
	return t, max(slot, t.head)
}

// newTenantLocked adds an account for k, or returns the overflow account if
// there is no room. The caller holds b.mu.
func (b *Budget) newTenantLocked(k quota.Key, slot int64) *tenantBudget {
	if b.tenants == nil {
		b.tenants = make(map[quota.Key]*tenantBudget)
	}
	if len(b.tenants) >= b.cfg.MaxTenants && slot != b.lastSweep {
		// Idle tenants hold nothing that still counts: dropping them
		// changes no decision. Sweep at most once per slot.
		b.lastSweep = slot
		for key, t := range b.tenants {
			if t.idle(slot) {
				delete(b.tenants, key)
			}
		}
	}
	if len(b.tenants) >= b.cfg.MaxTenants {
		return &b.overflow
	}
	t := &tenantBudget{head: slot}
	b.tenants[k] = t
	return t
}

// idle reports whether nothing recorded in t counts any more at slot.
func (t *tenantBudget) idle(slot int64) bool {
	return !t.nonEmpty || slot-t.head >= budgetSlots
}

// advance moves t's window forward to slot, clearing expired buckets. A slot
// before head (the clock went back) changes nothing.
func (t *tenantBudget) advance(slot int64) {
	if slot <= t.head {
		return
	}
	if slot-t.head >= budgetSlots {
		t.calls = [budgetSlots]int64{}
		t.retries = [budgetSlots]int64{}
		t.nonEmpty = false
	} else {
		for s := t.head + 1; s <= slot; s++ {
			t.calls[bucket(s)] = 0
			t.retries[bucket(s)] = 0
		}
	}
	t.head = slot
}

// bucket returns the index of slot's bucket, also for slots before 1970.
func bucket(slot int64) int {
	return int((slot%budgetSlots + budgetSlots) % budgetSlots)
}
