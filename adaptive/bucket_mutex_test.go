package adaptive

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// mutexBucket is the same GCRA decision as bucket.take behind a mutex: the
// alternative the benchmarks measure bucket against.
type mutexBucket struct {
	mu            sync.Mutex
	tat, interval int64
	tau           int64
}

func (b *mutexBucket) take(now int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval == 0 {
		return 0
	}
	if free := b.tat - b.tau; now < free {
		return free - now
	}
	b.tat = max(b.tat, now) + b.interval
	return 0
}

// The benchmarks below run the same workload: a bucket fast enough that
// every call is admitted, so each call does the full update.
const benchRate = 1e9 // per second

func benchBucket() *bucket {
	var b bucket
	b.set(0, benchRate, 1000)
	return &b
}

func BenchmarkBucketGCRA(b *testing.B) {
	bk := benchBucket()
	ns := t0.UnixNano()
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		bk.take(ns + i)
	}
}

func BenchmarkBucketMutex(b *testing.B) {
	bk := &mutexBucket{interval: 1, tau: 999}
	ns := t0.UnixNano()
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		bk.take(ns + i)
	}
}

func BenchmarkBucketGCRAParallel(b *testing.B) {
	bk := benchBucket()
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bk.take(clock.Add(1))
		}
	})
}

func BenchmarkBucketMutexParallel(b *testing.B) {
	bk := &mutexBucket{interval: 1, tau: 999}
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bk.take(clock.Add(1))
		}
	})
}

// Baseline: x/time/rate's AllowN with an explicit time, same workload.
func BenchmarkXRateAllowN(b *testing.B) {
	lim := rate.NewLimiter(benchRate, 1000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lim.AllowN(t0.Add(time.Duration(i)*time.Microsecond), 1)
	}
}

func BenchmarkXRateAllowNParallel(b *testing.B) {
	lim := rate.NewLimiter(benchRate, 1000)
	var clock atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			lim.AllowN(t0.Add(time.Duration(clock.Add(1000))), 1)
		}
	})
}

// Baseline: x/time/rate's Allow, reading the clock.
func BenchmarkXRateAllow(b *testing.B) {
	lim := rate.NewLimiter(benchRate, 1000)
	b.ReportAllocs()
	for b.Loop() {
		lim.Allow()
	}
}

func BenchmarkXRateAllowParallel(b *testing.B) {
	lim := rate.NewLimiter(benchRate, 1000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			lim.Allow()
		}
	})
}
