package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// TestMetricsMatchFakecloud runs traffic from two accounts through a
// Transport against the fake gateway and checks that the request counters
// equal the fake's own: admitted = allowed + waited, throttled = throttled.
func TestMetricsMatchFakecloud(t *testing.T) {
	tests := []struct {
		name    string
		headers fakecloud.HeaderMode
		source  string // the limit source expected at the end
	}{
		{"no headers", fakecloud.HeadersNone, "learned"},
		{"x-ratelimit", fakecloud.HeadersXRateLimit, "headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit = 20
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:               []fakecloud.Quota{{API: "DescribeInstances", Limit: limit, Window: time.Second}},
					Headers:              tt.headers,
					HeadersOnEveryAnswer: true,
				})
				c := New(Config{})
				tr := transport.New(cloud.RoundTripper(), transport.Config{Observer: c})
				akids := []string{"AKIDmetricsOne", "AKIDmetricsTwo"}
				if n := drive(t, tr, akids, "DescribeInstances", 8, 3*time.Second); n != 0 {
					t.Errorf("%d RoundTrips failed", n)
				}

				requests := series(t, c, "tollgate_requests_total")
				waits := series(t, c, "tollgate_wait_seconds")
				sources := series(t, c, "tollgate_limit_source")
				limits := series(t, c, "tollgate_quota_limit")
				remaining := series(t, c, "tollgate_quota_remaining")
				stats := cloud.Stats()
				var throttled, waited float64
				for _, akid := range akids {
					tenant := tenantOf(t, tr, akid, "DescribeInstances")
					if strings.Contains(tenant, akid) {
						t.Errorf("tenant label %q holds the AccessKeyId", tenant)
					}
					get := func(result string) float64 { return requests["priority=default,result="+result+",tenant="+tenant] }
					fake := stats.Tenants[akid]["DescribeInstances"]
					t.Logf("%s: allowed %v waited %v throttled %v failed %v refused %v open %v; fake: %+v",
						tenant, get("allowed"), get("waited"), get("throttled"), get("failed"), get("refused"), get("open"), fake)
					if got, want := get("allowed")+get("waited"), float64(fake.Admitted); got != want {
						t.Errorf("%s: allowed+waited = %v, fake admitted %v", tenant, got, want)
					}
					if got, want := get("throttled"), float64(fake.Throttled); got != want {
						t.Errorf("%s: throttled = %v, fake throttled %v", tenant, got, want)
					}
					if got, want := get("allowed")+get("waited")+get("throttled"), float64(fake.Requests); got != want {
						t.Errorf("%s: requests sent = %v, fake received %v", tenant, got, want)
					}
					if n := get("failed") + get("refused") + get("open"); n != 0 {
						t.Errorf("%s: %v failed, refused or open, want 0", tenant, n)
					}
					total := get("allowed") + get("waited") + get("throttled")
					if got := waits["priority=default,tenant="+tenant]; got != total {
						t.Errorf("%s: wait histogram count = %v, want one per request (%v)", tenant, got, total)
					}
					if got := sources["source="+tt.source+",tenant="+tenant]; got != 1 {
						t.Errorf("%s: limit_source{source=%q} = %v, want 1 (all: %v)", tenant, tt.source, got, sources)
					}
					if tt.headers != fakecloud.HeadersNone {
						if got := limits["tenant="+tenant]; got != limit {
							t.Errorf("%s: quota_limit = %v, want %d", tenant, got, limit)
						}
						if _, ok := remaining["tenant="+tenant]; !ok {
							t.Errorf("%s: no quota_remaining series", tenant)
						}
					}
					throttled += get("throttled")
					waited += get("waited")
				}
				if waited == 0 {
					t.Error("no request waited: the test does not exercise the limiter")
				}
				if tt.headers == fakecloud.HeadersNone && throttled == 0 {
					t.Error("no request was throttled: the test does not exercise throttles")
				}
				// Two tenants, six results each.
				if n := testutil.CollectAndCount(c, "tollgate_requests_total"); n != 2*6 {
					t.Errorf("CollectAndCount(requests_total) = %d, want 12", n)
				}
				// No breaker: no breaker series.
				for _, name := range []string{"tollgate_breaker_transitions_total", "tollgate_breaker_state"} {
					if n := testutil.CollectAndCount(c, name); n != 0 {
						t.Errorf("CollectAndCount(%s) = %d with no breaker, want 0", name, n)
					}
				}
			})
		})
	}
}

