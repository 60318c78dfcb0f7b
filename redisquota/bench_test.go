package redisquota

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
)

// benchPace lets every reservation through at once: the benchmark measures
// the round trip, not the pacing.
var benchPace = adaptive.Pace{Interval: time.Microsecond, Burst: 1, Limit: 100, Window: time.Second, Source: adaptive.SourceRule}

// BenchmarkReserve measures one Reserve on a real Redis over loopback: the
// cost a shared tenant's request adds before it is sent.
func BenchmarkReserve(b *testing.B) {
	_, c := newReal(b)
	s, err := New(Config{Client: c, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Reserve(ctx, tenant, benchPace, forever); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.Stats().Calls)/float64(b.N), "calls/op")
}

// BenchmarkReserveParallel measures Reserve from many goroutines at once,
// spread over 16 tenants, as a busy process calls it.
func BenchmarkReserveParallel(b *testing.B) {
	_, c := newReal(b)
	s, err := New(Config{Client: c, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var keys [16]quota.Key
	for i := range keys {
		keys[i] = quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: string(rune('a' + i))}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := s.Reserve(ctx, keys[i%len(keys)], benchPace, forever); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(s.Stats().Calls)/float64(b.N), "calls/op")
}
