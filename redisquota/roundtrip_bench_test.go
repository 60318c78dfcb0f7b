package redisquota_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/internal/redistest"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/redisquota"
	"github.com/tollgate-go/tollgate/transport"
)

// instant answers every request at once with a 200.
type instant struct{}

func (instant) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// BenchmarkRoundTripStore compares a Transport whose tenant is paced by a
// rule on its own ("local") with one that shares it through redisquota on
// a real Redis over loopback ("redis"): the difference is what sharing
// costs a request. The rule's pace (a million a second) never holds a
// request back, so only the bookkeeping is measured; calls/op counts the
// Redis round trips per request.
func BenchmarkRoundTripStore(b *testing.B) {
	var rules quota.Rules
	rules.Set(quota.Key{}, quota.Rule{Rate: 1e6, Burst: 1000})
	srv := redistest.Start(b)
	for _, bc := range []struct {
		name  string
		store bool
	}{{"local", false}, {"redis", true}} {
		setup := func(b *testing.B) (http.RoundTripper, *redisquota.Store) {
			cfg := transport.Config{Rules: &rules}
			var s *redisquota.Store
			if bc.store {
				rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
				b.Cleanup(func() { rdb.Close() })
				var err error
				if s, err = redisquota.New(redisquota.Config{Client: rdb}); err != nil {
					b.Fatal(err)
				}
				cfg.Store = s
			}
			return transport.New(instant{}, cfg), s
		}
		report := func(b *testing.B, s *redisquota.Store) {
			if s != nil {
				b.ReportMetric(float64(s.Stats().Calls)/float64(b.N), "calls/op")
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			rt, s := setup(b)
			b.ReportAllocs()
			for b.Loop() {
				send(b, rt)
			}
			report(b, s)
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			rt, s := setup(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					send(b, rt)
				}
			})
			report(b, s)
		})
	}
}

func send(b *testing.B, rt http.RoundTripper) {
	req, err := http.NewRequest(http.MethodPost, "http://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId=LTAI5tBENCH&Action=DescribeInstances&RegionId=cn-hangzhou", http.NoBody)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
