package shapes

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/transport"
)

var (
	saveFile    = flag.String("save", "", "write the per-seed figures of each cell's runs and each draw to FILE (JSON), for a later -compare; TestMatrix and TestFamily each write their part")
	compareFile = flag.String("compare", "", "run the cells and draws FILE holds (-save wrote it), with its seeds and lengths, on the code at hand, and print per cell and for the family whether each figure got better, worse or stayed within noise; rewrites no docs")
	alpha       = flag.Float64("alpha", 0.05, "with -compare, the chance that any verdict of a test's comparisons is a false alarm (Bonferroni-corrected over them)")
)

// before is what -compare's file holds, read once; nil without -compare.
var before = sync.OnceValues(func() (*Saved, error) {
	if *compareFile == "" {
		return nil, nil
	}
	return ReadSaved(*compareFile)
})

// comparing returns what -compare's file holds, or nil without -compare.
func comparing(t *testing.T) *Saved {
	t.Helper()
	s, err := before()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// saving is what -save writes: TestMatrix and TestFamily each add their
// part and rewrite the file, so that one go test run of both saves both.
var saving struct {
	sync.Mutex
	s Saved
}

// report does what -save and -compare ask with now, one test's part of
// the runs (its cells or its draws): adds it to -save's file, and sets it
// beside -compare's and logs the comparison.
func report(t *testing.T, now *Saved) {
	t.Helper()
	if *saveFile != "" {
		saving.Lock()
		if now.Cells != nil {
			saving.s.Cells = now.Cells
		}
		if now.Draws != nil {
			saving.s.Draws = now.Draws
		}
		err := WriteSaved(*saveFile, &saving.s)
		saving.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("saved to %s", *saveFile)
	}
	if b := comparing(t); b != nil {
		var out bytes.Buffer
		if err := Compare(b, now, *alpha, 1).Write(&out); err != nil {
			t.Fatal(err)
		}
		t.Logf("against %s:\n%s", *compareFile, out.String())
	}
}

// optionsOf returns the Options of the runs samples record.
func optionsOf(samples []Sample) []Options {
	o := make([]Options, len(samples))
	for i, s := range samples {
		o[i] = Options{Seed: s.Seed, Short: s.Short}
	}
	return o
}

// TestCompareFalseAlarms checks, on synthetic runs drawn from one
// distribution on both sides, that Compare's verdicts keep their
// family-wise false-alarm rate: of 1,000 sets of 30 cells' figures (8 runs
// a side, some with ties and some all one value) and 6 of the family's
// (200 draws, paired), judged together at α = 1%, at most 1% say anything
// but noise. The runs are drawn from a seeded generator, so the count is
// the same on every run of the test (it is 4 of 1,000); and a shift of
// three standard deviations in one cell is called, in the direction its
// figure counts.
func TestCompareFalseAlarms(t *testing.T) {
	const (
		sets   = 1000
		cells  = 30
		runs   = 8
		draws  = 200
		family = 6
		a      = 0.01
	)
	rng := rand.New(rand.NewPCG(1, 2))
	normal := func() float64 { return rng.NormFloat64() }
	counts := func() float64 { return float64(rng.IntN(3)) } // ties
	zero := func() float64 { return 0 }                      // all one value
	sample := func(n int, f func() float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = f()
		}
		return xs
	}
	alarms := 0
	for range sets {
		pairs := make([]pair, 0, cells+family)
		for c := range cells {
			f := []func() float64{normal, normal, counts, zero}[c%4]
			b, n := sample(runs, f), sample(runs, f)
			slices.Sort(b)
			slices.Sort(n)
			pairs = append(pairs, pair{higher: c%2 == 0, before: b, now: n})
		}
		for range family {
			b := sample(draws, normal)
			n := make([]float64, draws)
			for i := range n {
				n[i] = b[i] + rng.NormFloat64() // the same servers, run again
			}
			pairs = append(pairs, pair{higher: true, before: b, now: n, paired: true})
		}
		for _, p := range pairs {
			up, pv, _ := p.test()
			if verdict(p, up, pv, a/float64(len(pairs))) != Noise {
				alarms++
				break
			}
		}
	}
	t.Logf("%d of %d sets of %d comparisons at α = %g made a false alarm", alarms, sets, cells+family, a)
	if alarms > sets*a {
		t.Errorf("%d of %d sets made a false alarm, want at most %g", alarms, sets, sets*a)
	}

	b := sample(runs, normal)
	n := make([]float64, runs)
	for i := range n {
		n[i] = normal() - 3
	}
	slices.Sort(b)
	slices.Sort(n)
	for _, higher := range []bool{true, false} {
		p := pair{higher: higher, before: b, now: n}
		up, pv, minP := p.test()
		want := map[bool]string{true: Worse, false: Better}[higher]
		if got := verdict(p, up, pv, a/(cells+family)); got != want {
			t.Errorf("a fall of 3σ in a figure where higher is %v: %s (p = %.2g, at best %.2g), want %s", higher, got, pv, minP, want)
		}
	}
}

