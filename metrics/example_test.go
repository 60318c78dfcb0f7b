package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/metrics"
	"github.com/tollgate-go/tollgate/transport"
)

// Example sends five calls against a quota of two per minute through a
// Transport observed by a Collector, and reads the metrics back from
// /metrics: three throttles (the first, and the two calls that test it),
// after which the tenant's limit is learned, and a wait time observed for
// each call. The tenant label carries the account
// id given in Accounts; an AccessKeyId not in Accounts would appear only as
// its "ak-" hash.
func Example() {
	c := metrics.New(metrics.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	cloud := fakecloud.New(fakecloud.Config{
		Quotas: []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.SlidingWindow, Limit: 2, Window: time.Minute}},
	})
	client := &http.Client{Transport: transport.New(cloud.RoundTripper(), transport.Config{
		Observer: c,
		Accounts: map[string]string{"AKIDexample": "1234567890123456"},
	})}
	for range 5 {
		req, _ := fakecloud.NewRequest(context.Background(), "http://ecs.aliyuncs.com", "AKIDexample", "DescribeInstances")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	// What a scrape of /metrics returns, e.g. from
	// http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, prefix := range []string{
			`tollgate_requests_total{result="throttled"`,
			`tollgate_wait_seconds_count`,
			`tollgate_limit_source{source="learned"`,
		} {
			if strings.HasPrefix(line, prefix) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// tollgate_limit_source{source="learned",tenant="acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances"} 1
	// tollgate_requests_total{result="throttled",tenant="acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances"} 3
	// tollgate_wait_seconds_count{tenant="acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances"} 5
}
