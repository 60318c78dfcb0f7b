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
// candidate setting and share of 503 answers, 32 workers run for 10 min
// against a 50/s quota (about 30 000 requests), and it reports how many
// times the breaker opened and how long after the first failure it first
// did. A good setting opens within a second at 80% and never at 20%.
func TestBreakerTrips(t *testing.T) {
	if !*trips {
		t.Skip("an instrument: run with -args -trips")
	}
	rates := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8}
	candidates := []struct {
		name string
		cfg  breaker.Config
	}{
		{"defaults: ≥50% of ≥20, or 20 in a row", breaker.Config{}},
		{"≥50% of ≥20, or 10 in a row", breaker.Config{ConsecutiveFailures: 10}},
		{"≥50% of ≥20, or 5 in a row", breaker.Config{ConsecutiveFailures: 5}},
		{"≥50% of ≥20 only", breaker.Config{ConsecutiveFailures: -1}},
		{"≥50% of ≥40 only", breaker.Config{ConsecutiveFailures: -1, MinRequests: 40}},
		{"≥60% of ≥20 only", breaker.Config{ConsecutiveFailures: -1, FailureRatio: 0.6}},
		{"gobreaker's own (more than 5 in a row)", breaker.Config{ConsecutiveFailures: 6, FailureRatio: 2}},
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%-42s", "opens in 10 min (first open after)")
	for _, r := range rates {
		fmt.Fprintf(&out, "%14.0f%%", 100*r)
	}
	out.WriteString("\n")
	for _, c := range candidates {
		fmt.Fprintf(&out, "%-42s", c.name)
		for _, rate := range rates {
			var opens int
			var first time.Duration
			synctest.Test(t, func(t *testing.T) {
				f := latency
				f.UnavailableRate = rate
				cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(50), Faults: f})
				var log breakerLog
				cfg := c.cfg
				tr := New(cloud.RoundTripper(), Config{Observer: &log, Breaker: &cfg})
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
				defer cancel()
				var l stormLoad
				l.run(ctx, t, tr, workers).Wait()
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
