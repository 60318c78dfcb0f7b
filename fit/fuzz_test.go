package fit

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// FuzzFit: any record, however odd its times (out of order, equal, far
// apart, answered before sent), fits without a panic, to a rule whose
// Limit is positive (but None's), whose window and rate are positive and
// finite where its kind has them, and whose score is not NaN; and no rule
// is preferred to itself (Prefers), the best and the runner-up neither
// both ways. A change point (Change) lies within the record, cutting
// there (CutBefore) leaves fewer answers, and a rule relimited
// (Relimit) keeps its kind and time parameters.
func FuzzFit(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 10, 1, 0, 0, 0, 2, 10, 0, 0, 0, 0, 3, 10, 1})
	f.Add(make([]byte, 6*40))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		at := time.Unix(1e9, 0)
		for len(b) >= 6 {
			step := int32(binary.BigEndian.Uint32(b))
			at = at.Add(time.Duration(step) * time.Microsecond)
			rt := time.Duration(int8(b[4])) * time.Millisecond
			r.Add(Answer{Sent: at, Answered: at.Add(rt), InFlight: int(b[5] >> 1), Throttled: b[5]&1 == 1})
			b = b[6:]
		}
		ft := r.Fit()
		for _, rule := range []Rule{ft.Best, ft.RunnerUp} {
			switch rule.Kind {
			case None:
			case Fixed, Sliding:
				if rule.Window <= 0 || rule.Limit < 1 {
					t.Fatalf("%+v", rule)
				}
			case Bucket:
				if rule.Rate <= 0 || math.IsInf(rule.Rate, 0) || math.IsNaN(rule.Rate) || rule.Limit < 1 {
					t.Fatalf("%+v", rule)
				}
			case Cap:
				if rule.Limit < 1 {
					t.Fatalf("%+v", rule)
				}
			}
		}
		if math.IsNaN(ft.Score) || math.IsNaN(ft.Others) {
			t.Fatalf("%+v", ft)
		}
		if r.Prefers(ft.Best, ft.Best) {
			t.Fatalf("%v preferred to itself", ft.Best)
		}
		if r.Prefers(ft.Best, ft.RunnerUp) && r.Prefers(ft.RunnerUp, ft.Best) {
			t.Fatalf("%v and %v each preferred to the other", ft.Best, ft.RunnerUp)
		}
		for _, rule := range []Rule{ft.Best, ft.RunnerUp} {
			if k := r.Relimit(rule); k.Kind != rule.Kind || k.Window != rule.Window || k.Rate != rule.Rate {
				t.Fatalf("%v relimited to %v", rule, k)
			}
		}
		if at, ok := r.Change(ft.Best); ok {
			n := r.Len()
			r.CutBefore(at)
			if r.Len() >= n {
				t.Fatalf("cut at a change point %v: %d answers of %d left", at, r.Len(), n)
			}
			r.Fit()
		}
	})
}
