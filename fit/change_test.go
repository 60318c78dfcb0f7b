package fit

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// pacedTo sends to a fakecloud serving q, inside a synctest bubble, with
// no latency, one request every gap for length, the quota changed as
// phases say; it returns the answers as a Record does (from the first
// throttle on) and when the bubble began.
func pacedTo(t *testing.T, q fakecloud.Quota, phases []fakecloud.Phase, gap, length time.Duration) (r *Record, t0 time.Time) {
	t.Helper()
	r = new(Record)
	synctest.Test(t, func(t *testing.T) {
		q.API = "DescribeInstances"
		for i := range phases {
			for j := range phases[i].Quotas {
				phases[i].Quotas[j].API = q.API
			}
		}
		c := fakecloud.New(fakecloud.Config{Quotas: []fakecloud.Quota{q}, Phases: phases})
		rt := c.RoundTripper()
		t0 = time.Now()
		begun := false
		for time.Since(t0) < length {
			thr := !ask(t, rt)
			if begun = begun || thr; begun {
				r.Add(Answer{Sent: time.Now(), Answered: time.Now(), Throttled: thr})
			}
			time.Sleep(gap)
		}
	})
	return r, t0
}

// TestChangeAtStepDown: a sender paced at 12 a second, a fifth above a
// quota of 20 per 2 s, a fixed window or a sliding log, which falls to 8
// per 2 s at 40 s; 20 s later the record holds more answers from before
// the fall than after it, and a fit of it all does not name 8. Change, on
// the old rule, finds the change point: after the fall, within two
// windows of it. Cut there, the record shows the old rule at 8
// (Relimit), and prefers that to the old one. On the same sender without
// the fall, Change finds none: every cut it might suggest is a test a
// caller makes, and here the old rule explains the newest answers.
func TestChangeAtStepDown(t *testing.T) {
	const w = 2 * time.Second
	step := 40 * time.Second
	for _, pol := range []fakecloud.Policy{fakecloud.FixedWindow, fakecloud.SlidingWindow} {
		t.Run(pol.String(), func(t *testing.T) {
			q := fakecloud.Quota{Policy: pol, Limit: 20, Window: w}
			fell := q
			fell.Limit = 8
			old := ruleOf(q)
			if pol == fakecloud.FixedWindow {
				old.Start = time.Time{} // placed by the record (Prefers)
			}

			r, t0 := pacedTo(t, q, nil, time.Second/12, step+20*time.Second)
			if at, ok := r.Change(old); ok {
				t.Errorf("steady: a change point at %v, want none", at.Sub(t0))
			}

			r, t0 = pacedTo(t, q, []fakecloud.Phase{{At: step, Quotas: []fakecloud.Quota{fell}}}, time.Second/12, step+20*time.Second)
			if ft := r.Fit(); ft.Best.Limit == 8 {
				t.Errorf("the whole record fits %v: the test needs a record that hides the fall", ft.Best)
			}
			at, ok := r.Change(old)
			if !ok {
				t.Fatal("no change point after the fall")
			}
			if d := at.Sub(t0); d < step || d > step+2*w {
				t.Errorf("change point at %v, want within (%v, %v]", d, step, step+2*w)
			}
			r.CutBefore(at)
			k := r.Relimit(old)
			t.Logf("change point at %v; cut, %d answers left, the old rule relimits to %v", at.Sub(t0), r.Len(), k)
			if k.Limit != 8 || k.Kind != old.Kind || k.Window != w {
				t.Errorf("cut at %v, the old rule relimits to %v, want %v at 8", at.Sub(t0), k, old.Kind)
			}
			if !r.Prefers(k, old) {
				t.Errorf("cut, the record does not prefer %v to %v", k, old)
			}
		})
	}
}

