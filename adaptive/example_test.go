package adaptive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
)

func Example() {
	// Start from a static quota of 2 requests per second.
	lim := adaptive.New(adaptive.Config{Rule: quota.Every(2, time.Second)})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	for _, ms := range []int{0, 100, 500, 1000} {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		tk, ok := lim.ReserveAt(now)
		fmt.Printf("%4d ms admitted=%v\n", ms, ok)
		if ok {
			// Send the request, then report the answer. This one carried
			// rate-limit headers: 10 per second.
			tk.Done(quota.Observation{
				At: now.Add(20 * time.Millisecond), Status: 200,
				Known: quota.FieldLimit | quota.FieldWindow,
				Limit: 10, Window: time.Second,
			})
		}
	}
	s := lim.Snapshot()
	fmt.Printf("limit %d per %v from %v\n", s.Limit, s.Window, s.Source)
	// Output:
	//    0 ms admitted=true
	//  100 ms admitted=false
	//  500 ms admitted=true
	// 1000 ms admitted=true
	// limit 10 per 1s from headers
}

func ExampleLimiter_Wait() {
	lim := adaptive.New(adaptive.Config{Rule: quota.Every(1, time.Second)})
	lim.Allow() // the bucket is now empty for a second

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := lim.Wait(ctx)
	fmt.Println(err != nil, errorsIs(err))
	// Output: true true
}

func errorsIs(err error) bool {
	we, ok := err.(*adaptive.WaitError)
	return ok && errors.Is(err, context.DeadlineExceeded) && we.Reason == "rate"
}

func ExampleRegistry() {
	var rules quota.Rules
	rules.Set(quota.Key{Product: "ecs"}, quota.Every(20, time.Second))
	reg := adaptive.NewRegistry(adaptive.RegistryConfig{Rules: &rules})

	k := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "1234567890123456"}
	lim := reg.Get(k)
	fmt.Println(reg.Len(), lim.Snapshot().Rate, lim.Snapshot().Source)

	// A tenant idle for IdleTTL (10 min) is dropped. Whoever kept its
	// Limiter sees that, and looks the key up again.
	reg.Sweep(time.Now().Add(time.Hour))
	if lim.Evicted() {
		lim = reg.Get(k)
	}
	fmt.Println(reg.Len(), lim.Evicted())
	// Output:
	// 1 20 rule
	// 1 false
}

// Example_learner drives a Limiter against a server that says nothing but
// "throttled": at most 20 requests in each fixed 2 s window, 8 callers,
// 10 ms round trips, on a clock stepped by hand. The learner finds the
// limit and the window, and paces at them.
func Example_learner() {
	const (
		limit = 20
		win   = 2 * time.Second
		rtt   = 10 * time.Millisecond
	)
	lim := adaptive.New(adaptive.Config{})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type request struct {
		tk        adaptive.Ticket
		due       time.Time
		throttled bool
	}
	var inFlight []request
	count, window := 0, time.Duration(-1)
	throttles := 0
	for t := time.Duration(0); t < time.Minute; t += time.Millisecond {
		now := start.Add(t)
		kept := inFlight[:0]
		for _, r := range inFlight {
			if r.due.After(now) {
				kept = append(kept, r)
				continue
			}
			obs := quota.Observation{At: r.due, Status: 200}
			if r.throttled {
				obs.Status, obs.Code, obs.Throttled = 400, "Throttling.User", true
				throttles++
			}
			r.tk.Done(obs)
		}
		inFlight = kept
		for len(inFlight) < 8 {
			tk, ok := lim.ReserveAt(now)
			if !ok {
				break
			}
			// The server counts the request in the window it arrives in.
			if w := (t + rtt/2) / win; w != window {
				window, count = w, 0
			}
			count++
			inFlight = append(inFlight, request{tk, now.Add(rtt), count > limit})
		}
	}
	s := lim.Snapshot()
	fmt.Printf("%v: %d per %v\n", s.Phase, s.LearnedLimit, s.LearnedWindow.Round(time.Second))
	fmt.Println("throttles in a minute:", throttles)
	// Output:
	// settled: 20 per 2s
	// throttles in a minute: 24
}

