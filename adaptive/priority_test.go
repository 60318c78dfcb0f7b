package adaptive

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// classed returns contexts of the given class for names.
func classed(t *testing.T, p Priority, names ...string) map[string]context.Context {
	m := map[string]context.Context{}
	for _, n := range names {
		m[n] = WithPriority(t.Context(), p)
	}
	return m
}

// TestClassesStrictOrder: with no floor, a higher class goes first,
// whoever came before it, and each class in order of arrival.
func TestClassesStrictOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 1}, PriorityFloor: -1})
		start := time.Now()
		if _, err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctxs := classed(t, Batch, "b1", "b2")
		maps.Copy(ctxs, classed(t, Interactive, "i1", "i2"))
		out := queueUp(t, l, start, ctxs, "b1", "d1", "b2", "i1", "d2", "i2")
		var order []string
		for range 6 {
			r := <-out
			if r.err != nil {
				t.Fatalf("%s: %v", r.name, r.err)
			}
			order = append(order, r.name)
		}
		if want := []string{"i1", "i2", "d1", "d2", "b1", "b2"}; !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v", order, want)
		}
	})
}

// TestClassFloor: Interactive callers enough to take the whole quota, and
// Batch callers waiting all along: Batch gets its floor, 10% of the
// admissions (± 1 point), and at least 9 in any 100 in a row; the
// Interactive callers go in order of arrival among themselves.
func TestClassFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 1}})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		var mu sync.Mutex
		var admitted []Priority
		var wg sync.WaitGroup
		for i := range 12 {
			p := Interactive
			if i%3 == 0 {
				p = Batch // 4 of 12
			}
			cctx := WithPriority(ctx, p)
			wg.Go(func() {
				for {
					tk, err := l.Wait(cctx)
					if err != nil {
						return
					}
					mu.Lock()
					admitted = append(admitted, p)
					mu.Unlock()
					tk.Done(ok(time.Now()))
				}
			})
		}
		wg.Wait()
		if len(admitted) < 1900 {
			t.Fatalf("%d admitted in 20 s at 100/s", len(admitted))
		}
		batch := 0
		for _, p := range admitted {
			if p == Batch {
				batch++
			}
		}
		if share := float64(batch) / float64(len(admitted)); share < 0.09 || share > 0.11 {
			t.Errorf("Batch got %.1f%% of %d admissions, want 10%% ± 1", 100*share, len(admitted))
		}
		for i := 20; i+100 <= len(admitted); i++ { // from when everyone is in line
			n := 0
			for _, p := range admitted[i : i+100] {
				if p == Batch {
					n++
				}
			}
			if n < 9 {
				t.Fatalf("admissions %d to %d: %d Batch, want at least 9", i, i+100, n)
			}
		}
	})
}

// TestClassIdleFloorNotBanked: a class that waited for nothing while the
// others went has no floor saved up: when its callers come, they get
// their share from then on, not a burst.
func TestClassIdleFloorNotBanked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 1}})
		start := time.Now()
		var mu sync.Mutex
		var admitted []string
		var wg sync.WaitGroup
		run := func(ctx context.Context, name string, n int) {
			wg.Go(func() {
				for range n {
					tk, err := l.Wait(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					admitted = append(admitted, name)
					mu.Unlock()
					tk.Done(ok(time.Now()))
				}
			})
		}
		for range 4 {
			run(WithPriority(t.Context(), Interactive), "i", 100)
		}
		time.Sleep(2 * time.Second) // 200 Interactive admissions, no Batch waiting
		mu.Lock()
		before := len(admitted)
		mu.Unlock()
		for range 4 {
			run(WithPriority(t.Context(), Batch), "b", 5)
		}
		wg.Wait()
		after := admitted[before:]
		first := slices.Index(after, "b")
		if first < 5 {
			t.Fatalf("the first Batch went %d admissions after Batch came (%v since start): a floor saved up while idle", first, time.Since(start))
		}
		if n := strings.Count(strings.Join(after[:min(len(after), 40)], ""), "b"); n > 5 {
			t.Fatalf("%d Batch in the 40 admissions after it came, want about 4", n)
		}
	})
}

// TestClassOvertakenRefused: a Batch caller whose deadline its place
// could meet is refused at once when Interactive callers go in ahead of it
// and push its estimate past the deadline.
func TestClassOvertakenRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 1, Burst: 1}})
		start := time.Now()
		if _, err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(WithPriority(t.Context(), Batch), 2500*time.Millisecond)
		defer cancel()
		out := queueUp(t, l, start, map[string]context.Context{"b": short}, "b") // due at 1 s
		i1 := queueUp(t, l, start, classed(t, Interactive, "i1"), "i1")
		select {
		case r := <-out:
			t.Fatalf("b refused with one ahead (due at 2 s, deadline 2.5 s): %v", r.err)
		default:
		}
		at := time.Since(start)
		i2 := queueUp(t, l, start, classed(t, Interactive, "i2"), "i2")
		r := <-out
		var we *WaitError
		if !errors.As(r.err, &we) || r.at != at {
			t.Fatalf("b: %v at %v, want a *WaitError at once, at %v", r.err, r.at, at)
		}
		for _, c := range []<-chan result{i1, i2} {
			if r := <-c; r.err != nil {
				t.Fatalf("%s: %v", r.name, r.err)
			}
		}
	})
}

// TestPriorityFromContext: the class travels in the context, Default when
// none is set, and names itself.
func TestPriorityFromContext(t *testing.T) {
	if p := PriorityFrom(t.Context()); p != Default {
		t.Fatalf("no class set: %v", p)
	}
	for _, p := range []Priority{Interactive, Default, Batch} {
		if got := PriorityFrom(WithPriority(t.Context(), p)); got != p {
			t.Fatalf("set %v, got %v", p, got)
		}
	}
	if s := Priority(5).String() + Priority(-7).String(); s != "interactivebatch" {
		t.Fatalf("out of range classes name themselves %q", s)
	}
}
