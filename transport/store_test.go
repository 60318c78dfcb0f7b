package transport

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
)

// memStore is a Store in memory: a GCRA reservation per tenant, as package
// redisquota keeps in Redis, that can be made to fail.
type memStore struct {
	mu       sync.Mutex
	tat      map[quota.Key]int64 // Unix ns
	interval map[quota.Key]int64
	pause    map[quota.Key]int64
	peers    int

	calls, cancels, pauses atomic.Int64
	down                   atomic.Bool
	delay                  time.Duration // how long a call to a down store takes to fail
}

func newMemStore(peers int) *memStore {
	return &memStore{tat: map[quota.Key]int64{}, interval: map[quota.Key]int64{}, pause: map[quota.Key]int64{}, peers: peers}
}

var errStoreDown = errors.New("memstore: down")

func (s *memStore) fail(ctx context.Context) error {
	s.calls.Add(1)
	if !s.down.Load() {
		return nil
	}
	sleep(ctx, s.delay)
	return errStoreDown
}

func (s *memStore) Reserve(ctx context.Context, k quota.Key, p adaptive.Pace, maxWait time.Duration) (Reservation, error) {
	if err := s.fail(ctx); err != nil {
		return Reservation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixNano()
	iv := int64(p.Interval)
	tat := max(s.tat[k], now)
	due := max(now, tat-int64(p.Burst-1)*iv, s.pause[k])
	if due-now > int64(maxWait) {
		return Reservation{Wait: time.Duration(due - now), Peers: s.peers}, nil
	}
	s.tat[k], s.interval[k] = max(tat, due)+iv, iv
	return Reservation{OK: true, Wait: time.Duration(due - now), Peers: s.peers, Token: s.tat[k]}, nil
}

func (s *memStore) Cancel(ctx context.Context, k quota.Key, r Reservation) error {
	if err := s.fail(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels.Add(1)
	if s.tat[k] == r.Token {
		s.tat[k] -= s.interval[k]
	}
	return nil
}

func (s *memStore) Pause(ctx context.Context, k quota.Key, until time.Time) error {
	if err := s.fail(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses.Add(1)
	s.pause[k] = max(s.pause[k], until.UnixNano())
	return nil
}

// storeEvents is a StoreObserver that counts what it is told.
type storeEvents struct {
	mu     sync.Mutex
	events []StoreEvent
}

func (o *storeEvents) Request(RequestEvent) {}
func (o *storeEvents) Limits(LimitsEvent)   {}
func (o *storeEvents) Store(ev StoreEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, ev)
}

func (o *storeEvents) list() []StoreEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]StoreEvent(nil), o.events...)
}

// fleetAccounts names AK1's account alike in every Transport of a fleet, as
// processes that share a store must (see Config.Accounts and Salt).
var fleetAccounts = map[string]string{"AK1": "1234567890"}

// fleet runs n Transports made by cfg(i) against cloud, perWorkers workers
// each, all of account AK1, until ctx ends.
func fleet(ctx context.Context, t *testing.T, cloud *fakecloud.Cloud, n, perWorkers int, cfg func(i int) Config) ([]*Transport, *load, *sync.WaitGroup) {
	var l load
	var all sync.WaitGroup
	trs := make([]*Transport, n)
	for i := range n {
		c := cfg(i)
		c.Accounts = fleetAccounts
		trs[i] = New(cloud.RoundTripper(), c)
		wg := l.run(ctx, t, trs[i], "AK1", perWorkers)
		all.Go(wg.Wait)
	}
	return trs, &l, &all
}

// TestStoreSharesTheQuota runs four Transports on one store against one
// 50/s quota that the server says on every answer: together they get it
// with the withHeaders bounds, where without the store each spends it as
// if it were alone.
func TestStoreSharesTheQuota(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "shared"}[shared]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit = 50
				cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(limit), Headers: fakecloud.HeadersAlibaba, HeadersOnEveryAnswer: true, Faults: latency})
				store := newMemStore(4)
				ctx, cancel := context.WithTimeout(t.Context(), 12*time.Second)
				defer cancel()
				m := newMeter(cloud, "AK1")
				_, l, wg := fleet(ctx, t, cloud, 4, workers/4, func(int) Config {
					if !shared {
						return Config{}
					}
					return Config{Store: store}
				})
				time.Sleep(2 * time.Second)
				m.mark()
				time.Sleep(10*time.Second - time.Millisecond)
				s := m.since()
				wg.Wait()
				if !shared {
					t.Logf("without the store: goodput %.1f%%, %.2f%% throttled", 100*s.goodput(limit), 100*s.throttledShare())
					if s.throttledShare() <= withHeaders.maxThrottled {
						t.Errorf("without the store only %.2f%% throttled: the test shows nothing the store does", 100*s.throttledShare())
					}
					return
				}
				withHeaders.check(t, "four processes on one store", s, limit)
				if n := l.failed.Load(); n != 0 {
					t.Errorf("%d calls failed", n)
				}
				if store.calls.Load() == 0 {
					t.Error("the store was never called")
				}
			})
		})
	}
}
