package fit

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// served is one request sent to fakecloud and its answer.
type served struct {
	at      time.Time
	granted bool
}

// burstsTo sends bursts to a fakecloud serving q, inside a synctest
// bubble, with no latency (a request reaches the server when sent): n
// requests in bursts of 1 to maxBurst, at gaps drawn around gap, the
// pattern from seed. Bursts at random phases are what tell the shapes
// apart: a paced record fits several.
func burstsTo(t *testing.T, q fakecloud.Quota, n, maxBurst int, gap time.Duration, seed uint64) []served {
	t.Helper()
	var out []served
	synctest.Test(t, func(t *testing.T) {
		q.API = "DescribeInstances"
		c := fakecloud.New(fakecloud.Config{Quotas: []fakecloud.Quota{q}})
		rt := c.RoundTripper()
		rng := rand.New(rand.NewPCG(seed, 7))
		// Start off any grid, as a client does.
		time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
		for len(out) < n {
			for range min(1+rng.IntN(maxBurst), n-len(out)) {
				out = append(out, served{at: time.Now(), granted: ask(t, rt)})
			}
			time.Sleep(time.Duration(rng.ExpFloat64() * float64(gap)))
		}
	})
	return out
}

// ask sends one request to rt, a fakecloud's, and reports whether the
// server granted it.
func ask(t *testing.T, rt http.RoundTripper) bool {
	t.Helper()
	req, err := fakecloud.NewRequest(context.Background(), "http://ecs.aliyuncs.com", "AKIDfit", "DescribeInstances")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ruleOf is the family member a fakecloud quota is.
func ruleOf(q fakecloud.Quota) Rule {
	switch q.Policy {
	case fakecloud.SlidingWindow:
		return Rule{Kind: Sliding, Limit: int64(q.Limit), Window: q.Window}
	case fakecloud.TokenBucket:
		return Rule{Kind: Bucket, Limit: int64(q.Burst), Rate: float64(q.Limit) / q.Window.Seconds()}
	}
	if q.Align == fakecloud.AlignFirst {
		return Rule{Kind: FirstUse, Limit: int64(q.Limit), Window: q.Window}
	}
	return Rule{Kind: Fixed, Limit: int64(q.Limit), Window: q.Window, Start: time.Unix(0, 0).Add(q.Offset)}
}

var shapes = []fakecloud.Quota{
	{Policy: fakecloud.FixedWindow, Limit: 10, Window: time.Second},
	{Policy: fakecloud.FixedWindow, Limit: 7, Window: 3 * time.Second, Offset: 400 * time.Millisecond},
	{Policy: fakecloud.FixedWindow, Limit: 40, Window: 10 * time.Second},
	{Policy: fakecloud.SlidingWindow, Limit: 10, Window: 2 * time.Second},
	{Policy: fakecloud.TokenBucket, Limit: 20, Window: time.Second, Burst: 5},
	{Policy: fakecloud.FixedWindow, Limit: 8, Window: 2 * time.Second, Align: fakecloud.AlignFirst},
}

// TestGrantsMatchFakecloud: each member predicts exactly what its server
// grants, request by request.
func TestGrantsMatchFakecloud(t *testing.T) {
	for _, q := range shapes {
		t.Run(q.String(), func(t *testing.T) {
			got := burstsTo(t, q, 400, 2*q.Limit, q.Window/3, 1)
			reqs := make([]Request, len(got))
			for i, s := range got {
				reqs[i] = Request{At: s.at}
			}
			pred := ruleOf(q).Grants(reqs)
			granted, wrong := 0, 0
			for i, s := range got {
				if s.granted {
					granted++
				}
				if pred[i] != s.granted {
					wrong++
					if wrong <= 3 {
						t.Errorf("request %d at %v: server granted %v, %v predicts %v", i, s.at.Sub(got[0].at), s.granted, ruleOf(q), pred[i])
					}
				}
			}
			if granted == 0 || granted == len(got) {
				t.Fatalf("%d of %d granted: the pattern does not test the rule", granted, len(got))
			}
			if wrong > 0 {
				t.Errorf("%d of %d predictions wrong", wrong, len(got))
			}
		})
	}
}

// recordOf keeps the answers from the first throttle on, as a tenant's
// record begins.
func recordOf(got []served) *Record {
	r := new(Record)
	begun := false
	for _, s := range got {
		begun = begun || !s.granted
		if begun {
			r.Add(Answer{Sent: s.at, Answered: s.at, Throttled: !s.granted})
		}
	}
	return r
}

// TestFitNamesTheServer: on bursts sent to fakecloud, the fit names the
// server's kind, its window within 2%, its rate within 5% and its limit
// within one, or a rule equivalent on the record (one that explains the
// answers as well as the server's own, to within 0.5% of them: the
// bucket's search, a few rates then steps, can miss by that), on at least
// 10 of 12 records a shape. That is a regression floor: 3 s, off the grid
// and sent in bursts that leave wide gaps between refills, is right on 11;
// the others on 12.
func TestFitNamesTheServer(t *testing.T) {
	const seeds, floor = 12, 10
	for _, q := range shapes {
		t.Run(q.String(), func(t *testing.T) {
			right := 0
			for seed := range uint64(seeds) {
				got := burstsTo(t, q, Size+100, 2*q.Limit, q.Window/3, seed+10)
				want := ruleOf(q)
				ft := recordOf(got).Fit()
				miss := misses(ft.Best, want)
				truth := scoreOf(recordOf(got), want)
				t.Logf("seed %d: best %v (score %.3f, the server's rule %.3f), runner-up %v (%.3f), others %.1f; %s", seed, ft.Best, ft.Score, truth, ft.RunnerUp, ft.RunnerUpScore, ft.Others, miss)
				if miss == "" || ft.Score <= truth+0.005 {
					right++
				}
			}
			if right < floor {
				t.Errorf("right on %d of %d records, want %d", right, seeds, floor)
			}
		})
	}
}

// misses says how fit b misses the true rule want, or "" if it does not.
// A fixed window's start is left out: bursts seconds apart leave it
// anywhere between them (TestFitWindowStart holds it on dense requests).
func misses(b, want Rule) string {
	if b.Kind != want.Kind {
		return fmt.Sprintf("fit %v, want %v", b.Kind, want.Kind)
	}
	var m []string
	if d := b.Limit - want.Limit; d < -1 || d > 1 {
		m = append(m, fmt.Sprintf("limit %d, want %d ± 1", b.Limit, want.Limit))
	}
	switch b.Kind {
	case Fixed, Sliding, FirstUse:
		if e := math.Abs(float64(b.Window-want.Window)) / float64(want.Window); e > 0.02 {
			m = append(m, fmt.Sprintf("window %v, want %v ± 2%%", b.Window, want.Window))
		}
	case Bucket:
		if e := math.Abs(b.Rate-want.Rate) / want.Rate; e > 0.05 {
			m = append(m, fmt.Sprintf("rate %.3g/s, want %.3g/s ± 5%%", b.Rate, want.Rate))
		}
	}
	return strings.Join(m, "; ")
}

// TestFitWindowStart: on requests a few milliseconds apart, the fit
// places a fixed window's start within 2% of the window of the server's,
// on and off the grid.
func TestFitWindowStart(t *testing.T) {
	for _, q := range shapes[:3] {
		t.Run(q.String(), func(t *testing.T) {
			got := burstsTo(t, q, Size+100, 3, q.Window/time.Duration(q.Limit*4), 1)
			ft := recordOf(got).Fit()
			b, want := ft.Best, ruleOf(q)
			if b.Kind != Fixed {
				t.Fatalf("fit %v, want %v", b, want)
			}
			// The fitted window start nearest the record's middle,
			// against the true one nearest it.
			mid := got[len(got)/2].at.UnixNano()
			bw, w := int64(b.Window), int64(want.Window)
			at := b.Start.UnixNano() + floorDiv(mid-b.Start.UnixNano(), bw)*bw
			d := mod(at-want.Start.UnixNano(), w)
			if d > w/2 {
				d -= w
			}
			t.Logf("fit %v: windows start %v off the server's", b, time.Duration(d))
			if time.Duration(absInt(d)) > want.Window/50 {
				t.Errorf("fit %v: windows start %v off the server's, want within 2%% of %v", b, time.Duration(d), want.Window)
			}
		})
	}
}

// scoreOf is rule r's score on the record, its Limit fitted.
func scoreOf(r *Record, rule Rule) float64 {
	f := new(fitter)
	r.each(func(e entry) { f.s = append(f.s, sample{at: e.sent + int64(e.rt)*1000/2, thr: e.thr}) })
	if !f.begin() {
		return math.Inf(1)
	}
	return f.score(rule).score()
}

// TestFitCap: a record whose throttles come above N in flight, whatever
// the rate, fits a cap of N.
func TestFitCap(t *testing.T) {
	const n = 6
	rng := rand.New(rand.NewPCG(3, 3))
	r := new(Record)
	at := time.Unix(1e9, 0)
	for range Size {
		level := 1 + rng.IntN(2*n)
		r.Add(Answer{Sent: at, Answered: at.Add(40 * time.Millisecond), InFlight: level, Throttled: level > n})
		at = at.Add(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
	}
	ft := r.Fit()
	if want := (Rule{Kind: Cap, Limit: n}); ft.Best != want {
		t.Errorf("fit %v (score %.3f), want %v; runner-up %v (%.3f)", ft.Best, ft.Score, want, ft.RunnerUp, ft.RunnerUpScore)
	}
}

// TestFitShedding: throttles spread evenly over a steady pace, whatever
// the count, fit no quota.
func TestFitShedding(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	r := new(Record)
	at := time.Unix(1e9, 0)
	r.Add(Answer{Sent: at, Answered: at, Throttled: true})
	for range Size - 1 {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(10*time.Millisecond)))
		r.Add(Answer{Sent: at, Answered: at.Add(30 * time.Millisecond), InFlight: 1 + rng.IntN(4), Throttled: rng.Float64() < 0.05})
	}
	ft := r.Fit()
	if ft.Best.Kind != None {
		t.Errorf("fit %v (score %.3f), want none; runner-up %v (%.3f)", ft.Best, ft.Score, ft.RunnerUp, ft.RunnerUpScore)
	}
}

