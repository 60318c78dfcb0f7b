package metrics_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
//
// The calls go to a test server that answers as Alibaba Cloud's API
// gateway does; against the cloud, the endpoint is
// https://ecs.cn-hangzhou.aliyuncs.com, whose host names the product.
func Example() {
	c := metrics.New(metrics.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	srv := httptest.NewServer(throttlingGateway(2, time.Minute))
	defer srv.Close()
	endpoint := srv.URL

	client := &http.Client{Transport: transport.New(nil, transport.Config{
		Observer: c,
		Accounts: map[string]string{"LTAI5tEXAMPLE": "1234567890123456"},
		Product:  "ecs", // for the test server's host; an Alibaba Cloud host names it itself
	})}
	for range 5 {
		req, err := newRequest(context.Background(), endpoint, "LTAI5tEXAMPLE", "DescribeInstances")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(transport.RedactError(err))
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
			`tollgate_requests_total{priority="default",result="throttled"`,
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
	// tollgate_requests_total{priority="default",result="throttled",tenant="acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances"} 3
	// tollgate_wait_seconds_count{priority="default",tenant="acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances"} 5
}

// throttlingGateway returns a handler that answers ECS DescribeInstances
// calls as Alibaba Cloud's API gateway does under a quota of limit calls in
// any trailing window: 200 with a JSON page of instances (here none), and
// past the quota HTTP 400 with code Throttling.User. Like the gateway, it
// sends no rate-limit header, so the Transport learns the quota from the
// throttles.
func throttlingGateway(limit int, window time.Duration) http.Handler {
	var (
		mu       sync.Mutex
		admitted []time.Time // the calls let through in the trailing window
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		for len(admitted) > 0 && now.Sub(admitted[0]) >= window {
			admitted = admitted[1:]
		}
		ok := len(admitted) < limit
		if ok {
			admitted = append(admitted, now)
		}
		mu.Unlock()

		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"RequestId":"8E1A2C","HostId":"ecs.aliyuncs.com","Code":"Throttling.User","Message":"Request was denied due to user flow control."}`)
			return
		}
		io.WriteString(w, `{"RequestId":"8E1A2C","TotalCount":0,"PageNumber":1,"PageSize":10,"Instances":{"Instance":[]}}`)
	})
}

// newRequest returns a call of an ECS API action as Alibaba Cloud's RPC
// style takes it: POST endpoint/?Action=…&RegionId=…&AccessKeyId=…, with a
// fresh SignatureNonce. An SDK also signs it (Timestamp, Signature);
// these examples' test servers check neither.
func newRequest(ctx context.Context, endpoint, accessKeyID, action string) (*http.Request, error) {
	q := url.Values{
		"Action":         {action},
		"RegionId":       {"cn-hangzhou"},
		"AccessKeyId":    {accessKeyID},
		"SignatureNonce": {rand.Text()},
	}
	return http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/?"+q.Encode(), http.NoBody)
}
