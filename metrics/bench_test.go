package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tollgate-go/tollgate/transport"
)

// BenchmarkObserve measures the Collector's own work per request event.
func BenchmarkObserve(b *testing.B) {
	c := New(Config{})
	ev := transport.RequestEvent{Key: quotaKey(0), Result: transport.ResultAllowed}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Request(ev)
		}
	})
}

// BenchmarkCollect measures a scrape of 100 tenants.
func BenchmarkCollect(b *testing.B) {
	c := New(Config{})
	for i := range 100 {
		k := quotaKey(i)
		c.Request(transport.RequestEvent{Key: k, Result: transport.ResultAllowed})
		c.Limits(transport.LimitsEvent{Key: k})
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