// TestFitEmpty: a record with nothing, or no throttle, fits None, and
// says how many answers it held.
func TestFitEmpty(t *testing.T) {
	var r Record
	if ft := r.Fit(); ft.Best.Kind != None || ft.Answers != 0 {
		t.Errorf("empty: %+v", ft)
	}
	at := time.Unix(1e9, 0)
	for range Size + 5 {
		r.Add(Answer{Sent: at, Answered: at})
	}
	if ft := r.Fit(); ft.Best.Kind != None || ft.Answers != Size || r.Len() != Size {
		t.Errorf("no throttle: %+v, %d held", ft, r.Len())
	}
}

// BenchmarkFit fits a full record: one rescoring. The record is what a
// fixed window of 100/1s answers to requests sent at random 20% faster,
// with round trips of 20–40 ms (benchRecord).
func BenchmarkFit(b *testing.B) {
	r := benchRecord(Rule{Kind: Fixed, Limit: 100, Window: time.Second}.Grants)
	if ft := r.Fit(); ft.Best.Kind != Fixed || ft.Best.Limit != 100 {
		b.Fatalf("fit %v", ft.Best)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Fit()
	}
}

// benchRecord returns a full record of Size requests sent at random, 120
// a second on average, with round trips of 20–40 ms, answered as grants
// says.
func benchRecord(grants func([]Request) []bool) *Record {
	rng := rand.New(rand.NewPCG(5, 5))
	at := time.Unix(1e9, 0)
	reqs := make([]Request, Size)
	for i := range reqs {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(time.Second) / 120))
		reqs[i] = Request{At: at}
	}
	granted := grants(reqs)
	r := new(Record)
	for i, q := range reqs {
		rt := time.Duration(20+rng.IntN(20)) * time.Millisecond
		r.Add(Answer{Sent: q.At.Add(-rt / 2), Answered: q.At.Add(rt / 2), InFlight: 1 + rng.IntN(8), Throttled: !granted[i]})
	}
	return r
}

