package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tollgate-go/tollgate/transport"
)

func benchRequest(b *testing.B) *http.Request {
	b.Helper()
	req, err := http.NewRequest(http.MethodPost,
		"http://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId=LTAI5tBENCH&Action=DescribeInstances&Format=JSON"+
			"&RegionId=cn-hangzhou&SignatureMethod=HMAC-SHA1&SignatureNonce=3f2a&SignatureVersion=1.0"+
			"&Timestamp=2026-12-02T12%3A00%3A00Z&Version=2014-05-26&Signature=abc%3D", http.NoBody)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

func roundTrip(b *testing.B, rt http.RoundTripper, req *http.Request) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// BenchmarkRoundTrip measures what observing adds to a Transport's
// RoundTrip over a canned next RoundTripper (a header-less 200, the happy
// path): "none" has no Observer and no Logger, "collector" has the
// Collector, "logger" a Logger at Info (which logs nothing on this path),
// "both" both. Compare allocs/op and ns/op with "none".
func BenchmarkRoundTrip(b *testing.B) {
	info := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, bc := range []struct {
		name string
		cfg  func() transport.Config
	}{
		{"none", func() transport.Config { return transport.Config{} }},
		{"collector", func() transport.Config { return transport.Config{Observer: New(Config{})} }},
		{"logger", func() transport.Config { return transport.Config{Logger: info} }},
		{"both", func() transport.Config { return transport.Config{Observer: New(Config{}), Logger: info} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rt := transport.New(canned{}, bc.cfg())
			req := benchRequest(b)
			b.ReportAllocs()
			for b.Loop() {
				roundTrip(b, rt, req)
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			rt := transport.New(canned{}, bc.cfg())
			req := benchRequest(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					roundTrip(b, rt, req)
				}
			})
		})
	}
}

// BenchmarkObserve measures the Collector's own work per request event.
func BenchmarkObserve(b *testing.B) {
	c := New(Config{})
	req := benchRequest(b)
	tr := transport.New(canned{}, transport.Config{})
	ev := transport.RequestEvent{Key: tr.Key(req), Result: transport.ResultAllowed}
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
