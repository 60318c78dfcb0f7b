package v1sdk

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/sdkload"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// callDescribe makes one DescribeInstances call on client through Call.
func callDescribe(ctx context.Context, client *ecs.Client, p *retry.Policy) error {
	_, err := Call(ctx, &client.Client, p, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
		return describe(client)
	})
	return err
}

// TestCallDeadline checks that the caller's deadline bounds a v1 call,
// which the SDK's own read timeout (30 s here) does not: with a quota of
// 1 per 5 s that the gateway tells, the second call, given 500 ms, is
// refused at once, unsent, with an error matching
// context.DeadlineExceeded. A call whose answer is slower than its
// deadline ends at the deadline too.
func TestCallDeadline(t *testing.T) {
	for _, tt := range []struct {
		name   string
		faults fakecloud.Faults
		sends  int64 // requests the gateway sees in the call with a deadline
	}{
		{"waiting for quota", fakecloud.Faults{}, 0},
		{"in flight", fakecloud.Faults{LatencyRate: 1, Latency: 2 * time.Second}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Limit: 1, Window: 5 * time.Second}},
					Headers: fakecloud.HeadersAlibaba, HeadersOnEveryAnswer: true,
				})
				client, _ := newECS(t, cloud, transport.Config{})
				if tt.sends == 0 {
					if err := callDescribe(t.Context(), client, nil); err != nil {
						t.Fatalf("first call: %v", err)
					}
				}
				cloud.SetFaults(tt.faults)
				before := cloud.Stats().Total.Requests
				ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := callDescribe(ctx, client, nil)
				took := time.Since(start)
				if took > 600*time.Millisecond {
					t.Errorf("the call took %v, want ≤ 600 ms: its deadline was 500 ms", took)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want one matching context.DeadlineExceeded", err)
				}
				time.Sleep(10 * time.Second) // anything sent late would arrive by now
				if sent := cloud.Stats().Total.Requests - before; sent != tt.sends {
					t.Errorf("the gateway saw %d requests of the call, want %d", sent, tt.sends)
				}
			})
		})
	}
}

// TestCallCancel checks that cancelling the caller's context ends a v1
// call's wait for quota at once, however long the pause it waits out.
func TestCallCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Limit: 1, Window: 5 * time.Second}},
			Headers: fakecloud.HeadersAlibaba, HeadersOnEveryAnswer: true,
		})
		client, _ := newECS(t, cloud, transport.Config{})
		if err := callDescribe(t.Context(), client, nil); err != nil {
			t.Fatalf("first call: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		err := callDescribe(ctx, client, nil)
		if took := time.Since(start); took > 300*time.Millisecond {
			t.Errorf("the call took %v after a cancel at 200 ms, want ≤ 300 ms", took)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want one matching context.Canceled", err)
		}
	})
}

// probeCtx is the key of a value the caller sets on its context.
type probeCtx struct{}

// recorder is the SDK client's own transport, which the tollgate
// Transport sends through: it records the context each request came with.
type recorder struct {
	next     http.RoundTripper
	value    atomic.Value // probeCtx's value
	deadline atomic.Value // time.Time
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if v, ok := req.Context().Value(probeCtx{}).(string); ok {
		r.value.Store(v)
	}
	if d, ok := req.Context().Deadline(); ok {
		r.deadline.Store(d)
	}
	return r.next.RoundTrip(req)
}

// TestCallCarriesContext checks that what the caller sets on its context
// reaches the Transport on the v1 path: a tenant key (quota.WithKey) names
// the limiter, a value of the caller's own reaches the RoundTripper below,
// and so does the caller's deadline, earlier than the SDK's read timeout.
func TestCallCarriesContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{})
		rec := &recorder{next: cloud.RoundTripper()}
		conf := sdk.NewConfig()
		conf.Transport = rec
		client, err := ecs.NewClientWithOptions("cn-hangzhou", conf, credentials.NewAccessKeyCredential(sdkload.AKID, sdkload.Secret))
		if err != nil {
			t.Fatal(err)
		}
		client.SetReadTimeout(30 * time.Second)
		tr, err := Wrap(&client.Client, transport.Config{})
		if err != nil {
			t.Fatal(err)
		}
		key := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "team-a", API: "DescribeInstances"}
		ctx := context.WithValue(quota.WithKey(t.Context(), key), probeCtx{}, "from the caller")
		ctx, cancel := context.WithTimeout(ctx, 7*time.Second)
		defer cancel()
		deadline, _ := ctx.Deadline()
		if err := callDescribe(ctx, client, nil); err != nil {
			t.Fatal(err)
		}
		if v, _ := rec.value.Load().(string); v != "from the caller" {
			t.Errorf("the RoundTripper below saw value %q, want the caller's", v)
		}
		if d, _ := rec.deadline.Load().(time.Time); !d.Equal(deadline) {
			t.Errorf("the RoundTripper below saw deadline %v, want the caller's %v", d, deadline)
		}
		var keys []string
		tr.Range(func(k quota.Key, _ *adaptive.Limiter) bool {
			keys = append(keys, k.String())
			return true
		})
		if len(keys) != 1 || keys[0] != key.String() {
			t.Errorf("tenants %v, want only the context's key %s", keys, key)
		}
	})
}

// alternating answers as the gateway does when two accounts spend their
// quotas: account A's requests are all throttled, account B's every other
// one.
type alternating struct{ b atomic.Int64 }

