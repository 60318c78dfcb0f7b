package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/transport"
)

// A Transport goes where any http.RoundTripper goes. Here it sends to the
// fake gateway in memory; in production next is nil (http.DefaultTransport)
// or your own transport.
func Example() {
	cloud := fakecloud.New(fakecloud.Config{})
	next := cloud.RoundTripper()

	client := &http.Client{Transport: transport.New(next, transport.Config{})}

	req, _ := fakecloud.NewRequest(context.Background(), "http://ecs.cn-hangzhou.aliyuncs.com", "LTAI5tEXAMPLE", "DescribeInstances")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}

// Rules give tenants a starting quota before the server has said anything,
// matched by the longest prefix of their key.
func ExampleConfig_rules() {
	var rules quota.Rules
	rules.Set(quota.Key{Product: "ecs"}, quota.Every(20, time.Second))
	tr := transport.New(nil, transport.Config{
		Rules:    &rules,
		Accounts: map[string]string{"LTAI5tEXAMPLE": "1234567890123456"},
	})

	req, _ := http.NewRequest("POST", "https://ecs.cn-hangzhou.aliyuncs.com/?Action=DescribeInstances&AccessKeyId=LTAI5tEXAMPLE&RegionId=cn-hangzhou", nil)
	key := tr.Key(req)
	snap := tr.Limiter(key).Snapshot()
	fmt.Println(key)
	fmt.Printf("%.0f/s from the %s\n", snap.Rate, snap.Source)
	// Output:
	// acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances
	// 20/s from the rule
}

// Errors from http.Client.Do quote the request's URL, and a signed request's
// URL holds its AccessKeyId, Signature and SecurityToken. Pass any error
// through RedactError before it reaches a log.
func ExampleRedactError() {
	cloud := fakecloud.New(fakecloud.Config{})
	client := &http.Client{Transport: transport.New(cloud.RoundTripper(), transport.Config{})}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the call fails before it is sent
	req, _ := fakecloud.NewRequest(ctx, "http://ecs.cn-hangzhou.aliyuncs.com", "LTAI5tEXAMPLE", "DescribeInstances")
	if _, err := client.Do(req); err != nil {
		fmt.Println(transport.RedactError(err))
	}
	// Output: Post "http://ecs.cn-hangzhou.aliyuncs.com/?REDACTED": context canceled
}

// With Config.Breaker set, a tenant whose service fails stops being sent
// to: after the failures the breaker counts (here 3 in a row), RoundTrip
// refuses at once with ErrCircuitOpen, saying when one probe will test the
// service again. retry.Do waits that long before its next attempt.
func ExampleConfig_breaker() {
	cloud := fakecloud.New(fakecloud.Config{Faults: fakecloud.Faults{UnavailableRate: 1}}) // every answer 503
	client := &http.Client{Transport: transport.New(cloud.RoundTripper(), transport.Config{
		Breaker: &breaker.Config{ConsecutiveFailures: 3, OpenFor: 30 * time.Second},
	})}

	for i := range 5 {
		req, _ := fakecloud.NewRequest(context.Background(), "http://ecs.cn-hangzhou.aliyuncs.com", "LTAI5tEXAMPLE", "DescribeInstances")
		resp, err := client.Do(req)
		var open *breaker.OpenError
		switch {
		case errors.As(err, &open):
			fmt.Printf("call %d: not sent, %v; probe in %.0fs\n", i+1, errors.Is(err, transport.ErrCircuitOpen), open.Wait.Seconds())
		case err != nil:
			fmt.Println(err)
		default:
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Printf("call %d: %s\n", i+1, resp.Status)
		}
	}
	fmt.Println("server saw", cloud.Stats().Total.Requests)
	// Output:
	// call 1: 503 Service Unavailable
	// call 2: 503 Service Unavailable
	// call 3: 503 Service Unavailable
	// call 4: not sent, true; probe in 30s
	// call 5: not sent, true; probe in 30s
	// server saw 3
}