// TestCutBefore: a cut keeps the answers that reached the server at or
// after the time given, oldest first, in a ring that has wrapped, and the
// record goes on from them.
func TestCutBefore(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	var r Record
	for i := range Size + 100 {
		r.Add(Answer{Sent: t0.Add(time.Duration(i) * time.Millisecond), Answered: t0.Add(time.Duration(i) * time.Millisecond), Throttled: i%10 == 0})
	}
	r.CutBefore(t0.Add(time.Duration(Size) * time.Millisecond))
	if r.Len() != 100 {
		t.Fatalf("%d answers kept, want 100", r.Len())
	}
	r.Add(Answer{Sent: t0.Add(time.Hour), Answered: t0.Add(time.Hour)})
	var got []int64
	r.each(func(e entry) { got = append(got, (e.sent-t0.UnixNano())/1e6) })
	if len(got) != 101 || got[0] != Size || got[99] != Size+99 || got[100] != 3600_000 {
		t.Fatalf("kept %d answers, from %v to %v, want 101 from %d", len(got), got[0], got[len(got)-1], Size)
	}
	r.CutBefore(t0)
	if r.Len() != 101 {
		t.Errorf("a cut before every answer left %d of 101", r.Len())
	}
	r.CutBefore(t0.Add(2 * time.Hour))
	if r.Len() != 0 {
		t.Errorf("a cut after every answer left %d", r.Len())
	}
	if ft := r.Fit(); ft.Best.Kind != None || ft.Answers != 0 {
		t.Errorf("an empty record fits %+v", ft)
	}
}

// TestChangeOddRules: Change and Relimit take any rule without a panic:
// None, or a rule that lacks what its kind needs, has no change point
// and relimits to itself; an empty record has none either.
func TestChangeOddRules(t *testing.T) {
	r, _ := pacedTo(t, fakecloud.Quota{Limit: 5, Window: time.Second}, nil, 100*time.Millisecond, 10*time.Second)
	for _, rule := range []Rule{{}, {Kind: Fixed, Limit: 5}, {Kind: Sliding, Limit: 5}, {Kind: Kind(9), Limit: 5, Window: time.Second}} {
		if _, ok := r.Change(rule); ok {
			t.Errorf("%v: a change point", rule)
		}
		if k := r.Relimit(rule); k != rule {
			t.Errorf("%v relimits to %v", rule, k)
		}
	}
	var empty Record
	if _, ok := empty.Change(Rule{Kind: Fixed, Limit: 5, Window: time.Second}); ok {
		t.Error("an empty record has a change point")
	}
}

// BenchmarkChange looks for a change point on a full record, as a
// learner does at each fit, against fixed 100/1s: where the server kept
// to it (steady: no change point, the common case), and where it fell to
// 40/1s two thirds through the record (fell: a change point, then what
// a learner does with it: a copy cut there, fitted, the rule relimited,
// and the fit's rule and the two limits judged; the learner fits the
// whole record only where it keeps no cut). The record is
// BenchmarkFit's.
func BenchmarkChange(b *testing.B) {
	rule := Rule{Kind: Fixed, Limit: 100, Window: time.Second}
	for _, c := range []struct {
		name string
		fell bool
	}{{"steady", false}, {"fell", true}} {
		fell := c.fell
		b.Run(c.name, func(b *testing.B) {
			r := benchRecord(func(reqs []Request) []bool {
				cut := len(reqs)
				if fell {
					cut = 2 * len(reqs) / 3
				}
				return append(rule.Grants(reqs[:cut]), Rule{Kind: Fixed, Limit: 40, Window: time.Second}.Grants(reqs[cut:])...)
			})
			if _, ok := r.Change(rule); ok != fell {
				b.Fatalf("change point %v, want %v", ok, fell)
			}
			b.ReportAllocs()
			for b.Loop() {
				if at, ok := r.Change(rule); ok {
					trial := *r
					trial.CutBefore(at)
					g, k := trial.Fit(), trial.Relimit(rule)
					trial.Prefers(g.Best, k)
					trial.Prefers(k, rule)
				}
			}
		})
	}
}
