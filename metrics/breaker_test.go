package metrics

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/transport"
)

// TestMetricsBreakerStatesCover checks that the breaker series have a
// series for every breaker.State, each at the index of its value: a new
// State fails it until the Collector counts it.
func TestMetricsBreakerStatesCover(t *testing.T) {
	for i, s := range breakerStates {
		if int(s) != i {
			t.Errorf("breakerStates[%d] = %v, want the State of value %d", i, s, i)
		}
	}
	unknown := breaker.State(255).String()
	if s := breaker.State(len(breakerStates)); s.String() != unknown {
		t.Errorf("State(%d) is %q: the breaker series have none for it", len(breakerStates), s)
	}
}

// TestMetricsBreaker feeds breaker changes and checks the breaker series
// after each: transitions by the state changed to, and a state gauge that
// is 1 for the last state only; none for a tenant whose breaker never
// changed, and no gauge for the tenants folded into "other".
func TestMetricsBreaker(t *testing.T) {
	c := New(Config{MaxTenants: 2})
	k1, k2, k3, k4 := quotaKey(1), quotaKey(2), quotaKey(3), quotaKey(4)
	t1 := k1.String()
	at := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

	// k2 has a tenant label, and requests, but no breaker.
	c.Request(transport.RequestEvent{Key: k2, Result: transport.ResultAllowed})

	states := func(closed, halfOpen, open float64) map[string]float64 {
		return map[string]float64{
			"state=closed,tenant=" + t1:    closed,
			"state=half-open,tenant=" + t1: halfOpen,
			"state=open,tenant=" + t1:      open,
		}
	}
	steps := []struct {
		from, to breaker.State
		want     map[string]float64 // breaker_state after the change
	}{
		{breaker.StateClosed, breaker.StateOpen, states(0, 0, 1)},
		{breaker.StateOpen, breaker.StateHalfOpen, states(0, 1, 0)},
		{breaker.StateHalfOpen, breaker.StateOpen, states(0, 0, 1)},
		{breaker.StateOpen, breaker.StateHalfOpen, states(0, 1, 0)},
		{breaker.StateHalfOpen, breaker.StateClosed, states(1, 0, 0)},
	}
	for i, s := range steps {
		ch := breaker.Change{From: s.from, To: s.to, At: at.Add(time.Duration(i) * time.Second)}
		if s.to == breaker.StateOpen {
			ch.Until = ch.At.Add(time.Second)
		}
		c.Breaker(transport.BreakerEvent{Key: k1, Change: ch})
		if got := series(t, c, "tollgate_breaker_state"); !maps.Equal(got, s.want) {
			t.Errorf("after %v → %v: breaker_state = %v, want %v", s.from, s.to, got, s.want)
		}
	}

	// Past MaxTenants: k3 and k4 share "other", whose counters count both.
	c.Request(transport.RequestEvent{Key: k3, Result: transport.ResultOpen, Err: &breaker.OpenError{Wait: time.Second}})
	c.Breaker(transport.BreakerEvent{Key: k3, Change: breaker.Change{From: breaker.StateClosed, To: breaker.StateOpen, At: at}})
	c.Breaker(transport.BreakerEvent{Key: k4, Change: breaker.Change{From: breaker.StateClosed, To: breaker.StateOpen, At: at}})
	// A State the Collector does not know is not counted.
	c.Breaker(transport.BreakerEvent{Key: k1, Change: breaker.Change{From: breaker.StateClosed, To: breaker.State(7), At: at}})

	var want strings.Builder
	want.WriteString("# HELP tollgate_breaker_state 1 for the state of the tenant's circuit breaker (closed, half-open, open) as of its last change, else 0; only once it has changed.\n")
	want.WriteString("# TYPE tollgate_breaker_state gauge\n")
	fmt.Fprintf(&want, "tollgate_breaker_state{state=\"closed\",tenant=%q} 1\n", t1)
	fmt.Fprintf(&want, "tollgate_breaker_state{state=\"half-open\",tenant=%q} 0\n", t1)
	fmt.Fprintf(&want, "tollgate_breaker_state{state=\"open\",tenant=%q} 0\n", t1)
	want.WriteString("# HELP tollgate_breaker_transitions_total Changes of the tenant's circuit breaker, by the state changed to: closed, half-open, open.\n")
	want.WriteString("# TYPE tollgate_breaker_transitions_total counter\n")
	fmt.Fprintf(&want, "tollgate_breaker_transitions_total{tenant=%q,to=\"closed\"} 1\n", t1)
	fmt.Fprintf(&want, "tollgate_breaker_transitions_total{tenant=%q,to=\"half-open\"} 2\n", t1)
	fmt.Fprintf(&want, "tollgate_breaker_transitions_total{tenant=%q,to=\"open\"} 2\n", t1)
	want.WriteString("tollgate_breaker_transitions_total{tenant=\"other\",to=\"closed\"} 0\n")
	want.WriteString("tollgate_breaker_transitions_total{tenant=\"other\",to=\"half-open\"} 0\n")
	want.WriteString("tollgate_breaker_transitions_total{tenant=\"other\",to=\"open\"} 2\n")
	if err := testutil.CollectAndCompare(c, strings.NewReader(want.String()), "tollgate_breaker_state", "tollgate_breaker_transitions_total"); err != nil {
		t.Error(err)
	}
	if got := series(t, c, "tollgate_requests_total")["priority=default,result=open,tenant=other"]; got != 1 {
		t.Errorf("requests_total{result=open,tenant=other} = %v, want 1", got)
	}
}