func absInt(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// TestFitTrailingOffGrid: on records of bursts to sliding logs of 27 in
// any 1.4 s, 2.5 s and 9.2 s, lengths off the grid, the fit names a
// sliding log of 27 at its length or up to 6% longer (the successes bound
// it from above, as finely as they fell), on each of three seeds. Before
// the fit took a sliding log's length from the successes, it named none
// of the nine so: a sliding log of 1 s or 2 s, a fixed window of 26 or 17
// per 1 s, of 27 per 5 s or 10 s, no quota, or a length 4% short, which
// paces too fast.
func TestFitTrailingOffGrid(t *testing.T) {
	for _, w := range []time.Duration{1400 * time.Millisecond, 2500 * time.Millisecond, 9200 * time.Millisecond} {
		q := fakecloud.Quota{Policy: fakecloud.SlidingWindow, Limit: 27, Window: w}
		for seed := range uint64(3) {
			f := recordOf(burstsTo(t, q, Size+100, 40, w/4, seed+31)).Fit()
			b := f.Best
			if b.Kind != Sliding || b.Limit != 27 || b.Window < w || b.Window > w*106/100 {
				t.Errorf("%v, seed %d: fit %v, then %v; want sliding 27 per %v to %v", q, seed+31, b, f.RunnerUp, w, w*106/100)
			}
		}
	}
}

// TestOnGrid: fixed and sliding windows of the round lengths are on the
// grid, others and rules without a window are not.
func TestOnGrid(t *testing.T) {
	for _, c := range []struct {
		r    Rule
		want bool
	}{
		{Rule{Kind: Fixed, Limit: 50, Window: time.Second}, true},
		{Rule{Kind: Sliding, Limit: 600, Window: time.Minute}, true},
		{Rule{Kind: Fixed, Limit: 120, Window: 3 * time.Second}, false},
		{Rule{Kind: Fixed, Limit: 50, Window: 1020 * time.Millisecond}, false},
		{Rule{Kind: Bucket, Limit: 5, Rate: 1}, false},
		{Rule{Kind: Cap, Limit: 8, Window: time.Second}, false},
		{Rule{}, false},
	} {
		if got := c.r.OnGrid(); got != c.want {
			t.Errorf("%v.OnGrid() = %v, want %v", c.r, got, c.want)
		}
	}
}

// TestFitNoBucketForBursts: a fixed window of 200 per 10 s, which 256
// callers spend at each window's start in a burst of 2 ms, the 56 over
// it throttled among the 200, then seek the next window with probes at
// intervals that double (answers in 2 ms). The burst between two
// throttles bounds a bucket's rate below at about 200 per 2 ms, the
// probes throttled after it above at a few a second: no bucket grants
// these answers, and none is named, best or runner-up. Before the
// bounds were compared, a bucket 199 deep at 10,000s a second fitted
// such records best in the matrix's "256 callers" cell, the throttles
// after the burst unexplained, and paced by, it threw a third of the
// cell's requests at throttles.
func TestFitNoBucketForBursts(t *testing.T) {
	r := new(Record)
	at := time.Unix(1e9, 0)
	add := func(thr bool) {
		r.Add(Answer{Sent: at, Answered: at.Add(2 * time.Millisecond), InFlight: 1, Throttled: thr})
	}
	for w := range 3 {
		at = time.Unix(1e9, 0).Add(time.Duration(w)*10*time.Second + time.Millisecond)
		for i := range 256 {
			add(i%4 == 0 && i/4 < 56 && i > 0 || i == 0 && w == 0)
			at = at.Add(8 * time.Microsecond)
		}
		for gap := 2 * time.Millisecond; at.Add(gap).Before(time.Unix(1e9, 0).Add(time.Duration(w+1) * 10 * time.Second)); gap *= 2 {
			at = at.Add(gap)
			add(true)
		}
	}
	ft := r.Fit()
	t.Logf("fit %v (%.3f), runner-up %v (%.3f)", ft.Best, ft.Score, ft.RunnerUp, ft.RunnerUpScore)
	if ft.Best.Kind == Bucket || ft.RunnerUp.Kind == Bucket {
		t.Errorf("fit %v, runner-up %v: want no bucket", ft.Best, ft.RunnerUp)
	}
}

// TestFitTiedThrottleAnsweredFirst: bursts of six that reach a sliding
// log of 5 per 1 s at one instant, the throttle's answer added before its
// burst's successes (a throttle is often answered first: the server does
// less for it). Placed at one time, the order the server saw them in is
// unknown; the fit takes the successes first, so the log explains every
// answer at its own limit and is the fit. Taken in the order answered,
// each throttle read as refused at a count of 0, as no quota explains it.
func TestFitTiedThrottleAnsweredFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	r := new(Record)
	at := time.Unix(1000, 0)
	for range 60 {
		for i := range 6 {
			r.Add(Answer{Sent: at, Answered: at.Add(2 * time.Millisecond), Throttled: i == 0})
		}
		at = at.Add(time.Second + time.Duration(rng.Int64N(int64(600*time.Millisecond))))
	}
	rule := Rule{Kind: Sliding, Window: time.Second}
	if s := scoreOf(r, rule); s != 0 {
		t.Errorf("sliding log per 1 s scores %.3f, want 0: it explains every answer", s)
	}
	if f := r.Fit(); f.Best.Kind == None || f.Best.Limit != 5 {
		t.Errorf("fit %v, then %v; want a rule of 5 that explains every answer", f.Best, f.RunnerUp)
	}
}

