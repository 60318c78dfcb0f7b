package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

func TestCheckRetrySeesAlibaba400Throttle(t *testing.T) {
	needParser(t)
	p := &Policy{NoBudget: true}
	resp := newResponse(http.MethodPost, 400, nil, throttleBody)
	ok, err := p.CheckRetry(context.Background(), resp, nil)
	if !ok || err != nil {
		t.Errorf("CheckRetry(400 Throttling.User) = %v, %v; want true, nil", ok, err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != throttleBody {
		t.Errorf("body after CheckRetry = %q, want it intact", b)
	}
	// retryablehttp's own policy does not retry it.
	if ok, _ := retryablehttp.DefaultRetryPolicy(context.Background(), newResponse(http.MethodPost, 400, nil, throttleBody), nil); ok {
		t.Log("retryablehttp.DefaultRetryPolicy now retries 400 throttles")
	}
}

func TestCheckRetry(t *testing.T) {
	p := &Policy{NoBudget: true}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	resetPost := &url.Error{Op: "Post", URL: "u", Err: io.ErrUnexpectedEOF}
	tests := []struct {
		name    string
		ctx     context.Context
		p       *Policy
		resp    *http.Response
		err     error
		want    bool
		wantErr error
	}{
		{"200", context.Background(), p, newResponse("GET", 200, nil, "{}"), nil, false, nil},
		{"429", context.Background(), p, newResponse("GET", 429, nil, ""), nil, true, nil},
		{"503", context.Background(), p, newResponse("POST", 503, nil, ""), nil, true, nil},
		{"400 permanent", context.Background(), p, newResponse("POST", 400, nil, `{"Code":"InvalidParameter"}`), nil, false, nil},
		{"cancelled", cancelled, p, newResponse("GET", 429, nil, ""), nil, false, context.Canceled},
		{"network POST", context.Background(), p, nil, resetPost, false, nil},
		{"network GET", context.Background(), p, nil, &url.Error{Op: "Get", URL: "u", Err: io.ErrUnexpectedEOF}, true, nil},
		{"budget", context.Background(), &Policy{Budget: NewBudget(BudgetConfig{Ratio: -1, MinPerSecond: -1})}, newResponse("GET", 429, nil, ""), nil, false, ErrBudgetExhausted},
		{"hint past deadline", shortCtx(t, 30*time.Second), p, newResponse("GET", 429, http.Header{"Retry-After": {"45"}}, ""), nil, false, context.DeadlineExceeded},
		{"hint before deadline", shortCtx(t, 30*time.Second), p, newResponse("GET", 429, http.Header{"Retry-After": {"15"}}, ""), nil, true, nil},
		{"capped hint before deadline", shortCtx(t, 90*time.Second), p, newResponse("GET", 429, http.Header{"Retry-After": {"3600"}}, ""), nil, true, nil},
	}
	needParser(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.CheckRetry(tt.ctx, tt.resp, tt.err)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("CheckRetry = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func shortCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestBackoffCapsRetryAfter(t *testing.T) {
	needParser(t)
	resp := newResponse(http.MethodGet, 429, http.Header{"Retry-After": {"3600"}}, "")
	if got := retryablehttp.DefaultBackoff(time.Second, 30*time.Second, 0, resp); got != time.Hour {
		t.Logf("retryablehttp.DefaultBackoff(Retry-After: 3600) = %v; it used to be 1h", got)
	}
	p := &Policy{Rand: constRand(0.5)}
	if got := p.Backoff(time.Second, 30*time.Second, 0, resp); got != time.Minute {
		t.Errorf("Backoff(Retry-After: 3600) = %v, want 1m (capped)", got)
	}
	small := newResponse(http.MethodGet, 429, http.Header{"Retry-After": {"2"}}, "")
	if got := p.Backoff(0, 0, 0, small); got != 2*time.Second {
		t.Errorf("Backoff(Retry-After: 2) = %v, want 2s (hint over 500ms backoff)", got)
	}
}

func TestBackoffWithoutHint(t *testing.T) {
	p := &Policy{Rand: constRand(0.5)}
	tests := []struct {
		resp *http.Response
		n    int
		want time.Duration
	}{
		{nil, 0, 50 * time.Millisecond}, // network error: transient backoff
		{newResponse("GET", 503, nil, ""), 1, 100 * time.Millisecond},
		{newResponse("POST", 400, nil, ""), 0, 500 * time.Millisecond}, // a retried 400 is a throttle
		{newResponse("GET", 429, nil, ""), 2, 2 * time.Second},
	}
	for _, tt := range tests {
		if got := p.Backoff(time.Second, 30*time.Second, tt.n, tt.resp); got != tt.want {
			t.Errorf("Backoff(attempt %d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestRetryablehttpAgainstFakecloud drives a retryablehttp client with the
// adapters against fakecloud in Retry-After mode. The quota is 1 per hour
// until a phase lifts it at +30 s, so every throttle says "Retry-After:
// 3600". Every call must complete within one capped hint (1 min), where
// retryablehttp's own Backoff sleeps the hour.
func TestRetryablehttpAgainstFakecloud(t *testing.T) {
	needParser(t)
	newCloud := func(status int) *fakecloud.Cloud {
		return fakecloud.New(fakecloud.Config{
			ThrottleStatus: status,
			Quotas:         []fakecloud.Quota{{API: "DescribeRegions", Limit: 1, Window: time.Hour}},
			Phases:         []fakecloud.Phase{{At: 30 * time.Second, Quotas: []fakecloud.Quota{{API: "DescribeRegions", Limit: fakecloud.Unlimited}}}},
			Headers:        fakecloud.HeadersRetryAfter,
		})
	}
	// An unsigned request: no SignatureNonce, so a resend is accepted.
	const target = "https://ecs.aliyuncs.com/?Action=DescribeRegions&AccessKeyId=AK1&RegionId=cn-hangzhou&Format=JSON"
	newClient := func(cloud *fakecloud.Cloud, p *Policy) *retryablehttp.Client {
		c := retryablehttp.NewClient()
		c.HTTPClient = cloud.Client()
		c.Logger = nil
		c.RetryMax = 4
		c.CheckRetry = p.CheckRetry
		c.Backoff = p.Backoff
		return c
	}

	for _, status := range []int{400, 429} {
		t.Run(fmt.Sprintf("adapters, throttle status %d", status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := newCloud(status)
				p := &Policy{Budget: NewBudget(BudgetConfig{})}
				client := newClient(cloud, p)
				const calls = 8
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					longest time.Duration
					failed  []string
				)
				for range calls {
					wg.Go(func() {
						start := time.Now()
						req, _ := retryablehttp.NewRequestWithContext(t.Context(), http.MethodPost, target, nil)
						resp, err := client.Do(req)
						d := time.Since(start)
						mu.Lock()
						defer mu.Unlock()
						longest = max(longest, d)
						if err != nil {
							failed = append(failed, err.Error())
							return
						}
						defer resp.Body.Close()
						if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
							failed = append(failed, resp.Status+" "+string(b))
						}
					})
				}
				wg.Wait()
				if len(failed) > 0 {
					t.Errorf("%d of %d calls failed: %s", len(failed), calls, strings.Join(failed, "; "))
				}
				if longest > time.Minute {
					t.Errorf("longest call took %v, want at most 1m (the capped hint)", longest)
				}
				if longest < 30*time.Second {
					t.Errorf("longest call took %v; the throttled calls should have waited for the quota", longest)
				}
			})
		})
	}

	t.Run("retryablehttp DefaultBackoff sleeps the hour", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cloud := newCloud(http.StatusTooManyRequests) // DefaultBackoff reads Retry-After on 429 and 503 only
			client := newClient(cloud, &Policy{NoBudget: true})
			client.Backoff = retryablehttp.DefaultBackoff
			for i := range 2 {
				start := time.Now()
				resp, err := client.Post(target, "", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if d := time.Since(start); i == 1 && d < time.Hour {
					t.Errorf("second call took %v; expected retryablehttp to sleep the uncapped hour", d)
				}
			}
		})
	})
}
