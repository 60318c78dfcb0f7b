package window

import (
	"sync/atomic"
	"testing"
	"time"
)

func BenchmarkTryAdd(b *testing.B) {
	w := New(time.Second, 64)
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.TryAdd(now.Add(time.Duration(i)*time.Microsecond), 1, 1<<20)
	}
}

func BenchmarkTryAddParallel(b *testing.B) {
	w := New(time.Second, 64)
	var clock atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.TryAdd(t0.Add(time.Duration(clock.Add(1000))), 1, 1<<20)
		}
	})
}

func BenchmarkCount(b *testing.B) {
	w := New(time.Second, 64)
	for i := range 1000 {
		w.Add(t0.Add(time.Duration(i)*time.Millisecond), 1)
	}
	now := t0.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		w.Count(now)
	}
}
