package shapes

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// realtimeNames are the cells of Cells that RealtimeCells runs in real
// time: the round windows, a sliding log, a token bucket, long round
// trips, an unseen consumer and three clients.
var realtimeNames = []string{
	"fixed 50/1s",
	"fixed 120/3s",
	"fixed 200/10s",
	"sliding 50/1s",
	"bucket 30/s, burst 60",
	"fixed 50/1s, 300±50 ms",
	"fixed 50/1s, unseen 20/s",
	"fixed 50/1s, 3 clients",
}

// RealtimeCells returns the cells run in real time beside their
// virtual-time twins: realtimeNames, in that order (TestRealtimeCells
// checks that each names a cell), and IETF fields on every answer at
// 10/s with 16 callers, more callers than the window's limit.
func RealtimeCells() []Cell {
	all := Cells()
	var cells []Cell
	for _, name := range realtimeNames {
		if i := slices.IndexFunc(all, func(c Cell) bool { return c.Name == name }); i >= 0 {
			cells = append(cells, all[i])
		}
	}
	return append(cells, Cell{
		Name:  "fixed 10/1s, IETF fields always, 16 callers",
		Quota: fakecloud.Quota{Limit: 10, Window: time.Second}, Callers: 16,
		Headers: fakecloud.HeadersIETFStructured, Every: true, ThrottleStatus: 429,
	})
}

// twinPoints is how far, in points of settled goodput or throttled share,
// a cell's real-time run may fall from its virtual-time twin before the
// table marks it.
const twinPoints = 2

// WriteTwins writes, for each cell run in real time (real) and in virtual
// time (twin, in the same order), their settled goodput and throttled
// share side by side, and marks the cells where either differs by more
// than two points.
func WriteTwins(w io.Writer, real, twin []Row) error {
	var b strings.Builder
	b.WriteString("| cell | settled goodput, real / virtual | settled throttled, real / virtual | p99 ÷ Little, real / virtual | failed calls, real / virtual | differs by > 2 points |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for i := range min(len(real), len(twin)) {
		r, v := real[i].Result, twin[i].Result
		differs := ""
		dg, dt := 100*(r.SettledGoodput-v.SettledGoodput), 100*(r.SettledThrottled-v.SettledThrottled)
		var what []string
		if math.Abs(dg) > twinPoints {
			what = append(what, fmt.Sprintf("goodput %+.1f", dg))
		}
		if math.Abs(dt) > twinPoints {
			what = append(what, fmt.Sprintf("throttled %+.1f", dt))
		}
		if len(what) > 0 {
			differs = strings.Join(what, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s / %s | %s / %s | %s / %s | %d / %d | %s |\n", v.Cell.Name,
			percent(r.SettledGoodput), percent(v.SettledGoodput),
			percent(r.SettledThrottled), percent(v.SettledThrottled),
			ratioString(r.P99, r.Little), ratioString(v.P99, v.Little),
			r.Failed, v.Failed, differs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ratioString is p99 ÷ Little's wait, or — where there is no Little's
// wait.
func ratioString(p99, little time.Duration) string {
	if little <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", p99.Seconds()/little.Seconds())
}
