package transport

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

var trips = flag.Bool("trips", false, "measure how often candidate breaker settings open at each failure rate (TestBreakerTrips), and print the table")

// TestBreakerTrips is the instrument the breaker's defaults were chosen
// with (go test ./transport -run TestBreakerTrips -args -trips): for each
// candidate setting and share of failing answers (503s; and drops, 200s
// whose connection closes mid-body), 32 workers run against a 50/s quota,
// healthy for 20 s and then failing for 10 min (about 30 000 requests),
// and it reports how many times the breaker opened and how long after the
// failures began it first did. A good setting opens within a second at 80%
// and never at 30%.
func TestBreakerTrips(t *testing.T) {
	if !*trips {
		t.Skip("an instrument: run with -args -trips")
	}
	type failing struct {
		name   string
		faults fakecloud.Faults
	}
	var cols []failing
	for _, r := range []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8} {
		cols = append(cols, failing{fmt.Sprintf("%.0f%%", 100*r), fakecloud.Faults{UnavailableRate: r}})
	}
	cols = append(cols, failing{"80% drops", fakecloud.Faults{DropRate: 0.8}})
	candidates := []struct {
		name string
		cfg  breaker.Config
	}{
		{"defaults: ≥50% of ≥20 in 10s, or 10 in a row", breaker.Config{}},
		{"≥50% of ≥20 in 10s, or 20 in a row", breaker.Config{ConsecutiveFailures: 20}},
		{"≥50% of ≥20 in 10s, or 5 in a row", breaker.Config{ConsecutiveFailures: 5}},
		{"≥50% of ≥20 in 10s only", breaker.Config{ConsecutiveFailures: -1}},
		{"≥50% of ≥20 in 5s, or 10 in a row", breaker.Config{Window: 5 * time.Second, ConsecutiveFailures: 10}},
		{"≥50% of ≥20 in 2s, or 10 in a row", breaker.Config{Window: 2 * time.Second, ConsecutiveFailures: 10}},
		{"gobreaker's own (more than 5 in a row)", breaker.Config{ConsecutiveFailures: 6, FailureRatio: 2}},
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%-46s", "opens in 10 min (first open after)")
	for _, c := range cols {
		fmt.Fprintf(&out, "%15s", c.name)
	}
	out.WriteString("\n")
	for _, c := range candidates {
		fmt.Fprintf(&out, "%-46s", c.name)
		for _, col := range cols {
			var opens int
			var first time.Duration
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(50), Faults: latency})
				var log breakerLog
				cfg := c.cfg
				tr := New(cloud.RoundTripper(), Config{Observer: &log, Breaker: &cfg})
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second+10*time.Minute)
				defer cancel()
				var l load
				wg := l.Run(ctx, t, tr, "AK1", workers)
				time.Sleep(20 * time.Second)
				f := col.faults
				f.LatencyRate, f.Latency, f.LatencyJitter = latency.LatencyRate, latency.Latency, latency.LatencyJitter
				cloud.SetFaults(f)
				start := time.Now()
				wg.Wait()
				for _, ch := range log.changes {
					if ch.From == breaker.StateClosed && ch.To == breaker.StateOpen {
						if opens == 0 {
							first = ch.At.Sub(start)
						}
						opens++
					}
				}
			})
			cell := fmt.Sprint(opens)
			if opens > 0 {
				cell += fmt.Sprintf(" (%.1fs)", first.Seconds())
			}
			fmt.Fprintf(&out, "%15s", cell)
		}
		out.WriteString("\n")
	}
	t.Log(out.String())
}
