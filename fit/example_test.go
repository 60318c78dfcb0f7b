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
	rec := recordOf(server.Grants)
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
	rec := recordOf(server.Grants)
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

// A pacer that follows 5 per second learns, 40 s in, that the server
// now grants 2: the record, which holds more answers from before the fall
// than after it, has a change point where the new limit began, and cut
// there it shows the same window at the new limit.
func ExampleRecord_Change() {
	before := fit.Rule{Kind: fit.Fixed, Limit: 5, Window: time.Second}
	after := fit.Rule{Kind: fit.Fixed, Limit: 2, Window: time.Second}
	rec := recordOf(func(reqs []fit.Request) []bool {
		return append(before.Grants(reqs[:320]), after.Grants(reqs[320:])...)
	})
	at, ok := rec.Change(before)
	fmt.Println("change point:", ok, at.Format("15:04:05"))
	rec.CutBefore(at)
	now := rec.Relimit(before)
	fmt.Println(now.Kind, now.Limit, now.Window)
	fmt.Println("preferred to the old rule:", rec.Prefers(now, before))
	// Output:
	// change point: true 12:00:40
	// fixed 2 1s
	// preferred to the old rule: true
}

// A fixed window counted from the clock and one a counter opens on first
// use (a Redis INCR with an EXPIRE), both 2 per second, grant the same
// requests otherwise: the first-use window opened at 0.5 s holds until
// 1.5 s.
func ExampleRule_Grants() {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var reqs []fit.Request
	for _, ms := range []int{500, 600, 700, 1200, 1400, 1600} {
		reqs = append(reqs, fit.Request{At: start.Add(time.Duration(ms) * time.Millisecond)})
	}
	for _, r := range []fit.Rule{
		{Kind: fit.Fixed, Limit: 2, Window: time.Second},
		{Kind: fit.FirstUse, Limit: 2, Window: time.Second},
	} {
		fmt.Println(r, r.Grants(reqs))
	}
	// Output:
	// fixed 2/1s [true true false true true false]
	// first-use 2/1s [true true false false false true]
}

// recordOf asks a server 8 times a second for 50 s, granted as grants
// says, and records each answer, 20 ms after its request, as a tenant's
// record does: from the first throttle on.
func recordOf(grants func([]fit.Request) []bool) *fit.Record {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	reqs := make([]fit.Request, 400)
	for i := range reqs {
		reqs[i] = fit.Request{At: start.Add(time.Duration(i) * time.Second / 8)}
	}
	granted := grants(reqs)
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

// A learner that knows nothing of a window's length but that servers set
// round ones, counted from the Unix epoch, asks where the next window of
// each could begin after a throttle 23.4 s into a minute.
func ExampleRounds() {
	thr := time.Date(2030, 1, 1, 0, 0, 23, 400_000_000, time.UTC)
	for _, w := range fit.Rounds() {
		if w > time.Minute {
			break
		}
		next := (thr.UnixNano()/int64(w) + 1) * int64(w)
		fmt.Printf("%v: %v\n", w, time.Unix(0, next).UTC().Format("04:05"))
	}
	// Output:
	// 1s: 00:24
	// 2s: 00:24
	// 5s: 00:25
	// 10s: 00:30
	// 15s: 00:30
	// 20s: 00:40
	// 30s: 00:30
	// 1m0s: 01:00
}
