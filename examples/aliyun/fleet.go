package main

import (
	"context"
	"crypto/rand"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/aliyun/v1sdk"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/redisquota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// fleet is tollgate's side of a run: one Transport per process of
// -processes, each built as a process of its own would build it, with its
// own Config and retry budget and, with a store, its own Redis client and
// redisquota.Store. They share one Salt, random per run, as the processes
// of a fleet share a configured secret salt, so that they name the tenant
// alike, and so find its keys in Redis.
type fleet struct {
	transports []*transport.Transport
	policies   []*retry.Policy     // each process's retry policy, with its own budget
	stores     []*redisquota.Store // each process's store; nil without one
	clients    []*redis.Client     // the stores' Redis clients
	watch      *watcher            // every process's Observer, counting for them all; nil: none
}

// newFleet builds o.processes Transports as m says and routes the SDK
// clients through them round-robin: client i goes through Transport
// i % o.processes, the first of each wrapped with v1sdk.Wrap and the rest
// shared to it with v1sdk.Share. clients holds at least o.processes.
// With m.store the stores share a prefix of keys unique to the run, and
// each is warmed (see warm) within ctx. Close the fleet when the run ends.
func newFleet(ctx context.Context, o options, m mode, clients []*ecs.Client) (*fleet, error) {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // never fails (crypto/rand)
	prefix := runPrefix()
	f := new(fleet)
	if m.breaker || m.store {
		f.watch = new(watcher)
		if o.observer != nil { // not a typed nil in the interface
			f.watch.next = o.observer
		}
	}
	for p := range o.processes {
		policy := &retry.Policy{Budget: retry.NewBudget(retry.BudgetConfig{})}
		cfg := transport.Config{Product: "ecs", Salt: salt}
		if o.observer != nil {
			policy.Observer, cfg.Observer = o.observer, o.observer
		}
		if m.breaker {
			cfg.Breaker = &breaker.Config{}
		}
		if m.store {
			rdb := newRedisClient(o.redis)
			f.clients = append(f.clients, rdb)
			store, err := redisquota.New(redisquota.Config{Client: rdb, Prefix: prefix})
			if err != nil {
				f.close()
				return nil, err
			}
			if err := warm(ctx, store); err != nil {
				f.close()
				return nil, err
			}
			f.stores = append(f.stores, store)
			cfg.Store = store
		}
		if f.watch != nil {
			cfg.Observer = f.watch
		}
		tr, err := v1sdk.Wrap(&clients[p].Client, cfg)
		if err != nil {
			f.close()
			return nil, err
		}
		for i := p + o.processes; i < len(clients); i += o.processes {
			if err := v1sdk.Share(&clients[i].Client, tr); err != nil {
				f.close()
				return nil, err
			}
		}
		f.transports = append(f.transports, tr)
		f.policies = append(f.policies, policy)
	}
	return f, nil
}

// storeDown reports whether any process's Transport has found its store
// down (see transport.Transport.StoreDown).
func (f *fleet) storeDown() bool {
	for _, tr := range f.transports {
		if tr.StoreDown() {
			return true
		}
	}
	return false
}

// redisCalls returns the commands the processes' stores sent to Redis.
func (f *fleet) redisCalls() uint64 {
	var n uint64
	for _, s := range f.stores {
		n += s.Stats().Calls
	}
	return n
}

// close closes the stores' Redis clients.
func (f *fleet) close() {
	for _, c := range f.clients {
		c.Close()
	}
}
