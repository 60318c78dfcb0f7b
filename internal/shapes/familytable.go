package shapes

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-go/tollgate/transport"
)

// figure is one column of the family's distribution: how to read it off a
// draw's row, whether a higher value is better, and its goal.
type figure struct {
	name   string
	get    func(Row) (float64, bool) // false: the figure does not apply to the draw
	higher bool                      // a higher value is better
	goal   func(Row) float64         // the draw's goal; NaN if it has none
	format func(float64) string
}

// figures are the family's distribution, in the order shown: over the
// draws with a rate quota, their settled goodput, throttled share beyond
// the server's own shedding, cold-start throttles per client over their
// budget, and p99 over Little's wait; over the draws without one, the time
// their calls took over the bare transport's (and, over the matrix's cells
// without one that run for a time rather than a count of calls, the calls
// a second they made over its); over the cells whose callers come in
// priority classes, Interactive's p99 over its goal and Batch's share;
// over every draw, failed calls (beyond the bare transport's where the
// server sheds). -compare judges a change by them, so a goal a cell is
// held to and no figure here reads is one a change can miss unseen.
var figures = []figure{
	{
		name:   "settled goodput",
		get:    func(r Row) (float64, bool) { return r.Result.SettledGoodput, r.Result.Cell.rated() },
		higher: true,
		goal:   func(r Row) float64 { return goalsOf(r.Result.Cell).goodput },
		format: percent,
	},
	{
		name: "settled throttled, beyond shedding",
		get: func(r Row) (float64, bool) {
			return r.Result.SettledThrottled - r.Result.SettledShed, r.Result.Cell.rated()
		},
		goal:   func(r Row) float64 { return goalsOf(r.Result.Cell).throttled },
		format: percent,
	},
	{
		name: "cold-start throttles ÷ budget",
		get: func(r Row) (float64, bool) {
			c, g := r.Result.Cell, goalsOf(r.Result.Cell)
			if !c.rated() || g.cold <= 0 {
				return 0, false
			}
			return float64(r.Result.ColdThrottles-r.Result.ColdShed) / float64(c.clients()) / g.cold, true
		},
		goal:   func(Row) float64 { return 1 },
		format: times,
	},
	{
		name: "p99 ÷ Little",
		get: func(r Row) (float64, bool) {
			res := r.Result
			return float64(res.P99) / float64(res.Little), res.Little > 0 && res.P99 > 0
		},
		goal:   func(r Row) float64 { return orNaN(goalsOf(r.Result.Cell).p99) },
		format: times,
	},
	{
		name: "time ÷ bare transport's (no rate quota)",
		get: func(r Row) (float64, bool) {
			if r.Result.Cell.Calls == 0 || r.Bare == nil || r.Bare.Took <= 0 {
				return 0, false
			}
			return float64(r.Result.Took) / float64(r.Bare.Took), true
		},
		goal:   func(r Row) float64 { return orNaN(goalsOf(r.Result.Cell).took) },
		format: times,
	},
	{
		name: "calls/s ÷ bare transport's (no rate quota)",
		get: func(r Row) (float64, bool) {
			c := r.Result.Cell
			if c.rated() || c.Calls != 0 || r.Bare == nil || r.Bare.SettledPerSecond <= 0 {
				return 0, false
			}
			return r.Result.SettledPerSecond / r.Bare.SettledPerSecond, true
		},
		higher: true,
		goal:   func(r Row) float64 { return orNaN(goalsOf(r.Result.Cell).perSecond) },
		format: times,
	},
	{
		name: "interactive p99 ÷ its goal",
		get: func(r Row) (float64, bool) {
			cr, ok := r.class(transport.Interactive)
			g := goalsOf(r.Result.Cell).interactiveP99
			return float64(cr.P99) / float64(g), ok && g > 0 && cr.P99 > 0
		},
		goal:   func(Row) float64 { return 1 },
		format: times,
	},
	{
		name: "batch share",
		get: func(r Row) (float64, bool) {
			cr, ok := r.class(transport.Batch)
			return cr.Share, ok && goalsOf(r.Result.Cell).batchShare > 0
		},
		higher: true,
		goal:   func(r Row) float64 { return orNaN(goalsOf(r.Result.Cell).batchShare) },
		format: percent,
	},
	{
		name:   "failed calls",
		get:    func(r Row) (float64, bool) { return float64(failedBeyondBare(r)), true },
		goal:   func(Row) float64 { return 0 },
		format: func(x float64) string { return fmt.Sprintf("%.0f", x) },
	},
}

