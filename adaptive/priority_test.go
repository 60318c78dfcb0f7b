package adaptive

import (
	"context"
	"errors"
	"maps"
	"slices"
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
// whoever came before it, and each class in order of arrival; the
// Snapshot counts each class's callers in line, then admitted from it.
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
		checkClasses(t, l.Snapshot(), 6, [3]ClassSnapshot{{Waiting: 2}, {Waiting: 2}, {Waiting: 2}})
		if order, want := admittedOrder(t, out, 6), []string{"i1", "i2", "d1", "d2", "b1", "b2"}; !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v", order, want)
		}
		checkClasses(t, l.Snapshot(), 0, [3]ClassSnapshot{{Admitted: 2}, {Admitted: 2}, {Admitted: 2}})
	})
}

// checkClasses fails t unless sn has waiting callers in line and, for
// Interactive, Default and Batch, the counts want.
func checkClasses(t *testing.T, sn Snapshot, waiting int64, want [3]ClassSnapshot) {
	t.Helper()
	got := [3]ClassSnapshot{sn.Class(Interactive), sn.Class(Default), sn.Class(Batch)}
	if sn.Waiting != waiting || got != want {
		t.Fatalf("Snapshot: %d waiting, by class %+v; want %d, %+v", sn.Waiting, got, waiting, want)
	}
}

// admissions records which callers, by name, a Limiter admitted, in
// order.
type admissions struct {
	mu    sync.Mutex
	names []string
}

// call starts a caller of l.Wait with ctx that makes count requests (or,
// if count < 0, requests until Wait fails), each answered at once, and
// records each admission as name.
func (a *admissions) call(t *testing.T, wg *sync.WaitGroup, l *Limiter, ctx context.Context, name string, count int) {
	wg.Go(func() {
		for n := 0; count < 0 || n < count; n++ {
			tk, err := l.Wait(ctx)
			if err != nil {
				if count >= 0 {
					t.Error(err)
				}
				return
			}
			a.mu.Lock()
			a.names = append(a.names, name)
			a.mu.Unlock()
			tk.Done(ok(time.Now()))
		}
	})
}

// count returns how many of names are name.
func count(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// TestClassFloor: Interactive callers enough to take the whole quota, and
// Batch callers waiting all along: Batch gets its floor, 10% of the
// admissions (± 1 point), and at least 9 in any 100 in a row.
func TestClassFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 1}})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		var a admissions
		var wg sync.WaitGroup
		for range 8 {
			a.call(t, &wg, l, WithPriority(ctx, Interactive), "i", -1)
		}
		for range 4 {
			a.call(t, &wg, l, WithPriority(ctx, Batch), "b", -1)
		}
		wg.Wait()
		if len(a.names) < 1900 {
			t.Fatalf("%d admitted in 20 s at 100/s", len(a.names))
		}
		share := float64(count(a.names, "b")) / float64(len(a.names))
		if share < 0.09 || share > 0.11 {
			t.Errorf("Batch got %.1f%% of %d admissions, want 10%% ± 1", 100*share, len(a.names))
		}
		least := 100
		for i := 20; i+100 <= len(a.names); i++ { // from when everyone is in line
			least = min(least, count(a.names[i:i+100], "b"))
		}
		if least < 9 {
			t.Errorf("%d Batch in some 100 admissions in a row, want at least 9", least)
		}
		t.Logf("Batch: %.1f%% of %d admissions, at least %d in any 100", 100*share, len(a.names), least)
	})
}

// TestClassIdleFloorNotBanked: a class that waited for nothing while the
// others went has no floor saved up: when its callers come, they get
// their share from then on, not a burst.
func TestClassIdleFloorNotBanked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 1}})
		start := time.Now()
		var a admissions
		var wg sync.WaitGroup
		for range 4 {
			a.call(t, &wg, l, WithPriority(t.Context(), Interactive), "i", 100)
		}
		time.Sleep(2 * time.Second) // 200 Interactive admissions, no Batch waiting
		a.mu.Lock()
		before := len(a.names)
		a.mu.Unlock()
		for range 4 {
			a.call(t, &wg, l, WithPriority(t.Context(), Batch), "b", 5)
		}
		wg.Wait()
		after := a.names[before:]
		first := slices.Index(after, "b")
		if first < 5 {
			t.Fatalf("the first Batch went %d admissions after Batch came (%v since start): a floor saved up while idle", first, time.Since(start))
		}
		if n := count(after[:min(len(after), 40)], "b"); n > 5 {
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
		checkClasses(t, l.Snapshot(), 0, [3]ClassSnapshot{{Admitted: 2}, {}, {Refused: 1}})
	})
}

// TestClassLowestProbes: after a pause, the probe is sent by the first
// caller of the lowest class in line, which can best wait out a throttle;
// the higher classes go right after its answer, in their order.
func TestClassLowestProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, start := pausedForProbe()
		ctxs := classed(t, Batch, "b1", "b2")
		maps.Copy(ctxs, classed(t, Interactive, "i1"))
		out := queueUp(t, l, start, ctxs, "i1", "d1", "b1", "b2")
		order := admitEach(t, out, 4, "b1")
		if want := []string{"b1", "i1", "d1", "b2"}; !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v", order, want)
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
	for i, p := range []Priority{Interactive, Default, Batch} {
		if p.Index() != i {
			t.Fatalf("%v.Index() = %d, want %d", p, p.Index(), i)
		}
	}
}