func (a *alternating) RoundTrip(req *http.Request) (*http.Response, error) {
	throttled := true
	if strings.Contains(req.URL.RawQuery, "AccessKeyId=LTAI5tACCOUNTB") {
		throttled = a.b.Add(1)%2 == 1
	}
	status, body := http.StatusOK, `{"RequestId":"R","TotalCount":0}`
	if throttled {
		status, body = http.StatusBadRequest, `{"RequestId":"R","Code":"Throttling.User","Message":"Request was denied due to user flow control."}`
	}
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

// TestCallBudgetPerTenant checks that a throttled v1 call spends its own
// tenant's retry budget: a storm on account A, which exhausts A's budget,
// leaves account B's whole, so that B's throttled call is retried. With
// one budget for every call, B's retry would be refused.
func TestCallBudgetPerTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &alternating{}
		newClient := func(akid string) *ecs.Client {
			conf := sdk.NewConfig()
			conf.Transport = gw
			c, err := ecs.NewClientWithOptions("cn-hangzhou", conf, credentials.NewAccessKeyCredential(akid, sdkload.Secret))
			if err != nil {
				t.Fatal(err)
			}
			c.SetReadTimeout(5 * time.Minute)
			return c
		}
		a, b := newClient("LTAI5tACCOUNTA"), newClient("LTAI5tACCOUNTB")
		tr, err := Wrap(&a.Client, transport.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := Share(&b.Client, tr); err != nil {
			t.Fatal(err)
		}
		// Two retries per tenant in any 10 s, and no more.
		p := &retry.Policy{Budget: retry.NewBudget(retry.BudgetConfig{Ratio: -1, MinPerSecond: 0.3, Window: 10 * time.Second})}
		exhausted := false
		for range 5 {
			err := callDescribe(t.Context(), a, p)
			if err == nil {
				t.Fatal("account A's call succeeded: the storm is no storm")
			}
			if errors.Is(err, retry.ErrBudgetExhausted) {
				exhausted = true
				break
			}
		}
		if !exhausted {
			t.Fatal("account A's storm never exhausted its retry budget: this test checks nothing")
		}
		if err := callDescribe(t.Context(), b, p); err != nil {
			t.Errorf("account B's call after A's storm: %v, want it retried on B's own budget", err)
		}
	})
}

// TestCallKeepsReadTimeout checks that the SDK's own read timeout still
// bounds a call whose context allows longer: Call joins the two.
func TestCallKeepsReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{Faults: fakecloud.Faults{LatencyRate: 1, Latency: 5 * time.Second}})
		client, _ := newECS(t, cloud, transport.Config{})
		client.SetReadTimeout(time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		err := callDescribe(ctx, client, &retry.Policy{MaxAttempts: 1})
		if took := time.Since(start); took > 1100*time.Millisecond {
			t.Errorf("the call took %v, want ≤ 1.1 s: the SDK's read timeout is 1 s", took)
		}
		if err == nil {
			t.Error("a call slower than the read timeout succeeded")
		}
	})
}

// TestCallOnBusyClient checks that a Call on a client that is in another
// Call (one client shared by goroutines, which the SDK does not allow)
// fails at once, sends nothing, and says what to do; and that Call on a
// client Wrap never saw says so.
func TestCallOnBusyClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{})
		client, _ := newECS(t, cloud, transport.Config{})
		ct, err := routed(&client.Client)
		if err != nil {
			t.Fatal(err)
		}
		release, err := ct.bind(t.Context()) // as the other goroutine's Call does
		if err != nil {
			t.Fatal(err)
		}
		err = callDescribe(t.Context(), client, nil)
		if !errors.Is(err, errBusy) || !errors.Is(err, retry.ErrPermanent) {
			t.Errorf("Call on a busy client: %v, want errBusy, not retried", err)
		}
		release()
		if n := cloud.Stats().Total.Requests; n != 0 {
			t.Errorf("the gateway saw %d requests, want none", n)
		}
		if err := callDescribe(t.Context(), client, nil); err != nil {
			t.Errorf("Call once the other ended: %v", err)
		}
		if err := callDescribe(t.Context(), newECSClient(t, cloud), nil); err == nil || !strings.Contains(err.Error(), "Wrap or Share") {
			t.Errorf("Call on a client never wrapped: %v, want an error that says to Wrap or Share it", err)
		}
	})
}

// TestCallCarriesPriority: the class set on the context given to Call
// reaches the Transport, whose line orders by it: on the request it hands
// on, and in the order of two calls queued behind a paced tenant.
func TestCallCarriesPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Limit: 1, Window: time.Second}},
			Headers: fakecloud.HeadersAlibaba, HeadersOnEveryAnswer: true,
		})
		var seen []transport.Priority
		var mu sync.Mutex
		client := newECSClient(t, cloud)
		// Below the Transport that Wrap puts in: what it hands on.
		client.GetConfig().Transport = priorityRecorder(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = append(seen, adaptive.PriorityFrom(req.Context()))
			mu.Unlock()
			return cloud.RoundTripper().RoundTrip(req)
		})
		tr, err := Wrap(&client.Client, transport.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := callDescribe(t.Context(), client, nil); err != nil { // the headers say 1/s
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, p := range []transport.Priority{transport.Batch, transport.Interactive} {
			c := newECSClient(t, cloud) // one client per goroutine
			if err := Share(&c.Client, tr); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if err := callDescribe(transport.WithPriority(t.Context(), p), c, nil); err != nil {
					t.Error(err)
				}
			})
			synctest.Wait() // in line before the next
		}
		wg.Wait()
		want := []transport.Priority{transport.Default, transport.Interactive, transport.Batch}
		if !slices.Equal(seen, want) {
			t.Fatalf("classes handed on, in order: %v, want %v", seen, want)
		}
	})
}

// priorityRecorder is an http.RoundTripper in a function.
type priorityRecorder func(*http.Request) (*http.Response, error)

func (f priorityRecorder) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
