package fit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTallyByDefinition: threshold and costAt give the Limit and cost
// that the definition gives, cost(L) summed answer by answer over every
// Limit (see threshold), on the loads of each kind, booked and not. The
// tally behind them is built for speed; this is what it must equal.
func TestTallyByDefinition(t *testing.T) {
	records := []*Record{serve(1, 15, 10, 4, 0), serve(2, 15, 10, 0, 0.05), serve(3, 40, 10, 2, 0.02)}
	rng := rand.New(rand.NewPCG(6, 6))
	for range 3 {
		r := new(Record)
		at := time.Unix(1e9, 0)
		for range Size {
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond)))
			level := 1 + rng.IntN(8)
			r.Add(Answer{Sent: at, Answered: at.Add(time.Duration(rng.IntN(60)) * time.Millisecond), InFlight: level, Throttled: level > 5 || rng.Float64() < 0.1})
		}
		records = append(records, r)
	}
	// Few answers, many in flight: a cap's loads lie past every count the
	// record holds, and the best Limit there.
	few := new(Record)
	at := time.Unix(1e9, 0)
	few.Add(Answer{Sent: at, Answered: at, InFlight: 1, Throttled: true})
	for i := range 30 {
		at = at.Add(time.Millisecond)
		few.Add(Answer{Sent: at, Answered: at, InFlight: 50 + i, Throttled: i%7 == 6})
	}
	records = append(records, few)
	for ri, r := range records {
		f := new(fitter)
		f.samples(r, delaySteps/2)
		if !f.begin() {
			t.Fatalf("record %d: no throttle", ri)
		}
		start := time.Unix(0, f.a0+int64(rng.IntN(1e9)))
		rules := []Rule{
			{Kind: Fixed, Window: time.Second, Start: start},
			{Kind: Fixed, Window: 700 * time.Millisecond, Start: start},
			{Kind: Fixed, Window: 30 * time.Millisecond, Start: start},
			{Kind: Fixed, Window: 3 * time.Second, Start: start.Add(-time.Hour)},
			{Kind: Fixed, Window: time.Second}, // the zero Start: counted answer by answer
			{Kind: Sliding, Window: time.Second},
			{Kind: Bucket, Rate: 10},
			{Kind: Bucket, Rate: 200},
			{Kind: Cap},
		}
		for _, rule := range rules {
			for _, booked := range []bool{true, false} {
				// The definition on the loads answer by answer; then the
				// tally as a score takes it (a fixed window's, a window
				// at a time).
				f.loadsOnly(rule)
				cost, base := byDefinition(f, rule.Kind == Fixed && booked)
				f.loads(rule, booked)
				bestL := int64(1)
				for l := range cost {
					if l >= 1 && cost[l] < cost[bestL] {
						bestL = int64(l)
					}
				}
				l, c := f.threshold()
				if l != bestL || c.cost != cost[bestL] || c.base != base {
					t.Errorf("record %d, %v booked %v: threshold L %d cost %v base %v, by definition L %d cost %v base %v",
						ri, rule, booked, l, c.cost, c.base, bestL, cost[bestL], base)
				}
				for l := range cost {
					if got := f.costAt(int64(l)); got != cost[l] {
						t.Fatalf("record %d, %v booked %v: costAt(%d) %v, by definition %v", ri, rule, booked, l, got, cost[l])
					}
				}
			}
		}
	}
}

// byDefinition returns cost(L) on f.load for every L from 0 to past
// every count the record holds, and what no quota costs on the answers
// judged.
func byDefinition(f *fitter, fills bool) (cost []float64, base float64) {
	n := len(f.s)
	base = f.noneCost
	cost = make([]float64, n+2)
	for i, s := range f.s {
		ld := f.load[i]
		if !s.thr {
			if ld == unjudged || ld == spent {
				continue
			}
			for l := range cost {
				if min(ld, int64(n)) >= int64(l) {
					cost[l] += heavy
				}
			}
			continue
		}
		first := i == 0 || !f.s[i-1].thr
		if ld == unjudged {
			if first {
				base--
			}
			continue
		}
		if !first && f.load[i-1] == ld {
			continue
		}
		// A fill: the success after the run, if any, comes in a later
		// window (its load is lower), or says nothing of one.
		w := 1.0
		if fills {
			next := int64(-1)
			for j := i + 1; j < n; j++ {
				if !f.s[j].thr {
					if next = f.load[j]; next == unjudged || next == spent {
						next = -1
					}
					break
				}
			}
			if next < ld {
				w = 0.5
			}
		}
		for l := range cost {
			if min(ld, int64(n)) < int64(l) {
				cost[l] += w
			}
		}
	}
	return cost, base
}