// TestMetricsTenantFolding checks that tenants past MaxTenants share the
// label "other", which has counters but no gauges.
func TestMetricsTenantFolding(t *testing.T) {
	// In a bubble, so that an immediate admission takes no time at all
	// and counts as allowed rather than waited.
	synctest.Test(t, testMetricsTenantFolding)
}

func testMetricsTenantFolding(t *testing.T) {
	c := New(Config{MaxTenants: 2})
	tr := transport.New(canned{}, transport.Config{Observer: c})
	keys := []string{"acs:ecs:cn-hangzhou:111", "acs:ecs:cn-hangzhou:222", "acs:ecs:cn-hangzhou:333", "acs:ecs:cn-hangzhou:444"}
	for i, ks := range keys {
		k, err := quota.ParseKey(ks)
		if err != nil {
			t.Fatal(err)
		}
		// Limits event for every tenant: sets the gauges.
		c.Limits(transport.LimitsEvent{Key: k})
		for range i + 1 {
			req, _ := http.NewRequestWithContext(quota.WithKey(t.Context(), k), http.MethodGet, endpoint, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	var want strings.Builder
	want.WriteString("# HELP tollgate_requests_total RoundTrips by tenant and result: allowed (sent at once), waited (sent after waiting for quota), throttled (the server answered with a throttle), failed (no answer), refused (not sent: the wait would pass the deadline), open (not sent: the tenant's circuit breaker is open); and by the request's priority class in the tenant's line (interactive, default, batch).\n")
	want.WriteString("# TYPE tollgate_requests_total counter\n")
	for _, tc := range []struct {
		tenant string
		n      int
	}{{keys[0], 1}, {keys[1], 2}, {"other", 3 + 4}} {
		for _, r := range []string{"allowed", "failed", "open", "refused", "throttled", "waited"} {
			n := 0
			if r == "allowed" {
				n = tc.n
			}
			fmt.Fprintf(&want, "tollgate_requests_total{priority=\"default\",result=%q,tenant=%q} %d\n", r, tc.tenant, n)
		}
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want.String()), "tollgate_requests_total"); err != nil {
		t.Error(err)
	}
	sources := series(t, c, "tollgate_limit_source")
	if len(sources) != 2*4 {
		t.Errorf("limit_source has %d series, want 8 (two tenants, four sources): %v", len(sources), sources)
	}
	for ls := range sources {
		if strings.Contains(ls, "tenant=other") {
			t.Errorf("gauge series for the other tenant: %s", ls)
		}
	}
	changes := series(t, c, "tollgate_limit_changes_total")
	if got := changes["tenant=other"]; got != 2 {
		t.Errorf("limit_changes_total{tenant=other} = %v, want 2", got)
	}
}

// TestMetricsFoldAll checks that a negative MaxTenants puts every tenant in
// "other".
func TestMetricsFoldAll(t *testing.T) {
	c := New(Config{MaxTenants: -1})
	c.Request(transport.RequestEvent{Key: quota.Key{Product: "ecs"}, Result: transport.ResultWaited, Wait: time.Second})
	got := series(t, c, "tollgate_requests_total")
	if got["priority=default,result=waited,tenant=other"] != 1 || len(got) != 6 {
		t.Errorf("requests_total = %v, want waited 1 for tenant other only", got)
	}
}

// TestMetricsWaitHistogram checks the buckets and the sum of the wait
// histogram.
func TestMetricsWaitHistogram(t *testing.T) {
	c := New(Config{Buckets: []float64{1, 0.1, 1}})
	k := quota.Key{Product: "ecs"}
	for _, d := range []time.Duration{0, 0, 50 * time.Millisecond, 500 * time.Millisecond, 3 * time.Second} {
		c.Request(transport.RequestEvent{Key: k, Result: transport.ResultWaited, Wait: d})
	}
	const want = `# HELP tollgate_wait_seconds Time each RoundTrip waited for the tenant's quota, by the request's priority class (interactive, default, batch).
# TYPE tollgate_wait_seconds histogram
tollgate_wait_seconds_bucket{priority="default",tenant="acs:ecs",le="0.1"} 3
tollgate_wait_seconds_bucket{priority="default",tenant="acs:ecs",le="1"} 4
tollgate_wait_seconds_bucket{priority="default",tenant="acs:ecs",le="+Inf"} 5
tollgate_wait_seconds_sum{priority="default",tenant="acs:ecs"} 3.55
tollgate_wait_seconds_count{priority="default",tenant="acs:ecs"} 5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "tollgate_wait_seconds"); err != nil {
		t.Error(err)
	}
}

// TestMetricsPriority checks that requests and waits count by the
// request's priority class, and that a class's series appear only once a
// request of it came (Default's at once): a tenant that uses no classes
// has the series it had before them.
func TestMetricsPriority(t *testing.T) {
	c := New(Config{})
	k := quota.Key{Product: "ecs"}
	c.Request(transport.RequestEvent{Key: k, Result: transport.ResultAllowed})
	if got := series(t, c, "tollgate_wait_seconds"); len(got) != 1 || got["priority=default,tenant=acs:ecs"] != 1 {
		t.Fatalf("wait_seconds = %v, want the default class's only", got)
	}
	c.Request(transport.RequestEvent{Key: k, Priority: adaptive.Batch, Result: transport.ResultWaited, Wait: time.Second})
	c.Request(transport.RequestEvent{Key: k, Priority: adaptive.Batch, Result: transport.ResultWaited, Wait: time.Second})
	c.Request(transport.RequestEvent{Key: k, Priority: adaptive.Interactive, Result: transport.ResultThrottled})
	requests := series(t, c, "tollgate_requests_total")
	if n := len(requests); n != 3*6 {
		t.Errorf("requests_total has %d series, want 18 (three classes, six results)", n)
	}
	for ls, want := range map[string]float64{
		"priority=default,result=allowed,tenant=acs:ecs":       1,
		"priority=batch,result=waited,tenant=acs:ecs":          2,
		"priority=interactive,result=throttled,tenant=acs:ecs": 1,
		"priority=batch,result=allowed,tenant=acs:ecs":         0,
	} {
		if got := requests[ls]; got != want {
			t.Errorf("requests_total{%s} = %v, want %v", ls, got, want)
		}
	}
	waits := series(t, c, "tollgate_wait_seconds")
	if waits["priority=batch,tenant=acs:ecs"] != 2 || waits["priority=interactive,tenant=acs:ecs"] != 1 {
		t.Errorf("wait_seconds = %v, want 2 batch and 1 interactive", waits)
	}
}

// TestMetricsNamespace checks Namespace and ConstLabels.
func TestMetricsNamespace(t *testing.T) {
	c := New(Config{Namespace: "acme", ConstLabels: map[string]string{"client": "billing"}})
	c.Request(transport.RequestEvent{Key: quota.Key{Product: "ecs"}, Result: transport.ResultThrottled})
	got := series(t, c, "acme_requests_total")
	if got["client=billing,priority=default,result=throttled,tenant=acs:ecs"] != 1 {
		t.Errorf("acme_requests_total = %v", got)
	}
}

// sdkError is an error with an API error code, as the Alibaba SDK's.
type sdkError struct{ code, msg string }

func (e *sdkError) Error() string {
	return "SDK.ServerError: ErrorCode: " + e.code + ", Message: " + e.msg
}
func (e *sdkError) ErrorCode() string { return e.code }

// TestMetricsRetry runs retry.Do with the Collector as the Policy's
// Observer and checks the retry and give-up counters.
func TestMetricsRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{})
		p := &retry.Policy{Observer: c, NoBudget: true, MaxAttempts: 3, Rand: func() float64 { return 0 }}
		k := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "123"}
		ctx := quota.WithKey(t.Context(), k)
		throttle := &sdkError{code: "Throttling.User"}
		unavailable := &sdkError{code: "ServiceUnavailable"}
		invalid := &sdkError{code: "InvalidParameter"}

		fails := func(errs ...error) func(context.Context) error {
			n := 0
			return func(context.Context) error {
				n++
				if n <= len(errs) {
					return errs[n-1]
				}
				return nil
			}
		}
		if err := retry.Do(ctx, p, fails(throttle, throttle)); err != nil {
			t.Fatalf("Do: %v", err)
		}
		if err := retry.Do(ctx, p, fails(unavailable, unavailable, unavailable)); !errors.Is(err, retry.ErrAttemptsExhausted) {
			t.Fatalf("Do = %v, want attempts exhausted", err)
		}
		if err := retry.Do(ctx, p, fails(invalid)); !errors.Is(err, retry.ErrPermanent) {
			t.Fatalf("Do = %v, want permanent", err)
		}
		if err := retry.Do(context.Background(), p, fails(invalid)); !errors.Is(err, retry.ErrPermanent) {
			t.Fatalf("Do = %v, want permanent", err)
		}
		// The Transport's refusals: retried where the context has time
		// for the wait, given up on where it has not.
		refusal := &adaptive.WaitError{Wait: 5 * time.Second, Left: time.Second, Reason: "rate"}
		if err := retry.Do(ctx, p, fails(refusal)); err != nil {
			t.Fatalf("Do = %v, want success after the refusal's wait", err)
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := retry.Do(short, p, fails(refusal)); !errors.Is(err, retry.ErrRefused) {
			t.Fatalf("Do = %v, want refused", err)
		}

		const want = `# HELP tollgate_retries_total Retries made by retry.Do, by the failed attempt's class.
# TYPE tollgate_retries_total counter
tollgate_retries_total{class="throttle",tenant="acs"} 0
tollgate_retries_total{class="throttle",tenant="acs:ecs:cn-hangzhou:123"} 2
tollgate_retries_total{class="transient",tenant="acs"} 0
tollgate_retries_total{class="transient",tenant="acs:ecs:cn-hangzhou:123"} 2
tollgate_retries_total{class="refused",tenant="acs"} 0
tollgate_retries_total{class="refused",tenant="acs:ecs:cn-hangzhou:123"} 1
`
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "tollgate_retries_total"); err != nil {
			t.Error(err)
		}
		giveups := series(t, c, "tollgate_giveups_total")
		for ls, want := range map[string]float64{
			"reason=attempts,tenant=acs:ecs:cn-hangzhou:123":  1,
			"reason=permanent,tenant=acs:ecs:cn-hangzhou:123": 1,
			"reason=budget,tenant=acs:ecs:cn-hangzhou:123":    0,
			"reason=refused,tenant=acs:ecs:cn-hangzhou:123":   1,
			"reason=permanent,tenant=acs":                     1,
		} {
			if got := giveups[ls]; got != want {
				t.Errorf("giveups_total{%s} = %v, want %v", ls, got, want)
			}
		}
	})
}

// TestMetricsResultsCover checks that the requests counter has a series for
// every transport.Result: a new Result fails it until numResults covers it.
func TestMetricsResultsCover(t *testing.T) {
	unknown := transport.Result(0).String()
	for r := transport.ResultAllowed; int(r) < numResults; r++ {
		if r.String() == unknown {
			t.Errorf("Result(%d) has no name, but numResults = %d covers it", r, numResults)
		}
	}
	if r := transport.Result(numResults); r.String() != unknown {
		t.Errorf("Result(%d) is %q, past numResults = %d: the requests counter has no series for it", r, r, numResults)
	}
}
