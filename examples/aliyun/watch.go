package main

import (
	"sync/atomic"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/transport"
)

// watcher is the Transports' Observer in a run with a circuit breaker or
// a store: it counts the breaker's changes and the store's outages, and
// passes every event on to next (nil: none). It is safe for concurrent
// use.
type watcher struct {
	next     transport.Observer
	opened   atomic.Int64 // closed → open
	probes   atomic.Int64 // open → half-open: a probe goes
	reopened atomic.Int64 // half-open → open: the probe failed
	outages  atomic.Int64 // the store stopped answering
}

var (
	_ transport.BreakerObserver = (*watcher)(nil)
	_ transport.StoreObserver   = (*watcher)(nil)
)

// Request passes ev on.
func (w *watcher) Request(ev transport.RequestEvent) {
	if w.next != nil {
		w.next.Request(ev)
	}
}

// Limits passes ev on.
func (w *watcher) Limits(ev transport.LimitsEvent) {
	if w.next != nil {
		w.next.Limits(ev)
	}
}

// Breaker counts the change, and passes it on if next is a
// transport.BreakerObserver.
func (w *watcher) Breaker(ev transport.BreakerEvent) {
	switch {
	case ev.From == breaker.StateClosed && ev.To == breaker.StateOpen:
		w.opened.Add(1)
	case ev.To == breaker.StateHalfOpen:
		w.probes.Add(1)
	case ev.From == breaker.StateHalfOpen && ev.To == breaker.StateOpen:
		w.reopened.Add(1)
	}
	if bo, ok := w.next.(transport.BreakerObserver); ok {
		bo.Breaker(ev)
	}
}

// Store counts the store's outages, and passes the change on if next is a
// transport.StoreObserver.
func (w *watcher) Store(ev transport.StoreEvent) {
	if !ev.Up {
		w.outages.Add(1)
	}
	if so, ok := w.next.(transport.StoreObserver); ok {
		so.Store(ev)
	}
}
