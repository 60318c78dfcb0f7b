package main

import (
	"crypto/rand"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/aliyun"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// fleet is tollgate's side of a run: one Transport per process of
// -processes, each built as a process of its own would build it, with its
// own Config and retry budget. They share one Salt, random per run, as the
// processes of a fleet share a configured secret salt, so that they name
// the tenant alike.
type fleet struct {
	transports []*transport.Transport
	policies   []*retry.Policy // each process's retry policy, with its own budget
	watch      *watcher        // every process's Observer, counting for them all; nil: none
}

// newFleet builds o.processes Transports as m says and routes the SDK
// clients through them round-robin: client i goes through Transport
// i % o.processes, the first of each wrapped with aliyun.Wrap and the rest
// shared to it with aliyun.Share. clients holds at least o.processes.
func newFleet(o options, m mode, clients []*ecs.Client) (*fleet, error) {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // never fails (crypto/rand)
	f := new(fleet)
	if m.breaker {
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
		if f.watch != nil {
			cfg.Observer = f.watch
		}
		tr, err := aliyun.Wrap(&clients[p].Client, cfg)
		if err != nil {
			return nil, err
		}
		for i := p + o.processes; i < len(clients); i += o.processes {
			if err := aliyun.Share(&clients[i].Client, tr); err != nil {
				return nil, err
			}
		}
		f.transports = append(f.transports, tr)
		f.policies = append(f.policies, policy)
	}
	return f, nil
}