// ExampleLimiter_Seed keeps what a learner settled on across runs of a
// program, as a CLI or a cron job would without a shared store: save
// Learned when the run ends, Seed the next run's Limiter with it, and the
// next run paces at the quota from its first request instead of learning
// it again. (A transport.Config.Store does this for a fleet.)
func ExampleFleet_Seed() {
	// The end of one run: the estimate its learner settled on (here as
	// Learned would give it), saved.
	var saved bytes.Buffer
	learned := adaptive.Estimate{Limit: 50, Window: time.Second, WindowLow: 990 * time.Millisecond, WindowHigh: 1010 * time.Millisecond}
	if err := json.NewEncoder(&saved).Encode(learned); err != nil {
		panic(err)
	}

	// The next run.
	var est adaptive.Estimate
	if err := json.NewDecoder(&saved).Decode(&est); err != nil {
		panic(err)
	}
	lim := adaptive.New(adaptive.Config{})
	fmt.Println("seeded:", lim.Fleet().Seed(est))
	sn := lim.Snapshot()
	fmt.Printf("%v: %d per %v, pacing at %.1f/s\n", sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.Rate)
	if e, ok := lim.Fleet().Learned(); ok {
		fmt.Printf("to save at the end: %d per %v\n", e.Limit, e.Window)
	}
	// Output:
	// seeded: true
	// settled: 50 per 1s, pacing at 50.0/s
	// to save at the end: 50 per 1s
}

// ExampleSnapshot_saidShare: two processes spend one quota without a
// store, a sliding log of 20 per second that says its limit and Remaining
// on every answer. Each finds the share of what the server counts that is
// its own, and paces at that share of the limit. (Each paced at the whole
// limit, they sent 290 in the last 10 s of this run, 90 of them
// throttled.)
func ExampleSnapshot_saidShare() {
	const (
		limit = 20 // a sliding log of 20 per second, said on every answer
		win   = time.Second
		rtt   = 10 * time.Millisecond
	)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var granted []time.Time // the server's log
	type request struct {
		tk     adaptive.Ticket
		due    time.Time
		answer quota.Observation
	}
	// Two processes, no store between them, each with 4 requests in flight
	// at most.
	lims := []*adaptive.Limiter{adaptive.New(adaptive.Config{}), adaptive.New(adaptive.Config{})}
	inFlight := make([][]request, len(lims))
	throttled, sent := 0, 0
	for t := time.Duration(0); t < 30*time.Second; t += time.Millisecond {
		now := start.Add(t)
		for i, lim := range lims {
			kept := inFlight[i][:0]
			for _, r := range inFlight[i] {
				if r.due.After(now) {
					kept = append(kept, r)
					continue
				}
				r.tk.Done(r.answer)
			}
			inFlight[i] = kept
			for len(inFlight[i]) < 4 {
				tk, ok := lim.ReserveAt(now)
				if !ok {
					break
				}
				// The server counts the request as it arrives.
				at := now.Add(rtt / 2)
				for len(granted) > 0 && !granted[0].Add(win).After(at) {
					granted = granted[1:]
				}
				obs := quota.Observation{At: now.Add(rtt), Status: 200,
					Known: quota.FieldLimit | quota.FieldWindow | quota.FieldRemaining | quota.FieldReset,
					Limit: limit, Window: win, ResetSlack: time.Millisecond}
				if len(granted) >= limit {
					obs.Status, obs.Code, obs.Throttled = 429, "Throttling", true
				} else {
					granted = append(granted, at)
				}
				obs.Remaining = int64(limit - len(granted))
				obs.ResetAt = at.Add(win)
				if len(granted) > 0 {
					obs.ResetAt = granted[0].Add(win)
				}
				if t >= 20*time.Second {
					sent++
					if obs.Throttled {
						throttled++
					}
				}
				inFlight[i] = append(inFlight[i], request{tk, now.Add(rtt), obs})
			}
		}
	}
	a, b := lims[0].Snapshot(), lims[1].Snapshot()
	fmt.Printf("shares %.1f + %.1f; paced at %.0f + %.0f per second\n", a.SaidShare, b.SaidShare, a.Rate, b.Rate)
	fmt.Printf("in the last 10 s: %d sent, %d throttled\n", sent, throttled)
	// Output:
	// shares 0.5 + 0.5; paced at 10 + 10 per second
	// in the last 10 s: 207 sent, 18 throttled
}
