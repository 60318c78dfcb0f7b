package shapes

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

var (
	family    = flag.Int("family", 0, "run N servers drawn from the family, seeded -seed to -seed+N-1, each for its full length; print their distribution and the worst, and rewrite that part of docs/matrix.md")
	firstSeed = flag.Uint64("seed", 1, "with -family, the first draw's seed; with -cell, the run's")
	replay    = flag.Uint64("draw", 0, "run the draw with this seed alone, for its full length, and print its row and its run window by window, each client's learner beside (and write its picture to the temporary directory)")
)

// smokeDraws are the draws a default go test runs, shortened: cheap ones,
// of different shapes (a token bucket stepped down; a shedding server
// beside the bare transport; a sliding log with IETF fields).
var smokeDraws = []uint64{1, 3, 4}

// runDraw runs the draw seeded o.Seed from a cold start, and over the bare
// transport too where it has no rate quota, and checks each run
// (checkRun).
func runDraw(t *testing.T, o Options) Row {
	c := Draw(o.Seed)
	var row Row
	synctest.Test(t, func(t *testing.T) { row.Result = Run(c, o) })
	if c.Baseline {
		o.Bare = true
		synctest.Test(t, func(t *testing.T) { row.Bare = Run(c, o) })
	}
	checkRun(t, row.Result)
	if row.Bare != nil {
		checkRun(t, row.Bare)
	}
	return row
}