// TestMetricsBreakerEndToEnd runs a Transport with a circuit breaker and
// the Collector as its Observer against the fake gateway: a service that
// answers every request with 503 ServiceUnavailable opens the breaker, the
// requests it refuses count as result "open", and once the service is back
// and OpenFor has passed (in fake time), a probe closes it.
func TestMetricsBreakerEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			inRow   = 3
			openFor = time.Second
			refused = 2
		)
		cloud := fakecloud.New(fakecloud.Config{Faults: fakecloud.Faults{UnavailableRate: 1}})
		c := New(Config{})
		tr := transport.New(cloud.RoundTripper(), transport.Config{
			Observer: c,
			Breaker:  &breaker.Config{ConsecutiveFailures: inRow, OpenFor: openFor},
		})
		const akid = "AKIDbreakerOne"
		tenant := tenantOf(t, tr, akid, "DescribeInstances")
		send := func() (int, error) {
			t.Helper()
			req, err := fakecloud.NewRequest(t.Context(), endpoint, akid, "DescribeInstances")
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return 0, err
			}
			// The Transport learns the error code, and so the outcome,
			// as the body is read.
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, nil
		}
		check := func(when, name string, want map[string]float64) {
			t.Helper()
			got := series(t, c, name)
			for ls, v := range want {
				if got[ls] != v {
					t.Errorf("%s: %s{%s} = %v, want %v (all: %v)", when, name, ls, got[ls], v, got)
				}
			}
		}
		label := func(name, value string) string { return name + "=" + value + ",tenant=" + tenant }
		to := func(s string) string { return "tenant=" + tenant + ",to=" + s }

		// Before any failure: the breaker is closed and has not changed.
		if n := testutil.CollectAndCount(c, "tollgate_breaker_state"); n != 0 {
			t.Errorf("breaker_state has %d series before the breaker changed, want 0", n)
		}

		for i := range inRow {
			if code, err := send(); err != nil || code != 503 {
				t.Fatalf("request %d: %d, %v; want a 503 answer", i+1, code, err)
			}
		}
		for i := range refused {
			if _, err := send(); !errors.Is(err, transport.ErrCircuitOpen) {
				t.Fatalf("request %d with the breaker open: %v, want ErrCircuitOpen", inRow+i+1, err)
			}
		}
		if got := cloud.Stats().Total.Requests; got != inRow {
			t.Errorf("the fake received %d requests, want %d: the open breaker let some through", got, inRow)
		}
		check("open", "tollgate_breaker_transitions_total", map[string]float64{to("closed"): 0, to("half-open"): 0, to("open"): 1})
		check("open", "tollgate_breaker_state", map[string]float64{label("state", "closed"): 0, label("state", "half-open"): 0, label("state", "open"): 1})
		result := func(r string) string { return "priority=default," + label("result", r) }
		check("open", "tollgate_requests_total", map[string]float64{result("open"): refused, result("failed"): 0, result("refused"): 0})

		// The service is back; after OpenFor the next request probes, and
		// its success closes the breaker.
		cloud.SetFaults(fakecloud.Faults{})
		time.Sleep(openFor) // fake time
		if code, err := send(); err != nil || code != 200 {
			t.Fatalf("the probe: %d, %v; want a 200 answer", code, err)
		}
		check("closed", "tollgate_breaker_transitions_total", map[string]float64{to("closed"): 1, to("half-open"): 1, to("open"): 1})
		check("closed", "tollgate_breaker_state", map[string]float64{label("state", "closed"): 1, label("state", "half-open"): 0, label("state", "open"): 0})
		requests := series(t, c, "tollgate_requests_total")
		if sent := requests[result("allowed")] + requests[result("waited")]; sent != inRow+1 {
			t.Errorf("requests_total allowed+waited = %v, want %d (the failures and the probe); all: %v", sent, inRow+1, requests)
		}
		if got := requests[result("open")]; got != refused {
			t.Errorf("requests_total{result=open} = %v after the probe, want still %d", got, refused)
		}
		if n := testutil.CollectAndCount(c, "tollgate_breaker_state"); n != 3 {
			t.Errorf("breaker_state has %d series, want 3 (one tenant)", n)
		}
	})
}