// class returns the result of r's callers of priority p, and whether
// they have one.
func (r Row) class(p transport.Priority) (ClassResult, bool) {
	for _, cr := range r.Result.Classes {
		if cr.Priority == p {
			return cr, true
		}
	}
	return ClassResult{}, false
}

// orNaN returns x, or NaN if x is 0: a goal of goals that is not set.
func orNaN(x float64) float64 {
	if x == 0 {
		return math.NaN()
	}
	return x
}

// failedBeyondBare returns r's failed calls, less the bare transport's
// where the server sheds load (throttles retry.Do alone cannot always
// absorb either).
func failedBeyondBare(r Row) int64 {
	n := r.Result.Failed
	if r.Result.Cell.sheds() && r.Bare != nil {
		n = max(0, n-r.Bare.Failed)
	}
	return n
}

// times formats a ratio, e.g. "1.35×".
func times(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", x)
}

// shortfall is how far a draw falls from its goals, to rank the worst: in
// points, what its settled goodput lacks and its throttled share (beyond
// shedding) exceeds, or what its calls per second lack beside the bare
// transport's goal where it has no rate quota; plus the share of its calls
// that failed (beyond the bare transport's).
func shortfall(r Row) float64 {
	res, g := r.Result, goalsOf(r.Result.Cell)
	s := 0.0
	if res.Cell.rated() {
		s += max(0, g.goodput-res.SettledGoodput) + max(0, res.SettledThrottled-res.SettledShed-g.throttled)
	} else if r.Bare != nil && res.Took > 0 && g.took > 0 {
		s += max(0, 1-g.took*float64(r.Bare.Took)/float64(res.Took))
	}
	if res.Calls > 0 {
		s += float64(failedBeyondBare(r)) / float64(res.Calls)
	}
	return 100 * s
}

// worstDraws is how many of the worst draws WriteFamily lists.
const worstDraws = 10

