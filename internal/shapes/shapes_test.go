package shapes

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/transport"
)

// TestPlan pins the timeline: callers start 37% into a window, the settled
// stretch starts on a window boundary three windows (at least 3 s) later
// and lasts ten windows (at least 20 s); after a step up it waits for 200
// admissions at the old quota too.
func TestPlan(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		c     Cell
		short bool
		want  plan
	}{
		{"1 s window", Cell{Quota: fakecloud.Quota{Limit: 50, Window: s}}, false,
			plan{bucket: s, begin: 370 * time.Millisecond, settled: 4 * s, end: 24 * s}},
		{"1 s window, short", Cell{Quota: fakecloud.Quota{Limit: 50, Window: s}}, true,
			plan{bucket: s, begin: 370 * time.Millisecond, settled: 4 * s, end: 9 * s}},
		{"10 s window", Cell{Quota: fakecloud.Quota{Limit: 200, Window: 10 * s}}, false,
			plan{bucket: 10 * s, begin: 3700 * time.Millisecond, settled: 40 * s, end: 140 * s}},
		{"step down", Cell{Quota: fakecloud.Quota{Limit: 50, Window: s}, Step: 0.4}, false,
			plan{bucket: s, begin: 370 * time.Millisecond, stepAt: 24 * s, settled: 27 * s, end: 47 * s}},
		// 3 s, and 200 admissions at 50/s.
		{"step up", Cell{Quota: fakecloud.Quota{Limit: 50, Window: s}, Step: 1.6}, false,
			plan{bucket: s, begin: 370 * time.Millisecond, stepAt: 24 * s, settled: 31 * s, end: 51 * s}},
		// At the first window boundary 5 s after the callers start.
		{"step down after 5 s", Cell{Quota: fakecloud.Quota{Limit: 50, Window: s}, Step: 0.4, StepAfter: 5 * s}, false,
			plan{bucket: s, begin: 370 * time.Millisecond, stepAt: 6 * s, settled: 9 * s, end: 29 * s}},
		{"no rate", Cell{NoQuota: true}, false,
			plan{bucket: s, begin: 370 * time.Millisecond, settled: 4 * s, end: 24 * s}},
	} {
		if got := tc.c.plan(tc.short); got != tc.want {
			t.Errorf("%s: plan %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestGoals pins the goals' arithmetic.
func TestGoals(t *testing.T) {
	fixed := fakecloud.Quota{Limit: 50, Window: time.Second}
	for _, tc := range []struct {
		name string
		c    Cell
		want goals
	}{
		// min(32, 25) + log2(1 s / 2 ms) + 8 ≈ 42.
		{"no headers", Cell{Quota: fixed}, goals{goodput: 0.98, throttled: 0.01, p99: 1.2, cold: 25 + math.Log2(500) + 8}},
		{"headers", Cell{Quota: fixed, Headers: fakecloud.HeadersAlibaba, Every: true}, goals{goodput: 0.99, throttled: 0.005, p99: 1.2, cold: 4}},
		{"retry-after only", Cell{Quota: fixed, Headers: fakecloud.HeadersRetryAfter, Every: true}, goals{goodput: 0.98, throttled: 0.01, p99: 1.2, cold: 25 + math.Log2(500) + 8}},
		{"jitter and 503", Cell{Quota: fixed, RTT: 25 * time.Millisecond, Faults: fakecloud.Faults{UnavailableRate: 0.05}},
			goals{goodput: 0.95, throttled: 0.01, p99: 1.2, cold: 25 + math.Log2(40) + 8}},
		{"3 clients", Cell{Quota: fixed, Clients: 3}, goals{goodput: 0.98, throttled: 0.01, p99: 1.2, cold: 32.0/3 + math.Log2(500) + 8}},
		{"step", Cell{Quota: fixed, Step: 2}, goals{goodput: 0.98, throttled: 0.01, p99: 1.2}},
		// (4 + 1) ÷ 50/s + 2 ms; no p99 goal on the whole crowd.
		{"few interactive", Cell{Quota: fixed, Callers: 68, Interactive: 4},
			goals{goodput: 0.98, throttled: 0.01, cold: 25 + math.Log2(500) + 8, interactiveP99: 102 * time.Millisecond, batchShare: 0.09, classless: 0.01}},
		{"many interactive", Cell{Quota: fixed, Callers: 68, Interactive: 64},
			goals{goodput: 0.98, throttled: 0.01, cold: 25 + math.Log2(500) + 8, batchShare: 0.09, classless: 0.01}},
		{"shedding", Cell{NoQuota: true}, goals{perSecond: 0.9}},
		{"in flight", Cell{Quota: fakecloud.Quota{Policy: fakecloud.Concurrency, Limit: 8}}, goals{perSecond: 0.9}},
	} {
		got := goalsOf(tc.c)
		if math.Abs(got.cold-tc.want.cold) > 1e-9 {
			t.Errorf("%s: cold goal %v, want %v", tc.name, got.cold, tc.want.cold)
		}
		got.cold = tc.want.cold
		if got != tc.want {
			t.Errorf("%s: goals %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestSummarize: medians column by column, sums of failures, the spread,
// and the picture of the median run.
func TestSummarize(t *testing.T) {
	run := func(goodput, throttled float64, cold int64, settle time.Duration, failed int64) *Result {
		return &Result{SettledGoodput: goodput, SettledThrottled: throttled, ColdThrottles: cold, SettleTime: settle,
			Failed: failed, Failures: map[string]int{"attempts": int(failed)}, Runs: 1,
			Series: Series{Title: "goodput " + percent(goodput)}}
	}
	s := Summarize([]*Result{
		run(0.04, 0.00, 90, -1, 1),
		run(1.00, 0.12, 130, 5*time.Second, 0),
		run(0.99, 0.02, 100, -1, 2),
	})
	if s.SettledGoodput != 0.99 || s.SettledThrottled != 0.02 || s.ColdThrottles != 100 || s.SettleTime != -1 {
		t.Errorf("medians: goodput %v throttled %v cold %v settle %v", s.SettledGoodput, s.SettledThrottled, s.ColdThrottles, s.SettleTime)
	}
	if s.Failed != 3 || s.Failures["attempts"] != 3 || s.Runs != 3 {
		t.Errorf("sums: failed %d %v runs %d", s.Failed, s.Failures, s.Runs)
	}
	if s.GoodputRange != [2]float64{0.04, 1} || s.ThrottledRange != [2]float64{0, 0.12} {
		t.Errorf("spread: %v %v", s.GoodputRange, s.ThrottledRange)
	}
	if s.Series.Title != "goodput 99.0%" {
		t.Errorf("picture from %q, want the median run's", s.Series.Title)
	}

	// Classes: each column's median, failures summed.
	classed := func(p99 time.Duration, share float64, failed int64) *Result {
		r := run(1, 0, 0, 0, 0)
		r.Classes = []ClassResult{{Priority: transport.Interactive, Callers: 4, P99: p99, Share: 1 - share, Failed: failed}, {Priority: transport.Batch, Callers: 64, Share: share}}
		return r
	}
	s = Summarize([]*Result{classed(time.Second, 0.2, 1), classed(3*time.Second, 0.1, 0), classed(2*time.Second, 0.3, 2)})
	if i, b := s.Classes[0], s.Classes[1]; i.P99 != 2*time.Second || i.Failed != 3 || i.Callers != 4 || b.Share != 0.2 || b.Callers != 64 {
		t.Errorf("classes: %+v", s.Classes)
	}
}

// TestAgree: a run whose callers and server disagree is reported.
func TestAgree(t *testing.T) {
	ok := Result{Calls: 3, okCalls: 2, server: counts{2, 1, 3}, attempts: [attemptKinds]int64{2, 1, 0}}
	if err := ok.Agree(); err != nil {
		t.Errorf("agreeing run: %v", err)
	}
	// An attempt cut by its caller's deadline, admitted by the server.
	cut := Result{Calls: 3, okCalls: 2, server: counts{3, 1, 4}, attempts: [attemptKinds]int64{2, 1, 0, 1}}
	if err := cut.Agree(); err != nil {
		t.Errorf("run with an attempt cut: %v", err)
	}
	for _, bad := range []Result{
		{Calls: 3, okCalls: 2, server: counts{3, 1, 4}, attempts: [attemptKinds]int64{2, 1, 0}},
		{Calls: 3, okCalls: 2, server: counts{2, 2, 4}, attempts: [attemptKinds]int64{2, 1, 0}},
		{Calls: 3, okCalls: 1, server: counts{2, 1, 3}, attempts: [attemptKinds]int64{2, 1, 0}},
		// One attempt cut: the server may have admitted one more, not two.
		{Calls: 3, okCalls: 2, server: counts{4, 1, 5}, attempts: [attemptKinds]int64{2, 1, 0, 1}},
		{},
	} {
		if bad.Agree() == nil {
			t.Errorf("%+v agrees", bad)
		}
	}
}

// TestWriteTable: one line per row, the misses named, "—" where none.
func TestWriteTable(t *testing.T) {
	fixed := Cell{Name: "fixed", Quota: fakecloud.Quota{Limit: 50, Window: time.Second}}
	shed := Cell{Name: "shed", NoQuota: true, Faults: fakecloud.Faults{ShedRate: 0.2}}
	rows := []Row{
		{Result: &Result{Cell: fixed, SettledGoodput: 0.999, SettledThrottled: 0.001, Little: time.Second, P99: time.Second, Runs: 1}},
		{Result: &Result{Cell: fixed, SettledGoodput: 0.5, SettledThrottled: 0.1, Little: time.Second, P99: 3 * time.Second, Failed: 2, Runs: 1}},
		{Result: &Result{Cell: shed, SettledPerSecond: 1, Runs: 1}, Bare: &Result{Cell: shed, SettledPerSecond: 20, Runs: 1}},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2+len(rows) {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for i, want := range []string{"| — |", "goodput < 98%; throttled > 1.0%; p99 > 1.2×Little; 2 failed |", "1 calls/s (bare 20/s)"} {
		if !strings.Contains(lines[2+i], want) {
			t.Errorf("row %d: %s\nwant %q", i, lines[2+i], want)
		}
	}
	if !strings.Contains(lines[4], "calls/s 5% of bare") {
		t.Errorf("shedding row misses nothing: %s", lines[4])
	}
}

// TestWriteTableClasses: a cell with classes has a line per class in the
// second table, its totals beside the classless run's, and misses the
// class goals it misses, not Little's.
func TestWriteTableClasses(t *testing.T) {
	c := Cell{Name: "classed", Quota: fakecloud.Quota{Limit: 50, Window: time.Second}, Callers: 68, Interactive: 4}
	r := &Result{Cell: c, SettledGoodput: 0.99, SettledThrottled: 0.005, Little: time.Second, P99: 10 * time.Second, Runs: 1,
		Classes: []ClassResult{
			{Priority: transport.Interactive, Callers: 4, P50: 80 * time.Millisecond, P99: 300 * time.Millisecond, Share: 0.95},
			{Priority: transport.Batch, Callers: 64, P99: 12 * time.Second, Share: 0.05, Failed: 1},
		}}
	row := Row{Result: r, Classless: &Result{Cell: c, SettledGoodput: 0.97, SettledThrottled: 0.005, Runs: 1}}
	var b bytes.Buffer
	if err := WriteTable(&b, []Row{row}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3+1+2+2 {
		t.Fatalf("%d lines, want the table, a blank line and two class lines under a header:\n%s", len(lines), b.String())
	}
	for i, want := range map[int]string{
		2: "interactive p99 > 102ms; batch share < 9%; > 1 point from classless |",
		6: "| classed | interactive | 4 | 80ms / 300ms (≤ 102ms) | 95.0% | 0 | 99.0% / 0.5% (97.0% / 0.5%) |",
		7: "| ″ | batch | 64 | 0s / 12s | 5.0% (≥ 9.0%) | 1 |  |",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant %q", i, lines[i], want)
		}
	}
}

// TestResultDemandAndShed: where the callers cannot send what the quota
// allows, goodput is judged against one request per round trip each, and
// Little's wait is the slowest round trip; throttles the server shed are
// counted apart and judged no miss.
func TestResultDemandAndShed(t *testing.T) {
	// One caller, 100 ± 20 ms round trips, on 50/s: it can send 10/s.
	c := Cell{Name: "few", Quota: fakecloud.Quota{Limit: 50, Window: time.Second}, Callers: 1,
		RTT: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Faults: fakecloud.Faults{ShedRate: 0.1}}
	start := time.Unix(1_700_000_000, 0)
	p := c.plan(true)
	rec := newRecorder(start, p)
	for i := range p.buckets() {
		at := start.Add(time.Duration(i) * time.Second)
		for range 10 {
			rec.server(fakecloud.Event{At: at, Outcome: fakecloud.Admitted})
		}
		rec.server(fakecloud.Event{At: at, Outcome: fakecloud.Shed})
	}
	r := rec.result(c)
	if r.SettledGoodput != 1 || r.Little != 120*time.Millisecond {
		t.Errorf("goodput %v, Little %v; want 100%% of 10/s, 120ms", r.SettledGoodput, r.Little)
	}
	if want := 1.0 / 11; math.Abs(r.SettledThrottled-want) > 1e-9 || math.Abs(r.SettledShed-want) > 1e-9 {
		t.Errorf("throttled %v, shed %v; want %v both", r.SettledThrottled, r.SettledShed, want)
	}
	r.Calls, r.P99 = 1, 100*time.Millisecond
	if m := r.misses(nil); len(m) != 0 {
		t.Errorf("misses %v, want none: every throttle was shed", m)
	}
}

// TestWriteWindowsTraced: a traced run of three clients keeps each
// client's learner per bucket, and WriteWindows gives each its column,
// with the phase it was in; an untraced run keeps none.
func TestWriteWindowsTraced(t *testing.T) {
	c := Cell{Name: "three", Quota: fakecloud.Quota{Limit: 50, Window: time.Second}, Clients: 3}
	var traced, plain *Result
	synctest.Test(t, func(t *testing.T) { traced = Run(c, Options{Short: true, Seed: 1, Trace: true}) })
	synctest.Test(t, func(t *testing.T) { plain = Run(c, Options{Short: true, Seed: 1}) })
	if plain.Learners != nil {
		t.Errorf("an untraced run kept %d buckets of learners", len(plain.Learners))
	}
	if len(traced.Learners) != len(traced.Series.Admitted) {
		t.Fatalf("%d buckets of learners, want one per bucket of the series (%d)", len(traced.Learners), len(traced.Series.Admitted))
	}
	var b strings.Builder
	if err := WriteWindows(&b, traced); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasSuffix(lines[0], "| client 1 | client 2 | client 3 |") {
		t.Errorf("header %q, want a column per client", lines[0])
	}
	last := lines[len(lines)-1]
	n := 0
	for _, p := range []adaptive.Phase{adaptive.PhaseCold, adaptive.PhaseMeasuring, adaptive.PhaseSettled} {
		n += strings.Count(last, " "+p.String()+": ")
	}
	if n != 3 {
		t.Errorf("last row %q gives %d clients' learners, want 3", last, n)
	}
}
