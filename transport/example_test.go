package transport_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/transport"
)

// A Transport goes where any http.RoundTripper goes. Here the client calls
// a test server that answers as Alibaba Cloud's API gateway does; against
// the cloud, the endpoint is https://ecs.cn-hangzhou.aliyuncs.com. Nil
// as next sends through http.DefaultTransport; pass your own transport
// instead if you have one.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(describeInstances))
	defer srv.Close()
	endpoint := srv.URL

	client := &http.Client{Transport: transport.New(nil, transport.Config{})}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds the wait for quota too
	defer cancel()
	req, err := newRequest(ctx, endpoint, "LTAI5tEXAMPLE", "DescribeInstances")
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
// through RedactError before it reaches a log. Here the call fails before
// it is sent, so it needs no server.
func ExampleRedactError() {
	client := &http.Client{Transport: transport.New(nil, transport.Config{})}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the call fails before it is sent
	req, err := newRequest(ctx, "https://ecs.cn-hangzhou.aliyuncs.com", "LTAI5tEXAMPLE", "DescribeInstances")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Do(req); err != nil {
		fmt.Println(transport.RedactError(err))
	}
	// Output: Post "https://ecs.cn-hangzhou.aliyuncs.com/?REDACTED": context canceled
}

// With Config.Breaker set, a tenant whose service fails stops being sent
// to: after the failures the breaker counts (here 3 in a row), RoundTrip
// refuses at once with ErrCircuitOpen, saying when one probe will test the
// service again. retry.Do waits that long before its next attempt. The
// test server here fails every call, as the gateway does while the
// service behind it is down.
func ExampleConfig_breaker() {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		serviceUnavailable(w, r)
	}))
	defer srv.Close()

	client := &http.Client{Transport: transport.New(nil, transport.Config{
		Breaker: &breaker.Config{ConsecutiveFailures: 3, OpenFor: 30 * time.Second},
	})}

	for i := range 5 {
		req, err := newRequest(context.Background(), srv.URL, "LTAI5tEXAMPLE", "DescribeInstances")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp, err := client.Do(req)
		var open *breaker.OpenError
		switch {
		case errors.As(err, &open):
			fmt.Printf("call %d: not sent, %v; probe in %.0fs\n", i+1, errors.Is(err, transport.ErrCircuitOpen), open.Wait.Seconds())
		case err != nil:
			fmt.Println(transport.RedactError(err))
		default:
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Printf("call %d: %s\n", i+1, resp.Status)
		}
	}
	fmt.Println("server saw", calls.Load())
	// Output:
	// call 1: 503 Service Unavailable
	// call 2: 503 Service Unavailable
	// call 3: 503 Service Unavailable
	// call 4: not sent, true; probe in 30s
	// call 5: not sent, true; probe in 30s
	// server saw 3
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

// describeInstances answers an ECS DescribeInstances call as Alibaba
// Cloud's API gateway does when the call succeeds: 200 with a JSON page of
// instances (here none).
func describeInstances(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	io.WriteString(w, `{"RequestId":"8E1A2C","TotalCount":0,"PageNumber":1,"PageSize":10,"Instances":{"Instance":[]}}`)
}

// serviceUnavailable answers a call as Alibaba Cloud's API gateway does
// while the service behind it fails: 503 with code ServiceUnavailable.
func serviceUnavailable(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"RequestId":"8E1A2C","HostId":"ecs.aliyuncs.com","Code":"ServiceUnavailable","Message":"The request has failed due to a temporary failure of the server."}`)
}

// Two classes share one tenant: a nightly batch's requests queued first,
// then a person's at a console page, which go ahead of them. The rule
// paces the tenant at 4 requests a second, so each waits its turn; the
// tenant's Snapshot says how many wait in its line.
func ExampleWithPriority() {
	srv := httptest.NewServer(http.HandlerFunc(describeInstances))
	defer srv.Close()
	var rules quota.Rules
	rules.Set(quota.Key{}, quota.Every(4, time.Second))
	tr := transport.New(nil, transport.Config{Rules: &rules})
	client := &http.Client{Transport: tr}
	waitingFor := func(n int64) { // until n requests wait in the tenant's line (10 s at most)
		for range 10_000 {
			var waiting int64
			tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool {
				waiting = l.Snapshot().Waiting
				return false
			})
			if waiting >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}

	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	call := func(p transport.Priority) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(transport.WithPriority(context.Background(), p), 10*time.Second)
			defer cancel()
			req, _ := newRequest(ctx, srv.URL, "LTAI5tEXAMPLE", "DescribeInstances")
			resp, err := client.Do(req)
			if err != nil {
				fmt.Println(transport.RedactError(err))
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			order = append(order, p.String())
			mu.Unlock()
		})
	}
	call(transport.Default) // takes the tenant's first turn
	wg.Wait()
	for range 3 {
		call(transport.Batch)
	}
	waitingFor(3)
	for range 2 {
		call(transport.Interactive)
	}
	waitingFor(5)
	wg.Wait()
	fmt.Println(strings.Join(order, "\n"))
	tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool { // what the tenant's Snapshot says of its classes
		sn := l.Snapshot()
		fmt.Printf("admitted from the line: %d interactive, %d batch\n", sn.Class(transport.Interactive).Admitted, sn.Class(transport.Batch).Admitted)
		return false
	})
	// Output:
	// default
	// interactive
	// interactive
	// batch
	// batch
	// batch
	// admitted from the line: 2 interactive, 3 batch
}