// TestFamily runs servers drawn from the family: by default a few draws,
// shortened, as a smoke test that asserts only what runDraw checks; with
// -family N, N draws at full length, and it rewrites the family's section
// of docs/matrix.md:
//
//	go test ./internal/shapes -run TestFamily -count=1 -timeout 20m -args -family 200
//
// With -draw SEED it runs that draw alone and prints its row and its run
// window by window. -save and -compare work as with TestMatrix, the
// draws paired by seed. No goodput figure is asserted: the distribution
// reports them against the goals.
func TestFamily(t *testing.T) {
	opts := familyRuns(t)
	if len(opts) == 0 {
		t.Skipf("%s holds no draws", *compareFile)
	}
	rows := make([]Row, len(opts))
	began := time.Now()
	t.Run("draws", func(t *testing.T) {
		for i, o := range opts {
			t.Run(fmt.Sprint(o.Seed), func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				rows[i] = runDraw(t, o)
				t.Logf("%s: %d calls in %v of wall time; misses: %v", rows[i].Result.Cell.Name, rows[i].Result.Calls,
					time.Since(began).Round(time.Millisecond), rows[i].Misses())
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("%d draws in %v of wall time", len(opts), time.Since(began).Round(time.Second))
	now := &Saved{Draws: make([]Sample, len(opts))}
	for i, o := range opts {
		now.Draws[i] = SampleOf(o, rows[i])
	}
	report(t, now)
	if *replay > 0 {
		logRun(t, rows[0], fmt.Sprintf("tollgate-draw-%d.svg", *replay))
		return
	}
	var b bytes.Buffer
	if err := WriteFamily(&b, rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	if *family == 0 || *compareFile != "" {
		return
	}
	head := fmt.Sprintf("%d servers drawn from the family, seeds %d to %d, each run once from a cold start.\n\n", len(opts), opts[0].Seed, opts[len(opts)-1].Seed)
	if err := rewriteDoc(matrixDoc, familyBegin, familyEnd, head+b.String()); err != nil {
		t.Fatal(err)
	}
}

// logRun logs one row and its run window by window (WriteWindows), and
// writes its picture to the file name in the temporary directory.
func logRun(t *testing.T, row Row, name string) {
	var b bytes.Buffer
	if err := WriteTable(&b, []Row{row}); err != nil {
		t.Fatal(err)
	}
	if err := WriteWindows(&b, row.Result); err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := row.Result.Series.WriteSVG(&svg, 0, 0); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(os.TempDir(), name)
	if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s\npicture: %s", b.String(), path)
}

// familyRuns returns the Options of the draws TestFamily runs: with
// -compare, those its file holds; else -draw's alone, or -family's, at
// full length; else the smoke draws, shortened.
func familyRuns(t *testing.T) []Options {
	if b := comparing(t); b != nil {
		return optionsOf(b.Draws)
	}
	switch {
	case *replay > 0:
		return []Options{{Seed: *replay, Trace: true}}
	case *family > 0:
		opts := make([]Options, *family)
		for i := range opts {
			opts[i] = Options{Seed: *firstSeed + uint64(i)}
		}
		return opts
	}
	opts := make([]Options, len(smokeDraws))
	for i, seed := range smokeDraws {
		opts[i] = Options{Seed: seed, Short: true}
	}
	return opts
}

// TestDrawSameSeed: a seed draws the same server every time, and
// different seeds draw different servers.
func TestDrawSameSeed(t *testing.T) {
	names := map[string]bool{}
	const n = 1000
	for seed := range uint64(n) {
		c := Draw(seed)
		if again := Draw(seed); !reflect.DeepEqual(c, again) {
			t.Fatalf("seed %d drew %+v, then %+v", seed, c, again)
		}
		names[c.params()] = true
	}
	if len(names) < n*99/100 {
		t.Errorf("%d seeds drew %d different servers", n, len(names))
	}
}

// TestDrawServable: every draw lies in the family's ranges and is one a
// client can serve: on what the unseen consumer and any step leave, a
// rate of at least one request per maxPause and Little's wait at most
// maxLittle, a quarter of the calls' deadline; a draw without a rate
// quota makes a bounded number of calls beside the bare transport. And
// the draws cover the family: every shape, alignment, answer, step and
// header family comes up.
func TestDrawServable(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(5000) {
		c := Draw(seed)
		bad := func(format string, args ...any) {
			t.Helper()
			t.Errorf("draw %d (%s): "+format, append([]any{seed, c.params()}, args...)...)
		}
		if c.callers() < 1 || c.callers() > 256 || c.clients() < 1 || c.clients() > 4 || c.clients() > c.callers() {
			bad("%d callers, %d clients", c.callers(), c.clients())
		}
		if c.rtt() < time.Millisecond || c.rtt() > 400*time.Millisecond || c.Jitter < 0 || c.Jitter > c.rtt()/2 || c.Arrival != 0 {
			bad("round trip %v ± %v, %v of it there", c.rtt(), c.Jitter, c.Arrival)
		}
		seen[fmt.Sprint("status ", c.ThrottleStatus)]++
		if !c.rated() {
			if c.Calls < 1 || c.Calls > familyCalls || !c.Baseline {
				bad("no rate quota, %d calls, baseline %v", c.Calls, c.Baseline)
			}
			seen[fmt.Sprint("unrated, no quota ", c.NoQuota)]++
			continue
		}
		q := c.Quota
		if q.Limit < 3 || q.Limit > 1000 || q.Window < time.Second || q.Window > 10*time.Minute {
			bad("quota %v", q)
		}
		if c.Calls != 0 || c.Baseline {
			bad("a rate quota, %d calls, baseline %v", c.Calls, c.Baseline)
		}
		for _, stepped := range []bool{false, true} {
			rate := c.rate(c.limit(stepped))
			if rate < 1/maxPause.Seconds() {
				bad("%.4f/s left to the client", rate)
			}
			// A millionth of a second for rounding.
			if little := float64(c.callers()) / rate; little > maxLittle.Seconds()+1e-6 || 4*little > callTimeout.Seconds()+1e-6 {
				bad("Little's wait %.1f s", little)
			}
		}
		if q.Unseen > int(math.Floor(0.6*float64(min(c.limit(false), c.limit(true))))) {
			bad("unseen %d of %d", q.Unseen, c.limit(false))
		}
		if c.Step > 0 && (c.StepAfter < q.Window || c.StepAfter%q.Window != 0) {
			bad("step after %v", c.StepAfter)
		}
		seen[q.Policy.String()]++
		seen["align "+q.Align.String()]++
		if q.Offset > 0 {
			seen["offset"]++
		}
		seen[fmt.Sprint("step ", c.Step)]++
		seen["headers "+c.Headers.String()]++
		if c.Faults.ShedRate > 0 {
			seen["rate and shed"]++
		}
		if q.Unseen > 0 {
			seen["unseen"]++
		}
		if c.headersEvery() && c.callers() > q.Limit {
			seen["fewer per window than callers, with headers"]++
		}
	}
	for _, want := range []string{
		"status 400", "status 429", "status 503", "unrated, no quota true", "unrated, no quota false",
		"fixed", "sliding", "bucket", "align epoch", "align first", "offset",
		"step 0", "step 0.4", "step 1.6", "step 4", "headers none", "headers retry-after",
		"headers alibaba", "headers x-ratelimit", "headers ietf", "headers ietf-structured",
		"rate and shed", "unseen", "fewer per window than callers, with headers",
	} {
		if seen[want] == 0 {
			t.Errorf("no draw of 5000 has %q; seen %v", want, seen)
		}
	}
}

// TestDrawReplays: a draw run again gives what it gave before, within a
// tolerance. Runs are not identical: goroutines in a synctest bubble do
// not keep one order, and fakecloud is reproducible only for the same
// request order. Over 20 runs of each smoke draw, settled goodput and
// throttled share spread by at most 2.8 points, and the time a shedding
// draw's calls took by a factor of 1.4 (its Retry-After waits fall as the
// order does); the tolerances are 5 points and a factor of 2. Since a
// probe tells only what went through above L̂ and an off-grid window is
// paced as a log, draw 1 (a token bucket stepped down) settles at 92.6%
// or at 100% (27 and 13 runs of 40, under -race beside another race-built
// test binary: 7 of 20 pairs differed, by 7.4 points), as the order of
// the bubble's goroutines falls: its goodput's tolerance is 10 points.
func TestDrawReplays(t *testing.T) {
	for _, seed := range smokeDraws {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			a, b := runDraw(t, Options{Seed: seed, Short: true}).Result, runDraw(t, Options{Seed: seed, Short: true}).Result
			if a.Cell.rated() && math.Abs(a.SettledGoodput-b.SettledGoodput) > 0.10 {
				t.Errorf("settled goodput %s, then %s", percent(a.SettledGoodput), percent(b.SettledGoodput))
			}
			if math.Abs(a.SettledThrottled-b.SettledThrottled) > 0.05 {
				t.Errorf("settled throttled %s, then %s", percent(a.SettledThrottled), percent(b.SettledThrottled))
			}
			if ta, tb := float64(a.Took), float64(b.Took); max(ta, tb) > 2*min(ta, tb) {
				t.Errorf("the calls took %v, then %v", a.Took, b.Took)
			}
		})
	}
}

// The family's section of docs/matrix.md lies between these lines.
const (
	familyBegin = "<!-- family:begin (generated by go test ./internal/shapes -run TestFamily -args -family N; do not edit) -->"
	familyEnd   = "<!-- family:end -->"
)

// TestWriteFamily: each figure's median, 10th percentile from the worst
// end and worst, with the draws that miss its goal; by kind of draw, the
// medians and the draws that meet both goals; the worst draws by
// shortfall, worst first.
func TestWriteFamily(t *testing.T) {
	fixed := Cell{Quota: fakecloud.Quota{Limit: 50, Window: time.Second}, Step: 2} // no cold goal
	var rows []Row
	for i := range 10 {
		c := fixed
		c.Name = fmt.Sprintf("draw %d: fixed %d", i+1, i)
		if i >= 5 {
			c.Clients = 2 // draws 6 to 10 share the quota
		}
		// Goodput 91% to 100%; draw 1 the worst, 98% and up meet the goal.
		rows = append(rows, Row{Result: &Result{Cell: c, SettledGoodput: 0.91 + 0.01*float64(i),
			Little: time.Second, P99: time.Second, Calls: 100, Runs: 1}})
	}
	rows[9].Result.Failed = 50 // draw 10: goodput 100%, half its calls failed
	var b bytes.Buffer
	if err := WriteFamily(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"10 draws; 2 meet every goal.",
		"| settled goodput | 10 | 96.0% | 92.0% | 91.0% | 7 |",
		"| failed calls | 10 | 0 | 0 | 50 | 1 |",
		// By kind: draws 1 to 5 alone, 6 to 10 two clients, of which 8, 9
		// and 10 meet both goals (10's failed calls are not a kind's).
		"| one client, no rate-limit header | 5 | 93.0% | 0.0% | 0 |",
		"| 2–4 clients, no rate-limit header | 5 | 98.0% | 0.0% | 3 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// Draw 10 (50 points of failed calls), then draw 1 (7 points short).
	i10, i1, i2 := strings.Index(out, "\n| 10 | fixed 9 |"), strings.Index(out, "\n| 1 | fixed 0 |"), strings.Index(out, "\n| 2 | fixed 1 |")
	if i10 < 0 || i1 < 0 || i2 < 0 || !(i10 < i1 && i1 < i2) {
		t.Errorf("worst draws not in order 10, 1, 2:\n%s", out)
	}
}
