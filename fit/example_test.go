package fit_test

import (
	"fmt"
	"time"

	"github.com/tollgate-go/tollgate/fit"
)

// A server that grants 5 requests a second, asked 8 times a second: the
// record of its answers names the rule.
func ExampleRecord_Fit() {
	server := fit.Rule{Kind: fit.Fixed, Limit: 5, Window: time.Second}
	rec := recordOf(server)
	ft := rec.Fit()
	fmt.Printf("%v %d per %v, score %.2f\n", ft.Best.Kind, ft.Best.Limit, ft.Best.Window, ft.Score)
	fmt.Printf("%.0f requests a second\n", ft.Best.PerSecond())
	// Output:
	// fixed 5 per 1s, score 0.00
	// 5 requests a second
}

// A pacer that believes the server grants 6 requests per 1.2 s asks the
// record whether the fitted rule, 5 per second, is the better account of
// what the server answered.
func ExampleRecord_Prefers() {
	server := fit.Rule{Kind: fit.Fixed, Limit: 5, Window: time.Second}
	rec := recordOf(server)
	belief := fit.Rule{Kind: fit.Fixed, Limit: 6, Window: 1200 * time.Millisecond}
	best := rec.Fit().Best
	fmt.Println(best.Kind, best.Limit, best.Window)
	fmt.Println("fit preferred:", rec.Prefers(best, belief))
	fmt.Println("belief preferred:", rec.Prefers(belief, best))
	// Output:
	// fixed 5 1s
	// fit preferred: true
	// belief preferred: false
}

// recordOf asks server 8 times a second for 50 s and records each answer,
// 20 ms after its request, as a tenant's record does: from the first
// throttle on.
func recordOf(server fit.Rule) *fit.Record {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	reqs := make([]fit.Request, 400)
	for i := range reqs {
		reqs[i] = fit.Request{At: start.Add(time.Duration(i) * time.Second / 8)}
	}
	granted := server.Grants(reqs)
	rec := new(fit.Record)
	begun := false
	for i, q := range reqs {
		begun = begun || !granted[i]
		if begun {
			rec.Add(fit.Answer{Sent: q.At, Answered: q.At.Add(20 * time.Millisecond), InFlight: 1, Throttled: !granted[i]})
		}
	}
	return rec
}
