package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
)

// ServerError stands for an SDK's error type, such as Alibaba Cloud's
// *errors.ServerError: retry reads it through ErrorCode and HttpStatus.
type ServerError struct {
	Code   string
	Status int
}

func (e *ServerError) Error() string     { return fmt.Sprintf("SDK.ServerError %d %s", e.Status, e.Code) }
func (e *ServerError) ErrorCode() string { return e.Code }
func (e *ServerError) HttpStatus() int   { return e.Status }

// fakeECS stands for an SDK client whose DescribeInstances is throttled
// twice, as Alibaba Cloud throttles: HTTP 400, code Throttling.User.
type fakeECS struct{ calls int }

func (c *fakeECS) DescribeInstances(ctx context.Context, region string) ([]string, error) {
	c.calls++
	if c.calls <= 2 {
		return nil, &ServerError{Code: "Throttling.User", Status: 400}
	}
	return []string{"i-1", "i-2"}, nil
}

func ExampleDoValue() {
	policy := &retry.Policy{
		ThrottleBaseDelay: 10 * time.Millisecond,         // 1 s by default
		Rand:              func() float64 { return 0.5 }, // fixed jitter, for the example
		OnRetry: func(n int, err error, wait time.Duration) { // log each retry
			fmt.Printf("retry %d after %v, waiting %v\n", n, err, wait)
		},
	}
	ecs := &fakeECS{}
	ctx := quota.WithKey(context.Background(), quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "1234567890123456"})

	// Each attempt calls the SDK operation again, so it is signed afresh.
	ids, err := retry.DoValue(ctx, policy, func(ctx context.Context) ([]string, error) {
		return ecs.DescribeInstances(ctx, "cn-hangzhou")
	})
	fmt.Println(ids, err, "after", ecs.calls, "attempts")

	// A permanent error is not retried.
	err = retry.Do(ctx, policy, func(ctx context.Context) error {
		return &ServerError{Code: "InvalidParameter.RegionId", Status: 400}
	})
	var sdkErr *ServerError
	fmt.Println(errors.Is(err, retry.ErrPermanent), errors.As(err, &sdkErr), sdkErr.Code)
	// Output:
	// retry 1 after SDK.ServerError 400 Throttling.User, waiting 5ms
	// retry 2 after SDK.ServerError 400 Throttling.User, waiting 10ms
	// [i-1 i-2] <nil> after 3 attempts
	// true true InvalidParameter.RegionId
}

// The retryablehttp adapters suit plain HTTP APIs whose requests are not
// signed per attempt: retryablehttp resends the same request.
func ExamplePolicy_CheckRetry() {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"Code":"Throttling.User","Message":"Request was denied due to user flow control."}`)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	policy := &retry.Policy{ThrottleBaseDelay: time.Millisecond}
	client := retryablehttp.NewClient()
	client.Logger = nil
	client.CheckRetry = policy.CheckRetry // sees Alibaba's 400 throttles
	client.Backoff = policy.Backoff       // caps the server's Retry-After
	defer client.HTTPClient.CloseIdleConnections()

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "after", requests.Load(), "requests")
	// Output:
	// 200 ok after 2 requests
}
