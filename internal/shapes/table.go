package shapes

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/fit"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/transport"
)

// Row is one cell's runs: through tollgate; over the bare transport where
// the cell asks for a baseline (else nil); with every caller Default where
// the cell has priority classes (else nil).
type Row struct {
	Result    *Result
	Bare      *Result
	Classless *Result
}

// WriteTable writes rows as a Markdown table, one line per cell, with the
// goals each misses in the last column; then, if any cell has priority
// classes, a second table, one line per class of those cells.
func WriteTable(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| cell | throttles before settled (goal) | time to settle | settled goodput | settled throttled | whole run goodput / throttled | failed calls | nonces reused | p50 / p99 (Little) | learner's estimate (truth) | misses |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		r := row.Result
		c, g := r.Cell, goalsOf(r.Cell)
		cells := []string{c.Name}
		if c.rated() {
			cold := fmt.Sprint(r.ColdThrottles)
			if g.cold > 0 {
				cold += fmt.Sprintf(" (%.0f)", g.cold*float64(c.clients()))
			}
			cells = append(cells, cold, settleString(r.SettleTime),
				percent(r.SettledGoodput)+spread(r.GoodputRange, r.Runs), percent(r.SettledThrottled)+spread(r.ThrottledRange, r.Runs),
				percent(r.RunGoodput)+" / "+percent(r.RunThrottled))
		} else {
			perSecond := fmt.Sprintf("%.0f calls/s", r.SettledPerSecond)
			if row.Bare != nil {
				perSecond += fmt.Sprintf(" (bare %.0f/s)", row.Bare.SettledPerSecond)
			}
			if c.Calls > 0 {
				perSecond = fmt.Sprintf("%d calls in %s", c.Calls, durationString(r.Took))
				if row.Bare != nil {
					perSecond += fmt.Sprintf(" (bare %s)", durationString(row.Bare.Took))
				}
			}
			cells = append(cells, fmt.Sprint(r.ColdThrottles), "—", perSecond, percent(r.SettledThrottled),
				"— / "+percent(r.RunThrottled))
		}
		failed := fmt.Sprint(r.Failed)
		if row.Bare != nil {
			failed += fmt.Sprintf(" (bare %d)", row.Bare.Failed)
		}
		if reasons := reasonsString(r.Failures); reasons != "" {
			failed += ": " + reasons
		}
		latency := durationString(r.P50) + " / " + durationString(r.P99)
		if r.Little > 0 {
			latency += " (" + durationString(r.Little) + ")"
		}
		misses := strings.Join(row.Misses(), "; ")
		if misses == "" {
			misses = "—"
		}
		cells = append(cells, failed, fmt.Sprint(r.Replays), latency, estimateString(r)+" ("+truthString(r)+")", misses)
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	writeClasses(&b, rows)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeClasses writes the table of the priority classes of the rows that
// have them, if any: each class's latency and share of the admissions,
// and the cell's settled goodput and throttled share beside those of the
// same load without classes.
func writeClasses(b *strings.Builder, rows []Row) {
	head := false
	for _, row := range rows {
		r := row.Result
		g := goalsOf(r.Cell)
		for i, cr := range r.Classes {
			if !head {
				b.WriteString("\n| cell | class | callers | p50 / p99 (goal) | share of admissions (goal) | failed calls | settled goodput / throttled (without classes) |\n")
				b.WriteString("|---|---|---|---|---|---|---|\n")
				head = true
			}
			latency := durationString(cr.P50) + " / " + durationString(cr.P99)
			shareOf := percent(cr.Share)
			switch cr.Priority {
			case transport.Interactive:
				if g.interactiveP99 > 0 {
					latency += " (≤ " + durationString(g.interactiveP99) + ")"
				}
			case transport.Batch:
				shareOf += " (≥ " + percent(g.batchShare) + ")"
			}
			name, totals := "″", ""
			if i == 0 {
				name = r.Cell.Name
				totals = percent(r.SettledGoodput) + " / " + percent(r.SettledThrottled)
				if u := row.Classless; u != nil {
					totals += " (" + percent(u.SettledGoodput) + " / " + percent(u.SettledThrottled) + ")"
				}
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %d | %s |\n", name, cr.Priority, cr.Callers, latency, shareOf, cr.Failed, totals)
		}
	}
}

// percent formats a share as a percentage, "—" if it is not a number.
func percent(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// spread formats the range of a share over several runs, or nothing for
// one run.
func spread(r [2]float64, runs int) string {
	if runs < 2 {
		return ""
	}
	return " (" + percent(r[0]) + "–" + percent(r[1]) + ")"
}

// settleString formats a time to settle; -1 is "never".
func settleString(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return durationString(d)
}

// durationString rounds d for a table: milliseconds under 10 s, tenths
// of seconds above.
func durationString(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// reasonsString lists failure reasons with counts, most first.
func reasonsString(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var kvs []kv
	for k, n := range m {
		kvs = append(kvs, kv{k, n})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].n > kvs[j].n || kvs[i].n == kvs[j].n && kvs[i].k < kvs[j].k })
	var parts []string
	for _, e := range kvs {
		parts = append(parts, fmt.Sprintf("%d %s", e.n, e.k))
	}
	return strings.Join(parts, ", ")
}

// estimateString is what the learner believed at the end: a limit per
// window if it keeps one, else the pace it spaces requests at.
func estimateString(r *Result) string {
	if !r.HasEstimate {
		return "none"
	}
	return snapshotString(r.Estimate)
}

// snapshotString is a learner's state as the table's estimate column
// shows it.
func snapshotString(sn adaptive.Snapshot) string {
	var s string
	switch {
	case sn.Limit > 0 && sn.Window > 0:
		s = fmt.Sprintf("%d/%v", sn.Limit, sn.Window)
		if sn.Rate > 0 {
			s += " at " + rateString(sn.Rate)
		}
	case sn.Rate > 0:
		s = rateString(sn.Rate)
	default:
		s = "no limit"
	}
	if sn.InFlightLimit > 0 {
		s += fmt.Sprintf(", %d in flight", sn.InFlightLimit)
	}
	s += ", " + sn.Source.String()
	if sn.SaidShare < 1 {
		s += fmt.Sprintf(", our share %.0f%%", 100*sn.SaidShare)
	}
	if sn.PacedByFit {
		s += ", paced by the fit"
		if sn.PacedBy.Kind == fit.Bucket {
			s += "'s " + sn.PacedBy.String()
		}
	}
	return s + fitString(sn.Fit)
}

// fitString is the family fitted to the learner's record (package fit):
// the best rule, then its runner-up, and Ô where someone else spends.
// Empty where the learner kept no record.
func fitString(f fit.Fit) string {
	if f.Answers == 0 {
		return ""
	}
	s := "; fit " + f.Best.String()
	if f.Others > 0 {
		s += fmt.Sprintf(", Ô %.3g", f.Others)
	}
	if f.RunnerUp != f.Best {
		s += ", then " + f.RunnerUp.String()
	}
	return s
}

// rateString formats a rate per second with three significant digits,
// or none after the point from 100 up.
func rateString(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f/s", r)
	}
	return fmt.Sprintf("%.3g/s", r)
}

// truthString is the server's quota at the end of the run, and what the
// callers took from an unseen consumer.
func truthString(r *Result) string {
	c := r.Cell
	if c.NoQuota {
		return "no quota"
	}
	q := c.Quota
	q.Limit = c.limit(true)
	s := quotaString(q)
	if q.Unseen > 0 && q.Policy != fakecloud.Concurrency {
		s += fmt.Sprintf(", %d left; %s of the unseen consumer's requests throttled", q.Limit-q.Unseen, percent(r.UnseenThrottled))
	}
	return s
}
