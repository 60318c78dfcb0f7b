package transport_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/metrics"
	"github.com/tollgate-go/tollgate/transport"
)

// canned answers every request at once with a header-less 200, the common
// case tollgate must add next to nothing to.
type canned struct{}

func (canned) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header: http.Header{
			"Content-Type":     {"application/json;charset=utf-8"},
			"X-Acs-Request-Id": {"8A4B0F2E-0C4B-4C2D-9E8F-1A2B3C4D5E6F"},
		},
		Body:    http.NoBody,
		Request: req,
	}, nil
}

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

// BenchmarkRoundTrip compares a Transport over the canned RoundTripper with
// the canned RoundTripper alone ("bare"), for an Alibaba RPC request
// answered by a header-less 200: the difference is what tollgate adds per
// request. "collector" adds a metrics.Collector as Observer, "logger" a
// Logger at Info (which logs nothing on this path), "both" both;
// "breaker" a circuit breaker per tenant (an answer with a body costs one
// allocation more: the body that tells the breaker how it ended).
func BenchmarkRoundTrip(b *testing.B) {
	info := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, bc := range []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"bare", func() http.RoundTripper { return canned{} }},
		{"tollgate", func() http.RoundTripper { return transport.New(canned{}, transport.Config{}) }},
		{"collector", func() http.RoundTripper {
			return transport.New(canned{}, transport.Config{Observer: metrics.New(metrics.Config{})})
		}},
		{"logger", func() http.RoundTripper { return transport.New(canned{}, transport.Config{Logger: info}) }},
		{"both", func() http.RoundTripper {
			return transport.New(canned{}, transport.Config{Observer: metrics.New(metrics.Config{}), Logger: info})
		}},
		{"breaker", func() http.RoundTripper { return transport.New(canned{}, transport.Config{Breaker: &breaker.Config{}}) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rt, req := bc.rt(), benchRequest(b)
			b.ReportAllocs()
			for b.Loop() {
				roundTrip(b, rt, req)
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			rt, req := bc.rt(), benchRequest(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					roundTrip(b, rt, req)
				}
			})
		})
	}
}

// BenchmarkKey measures naming the tenant of an Alibaba RPC request.
func BenchmarkKey(b *testing.B) {
	keys := &transport.AlibabaKeys{}
	req := benchRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		keys.Key(req)
	}
}