// WriteFamily writes, for rows that are draws of the family (one run of
// each, with its bare run where it has no rate quota), the distribution
// of each figure over the draws (its median, the 10th percentile from the
// worst end, and the worst) with how many draws miss its goal; then the
// worst draws, ranked by shortfall, with their parameters.
func WriteFamily(w io.Writer, rows []Row) error {
	var b strings.Builder
	meet := 0
	for _, r := range rows {
		if len(r.Misses()) == 0 {
			meet++
		}
	}
	fmt.Fprintf(&b, "%d draws; %d meet every goal.\n\n", len(rows), meet)
	b.WriteString("| figure | draws | median | 10th percentile, from the worst | worst | draws missing the goal |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, f := range figures {
		var xs []float64
		miss := 0
		for _, r := range rows {
			x, ok := f.get(r)
			if !ok || math.IsNaN(x) {
				continue
			}
			xs = append(xs, x)
			if goal := f.goal(r); f.higher && x < goal || !f.higher && x > goal {
				miss++ // false if goal is NaN
			}
		}
		if len(xs) == 0 {
			continue
		}
		// Sorted from the worst.
		slices.Sort(xs)
		if !f.higher {
			slices.Reverse(xs)
		}
		at := func(p float64) float64 { return xs[min(int(p*float64(len(xs))), len(xs)-1)] }
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d |\n", f.name, len(xs), f.format(at(0.5)), f.format(at(0.1)), f.format(xs[0]), miss)
	}

	writeKinds(&b, rows)

	worst := slices.Clone(rows)
	slices.SortStableFunc(worst, func(a, b Row) int { return cmp.Compare(shortfall(b), shortfall(a)) })
	worst = worst[:min(worstDraws, len(worst))]
	b.WriteString("\nThe worst draws, by points short of the goodput goal, over the throttled goal, and of calls failed:\n\n")
	b.WriteString("| draw | server and load | settled goodput | settled throttled (shed) | cold (budget) | p50 / p99 (Little) | failed calls | shortfall | misses |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range worst {
		res := r.Result
		c, g := res.Cell, goalsOf(res.Cell)
		seed, params, _ := strings.Cut(strings.TrimPrefix(c.Name, "draw "), ": ")
		goodput := percent(res.SettledGoodput)
		if !c.rated() {
			goodput = fmt.Sprintf("%d calls in %s", c.Calls, durationString(res.Took))
			if r.Bare != nil {
				goodput += fmt.Sprintf(" (bare %s)", durationString(r.Bare.Took))
			}
		}
		throttled := percent(res.SettledThrottled)
		if res.SettledShed > 0 {
			throttled += " (" + percent(res.SettledShed) + ")"
		}
		cold := fmt.Sprint(res.ColdThrottles)
		if g.cold > 0 {
			cold += fmt.Sprintf(" (%.0f)", g.cold*float64(c.clients()))
		}
		latency := durationString(res.P50) + " / " + durationString(res.P99)
		if res.Little > 0 {
			latency += " (" + durationString(res.Little) + ")"
		}
		failed := fmt.Sprint(res.Failed)
		if r.Bare != nil {
			failed += fmt.Sprintf(" (bare %d)", r.Bare.Failed)
		}
		misses := strings.Join(r.Misses(), "; ")
		if misses == "" {
			misses = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n", seed, params, goodput, throttled, cold, latency, failed, shortfall(r), misses)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// kinds split the family's draws with a rate quota by what decides how a
// client learns its quota: whether the server says it on every answer,
// and whether the client spends it alone or with others (processes
// without a store). WriteFamily gives each kind's share of the misses.
var kinds = []struct {
	name string
	of   func(Cell) bool
}{
	{"one client, no rate-limit header", func(c Cell) bool { return c.clients() == 1 && !c.headersEvery() }},
	{"one client, headers on every answer", func(c Cell) bool { return c.clients() == 1 && c.headersEvery() }},
	{"2–4 clients, no rate-limit header", func(c Cell) bool { return c.clients() > 1 && !c.headersEvery() }},
	{"2–4 clients, headers on every answer", func(c Cell) bool { return c.clients() > 1 && c.headersEvery() }},
}

// writeKinds writes, per kind of draw with a rate quota, how many there
// are, their median settled goodput and throttled share (beyond
// shedding), and how many meet both goals.
func writeKinds(b *strings.Builder, rows []Row) {
	b.WriteString("\nBy kind of draw (those with a rate quota):\n\n")
	b.WriteString("| kind | draws | median settled goodput | median settled throttled, beyond shedding | draws meeting both |\n")
	b.WriteString("|---|---|---|---|---|\n")
	good, thr := figures[0], figures[1]
	for _, k := range kinds {
		var gs, ts []float64
		meet := 0
		for _, r := range rows {
			c := r.Result.Cell
			if !c.rated() || !k.of(c) {
				continue
			}
			g, _ := good.get(r)
			t, _ := thr.get(r)
			gs, ts = append(gs, g), append(ts, t)
			if g >= good.goal(r) && t <= thr.goal(r) {
				meet++
			}
		}
		if len(gs) == 0 {
			continue
		}
		slices.Sort(gs)
		slices.Sort(ts)
		fmt.Fprintf(b, "| %s | %d | %s | %s | %d |\n", k.name, len(gs), percent(median(gs)), percent(median(ts)), meet)
	}
}

// WriteWindows writes one run window by window, as text: what the server
// admitted, throttled and allowed, and the learner's estimate, per bucket
// of the run's series; the picture -draw prints beside its SVG. Where the
// run was traced (Options.Trace), a column per client gives its learner at
// the bucket's end: its phase, then the estimate column's figures.
func WriteWindows(w io.Writer, r *Result) error {
	s := r.Series
	var b strings.Builder
	clients := 0
	if len(r.Learners) > 0 {
		clients = len(r.Learners[0])
	}
	b.WriteString("| from | admitted | throttled | quota | learner's estimate |")
	for k := range clients {
		fmt.Fprintf(&b, " client %d |", k+1)
	}
	b.WriteString("\n|---|---|---|---|---|" + strings.Repeat("---|", clients) + "\n")
	for i := range s.Admitted {
		est := "—"
		if i < len(s.Estimate) && !math.IsNaN(s.Estimate[i]) {
			est = fmt.Sprintf("%.1f", s.Estimate[i])
		}
		quota := "—"
		if i < len(s.Quota) && !math.IsNaN(s.Quota[i]) {
			quota = fmt.Sprintf("%.1f", s.Quota[i])
		}
		fmt.Fprintf(&b, "| %v | %d | %d | %s | %s |", time.Duration(i)*s.Bucket, s.Admitted[i], s.Throttled[i], quota, est)
		for k := range clients {
			sn := r.Learners[i][k]
			fmt.Fprintf(&b, " %v: %s |", sn.Phase, snapshotString(sn))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