// TestFitPacedWithProbes: a sender paced at 10 per 1.001 s, its own
// windows drifting past the server's fixed 10 per 1 s, that adds an 11th
// (a probe) every fifth window. Every 5 s it is throttled, and a window
// of 5 s, at the count the probes' spacing gives, explains the answers
// as well as the server's own: the fit must name the server's, the most
// restrictive of equals. Where a window's start was placed only after
// the grid's lengths were compared, the 1 s one, its start in the middle
// of the refills' stretch, cut a burst and lost to a 5 s one or a bucket
// (on 3 of these 12 seeds; in the matrix, 247 per 5 s against 50 per
// 1 s), and a pacer that took that window probed for a raise one 5 s
// window at a time.
func TestFitPacedWithProbes(t *testing.T) {
	const limit = 10
	q := fakecloud.Quota{Policy: fakecloud.FixedWindow, Limit: limit, Window: time.Second}
	for seed := range uint64(12) {
		r := new(Record)
		synctest.Test(t, func(t *testing.T) {
			q.API = "DescribeInstances"
			rng := rand.New(rand.NewPCG(seed, 9))
			q.Offset = time.Duration(rng.Int64N(int64(time.Second)))
			c := fakecloud.New(fakecloud.Config{Quotas: []fakecloud.Quota{q}})
			rt := c.RoundTripper()
			const win = 1001 * time.Millisecond
			begun := false
			for k := range 60 {
				start := time.Now()
				n := limit
				if k%5 == 4 {
					n++
				}
				for i := range n {
					time.Sleep(time.Until(start.Add(win * time.Duration(i) / (limit + 1))))
					thr := !ask(t, rt)
					if begun = begun || thr; begun {
						sent := time.Now()
						r.Add(Answer{Sent: sent, Answered: sent.Add(2 * time.Millisecond), Throttled: thr})
					}
				}
				time.Sleep(time.Until(start.Add(win)))
			}
		})
		f := r.Fit()
		if b := f.Best; b.Kind != Fixed || b.Window != time.Second || b.Limit != limit {
			t.Errorf("seed %d: fit %v, then %v; want fixed %d per 1 s", seed, b, f.RunnerUp, limit)
		}
	}
}