// compareCells are the cells TestCompareRuns runs, and compareSeeds
// their seeds: 8 runs a side, so that 8 runs all above the other side's
// (p = 2 ÷ C(16, 8) = 1.6e-4) clear 1% over the 15 comparisons (6.7e-4).
// The fixed and sliding cells' short runs are steady, the bucket's
// (steadyless) spread wide: its settled goodput ran from 55% to 100% in
// two sets of 8 short runs, near enough to half the quota that 8 runs
// cannot always tell a Rule at half from it.
var (
	compareCells = []string{"fixed 50/1s", "sliding 50/1s", steadyless}
	compareSeeds = 8
)

const steadyless = "bucket 30/s, burst 60"

// TestCompareRuns runs a few short cells twice on the same code, seed by
// seed in turn, and a third time with a worse client (a user's Rule at
// half the quota, which the server never throttles and so the learner
// never moves), and compares them as -compare does, through a saved file,
// at α = 1%: the two runs of the same code must be noise on every figure,
// and the worse client's settled goodput worse on the steady cells (on the
// bucket's, worse or noise, never better). The verdicts' false-alarm rate
// is at most 1% by construction (TestCompareFalseAlarms checks it); the
// intervals' bootstrap is seeded.
func TestCompareRuns(t *testing.T) {
	var cells []Cell
	for _, c := range Cells() {
		if slices.Contains(compareCells, c.Name) {
			cells = append(cells, c)
		}
	}
	if len(cells) != len(compareCells) {
		t.Fatalf("found %d of the cells %q", len(cells), compareCells)
	}
	// run runs each cell's seeds once for each set of runs it is given,
	// seed by seed in turn, so that a machine's load, which moves the
	// order in which a bubble runs its goroutines and with it a learner's
	// figures, falls on each set alike: the same code run first under
	// other packages' tests and again after they ended read as worse
	// (sliding 50/1s's cold start, in one CI run).
	run := func(worse bool, sets ...*Saved) {
		for _, c := range cells {
			var rules *quota.Rules
			if worse {
				rules = &quota.Rules{}
				rules.Set(quota.Key{}, quota.Rule{Rate: c.rate(c.limit(false)) / 2, Burst: 1})
			}
			for seed := range uint64(compareSeeds) {
				for _, s := range sets {
					o := Options{Seed: seed + 1, Short: true, Rules: rules}
					var r *Result
					synctest.Test(t, func(t *testing.T) { r = Run(c, o) })
					checkRun(t, r)
					s.Cells[c.Name] = append(s.Cells[c.Name], SampleOf(o, Row{Result: r}))
				}
			}
		}
	}
	began := time.Now()
	first, again, worse := &Saved{Cells: map[string][]Sample{}}, &Saved{Cells: map[string][]Sample{}}, &Saved{Cells: map[string][]Sample{}}
	run(false, first, again)
	run(true, worse)
	path := filepath.Join(t.TempDir(), "before.json")
	if err := WriteSaved(path, first); err != nil {
		t.Fatal(err)
	}
	saved, err := ReadSaved(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs in %v of wall time", 3*len(cells)*compareSeeds, time.Since(began).Round(time.Millisecond))

	const a = 0.01
	same := Compare(saved, again, a, 1)
	var out bytes.Buffer
	if err := same.Write(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("the same code:\n%s", out.String())
	if len(same.List) < len(cells) {
		t.Errorf("%d comparisons, want at least one per cell", len(same.List))
	}
	for _, cp := range same.List {
		if cp.MinP >= same.Threshold() {
			t.Errorf("%s, %s: %d runs reach p = %.2g at best, not below %.2g: the verdict could only be noise", cp.Name, cp.Figure, cp.Runs, cp.MinP, same.Threshold())
		}
		if cp.Verdict != Noise {
			t.Errorf("%s, %s: %s (p = %.2g) on two runs of the same code", cp.Name, cp.Figure, cp.Verdict, cp.P)
		}
	}

	out.Reset()
	w := Compare(saved, worse, a, 1)
	if err := w.Write(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("a Rule at half the quota:\n%s", out.String())
	for _, cp := range w.List {
		if cp.Figure != "settled goodput" {
			continue
		}
		steady := cp.Name != steadyless
		if steady && cp.Verdict != Worse || !steady && cp.Verdict == Better {
			t.Errorf("%s: settled goodput %s → %s, p = %.2g: %s, want %s", cp.Name,
				percent(cp.Before), percent(cp.Now), cp.P, cp.Verdict, map[bool]string{true: Worse, false: "worse or noise"}[steady])
		}
	}
	if !strings.Contains(out.String(), "| "+Worse+" |") {
		t.Errorf("the table shows no %q verdict", Worse)
	}
}

// TestCompareLeavesOut checks that cells, seeds and draws on one side
// only are left out, that a comparison with nothing in common is empty
// rather than a panic, and that the table says when runs are too few.
func TestCompareLeavesOut(t *testing.T) {
	s := func(seed uint64, x float64) Sample {
		return Sample{Seed: seed, Figures: map[string]float64{"settled goodput": x}}
	}
	b := &Saved{
		Cells: map[string][]Sample{"a": {s(1, 0.9), s(2, 0.8)}, "only before": {s(1, 1)}},
		Draws: []Sample{s(1, 0.5), s(2, 0.6)},
	}
	n := &Saved{
		Cells: map[string][]Sample{"a": {s(1, 0.9), s(3, 0.1)}, "only now": {s(1, 1)}},
		Draws: []Sample{s(2, 0.7), s(4, 0.1)},
	}
	c := Compare(b, n, 0.05, 1)
	if len(c.List) != 2 {
		t.Fatalf("%d comparisons, want 2 (cell a, the family): %+v", len(c.List), c.List)
	}
	for _, cp := range c.List {
		if cp.Runs != 1 || math.Abs(cp.Diff-map[string]float64{"a": 0, "family": 0.1}[cp.Name]) > 1e-9 {
			t.Errorf("%+v: want 1 run a side, seed 1 for cell a (difference 0), seed 2 for the family (0.1)", cp)
		}
	}
	if c := Compare(&Saved{}, n, 0.05, 1); len(c.List) != 0 {
		t.Errorf("nothing before: %d comparisons", len(c.List))
	}
	var out bytes.Buffer
	if err := Compare(&Saved{}, &Saved{}, 0.05, 1).Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "0 comparisons") {
		t.Errorf("nothing on either side: %q", out.String())
	}

	// One run a side can reach p = 1 at best: the table says so.
	out.Reset()
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 of the comparisons have too few runs") {
		t.Errorf("one run a side, and the table does not say it is too few:\n%s", out.String())
	}
}

// TestSampleOfGoals: every goal a cell is held to has a figure -save
// keeps, so -compare sees a change of it. A cell without a rate quota is
// judged against the bare transport's run, by the time its calls took
// or, run for a time, by its calls a second; a cell whose callers come in
// priority classes by Interactive's p99 and Batch's share. -compare once
// saw neither a timed cell's calls a second nor the classes' goals: a
// change that cut "shed 20%, bare 429, 4 callers" to 72% of the bare
// transport's calls a second compared as noise.
func TestSampleOfGoals(t *testing.T) {
	shed := Cell{Name: "shed", NoQuota: true, Faults: fakecloud.Faults{ShedRate: 0.2}}
	counted := shed
	counted.Calls = 100
	classed := Cell{Name: "classed", Quota: fakecloud.Quota{Limit: 50, Window: time.Second}, Callers: 68, Interactive: 4}
	goal := goalsOf(classed).interactiveP99
	if goal <= 0 {
		t.Fatalf("%s: no goal for Interactive's p99", classed.Name)
	}
	classes := &Result{Cell: classed, Classes: []ClassResult{
		{Priority: transport.Interactive, P99: 2 * goal, Share: 0.95},
		{Priority: transport.Batch, P99: time.Minute, Share: 0.05},
	}}
	for _, tt := range []struct {
		name   string
		row    Row
		figure string
		want   float64
	}{
		{"run for a time", Row{Result: &Result{Cell: shed, SettledPerSecond: 18}, Bare: &Result{Cell: shed, SettledPerSecond: 24}}, "calls/s ÷ bare transport's (no rate quota)", 0.75},
		{"a count of calls", Row{Result: &Result{Cell: counted, Took: 3 * time.Second}, Bare: &Result{Cell: counted, Took: 2 * time.Second}}, "time ÷ bare transport's (no rate quota)", 1.5},
		{"interactive", Row{Result: classes}, "interactive p99 ÷ its goal", 2},
		{"batch", Row{Result: classes}, "batch share", 0.05},
	} {
		s := SampleOf(Options{Seed: 1}, tt.row)
		if got, ok := s.Figures[tt.figure]; !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: %s = %v, %v; want %v (figures %v)", tt.name, tt.figure, got, ok, tt.want, s.Figures)
		}
	}
	// A drop in calls a second is worse, not noise, where every run shows it.
	runs := func(x float64) []Sample {
		var ss []Sample
		for seed := range uint64(8) {
			ss = append(ss, Sample{Seed: seed + 1, Figures: map[string]float64{"calls/s ÷ bare transport's (no rate quota)": x + float64(seed)/1000}})
		}
		return ss
	}
	c := Compare(&Saved{Cells: map[string][]Sample{"shed": runs(1)}}, &Saved{Cells: map[string][]Sample{"shed": runs(0.72)}}, 0.05, 1)
	if len(c.List) != 1 || c.List[0].Verdict != Worse {
		t.Errorf("calls a second 1.00× → 0.72× of the bare transport's: %+v, want worse", c.List)
	}
}
