package adaptive

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

func TestPlacesLine(t *testing.T) {
	var p places
	p.setCap(2)
	a, b := p.take(true), p.take(true)
	if a != 1 || b != 2 {
		t.Fatalf("levels %d, %d; want 1, 2", a, b)
	}
	if n := p.take(true); n != 0 {
		t.Fatalf("took level %d above the cap", n)
	}
	_, w1 := p.wait()
	_, w2 := p.wait()
	if w1 == nil || w2 == nil {
		t.Fatal("joined no line at the cap")
	}
	if n := p.take(true); n != 0 {
		t.Fatalf("took level %d past those in line", n)
	}
	p.drop(a)
	select {
	case <-w1.handed:
	default:
		t.Fatal("the first in line got no place")
	}
	select {
	case <-w2.handed:
		t.Fatal("the second in line got a place before the first")
	default:
	}
	if w1.level != 2 {
		t.Errorf("handed at level %d, want 2", w1.level)
	}
	// The first leaves after it was handed a place: it must give it back,
	// and that hands it on.
	if got := p.leave(w1); got != 2 {
		t.Fatalf("leave returned %d, want the place handed (2)", got)
	}
	p.drop(2)
	select {
	case <-w2.handed:
	default:
		t.Fatal("the place given back was not handed on")
	}
	// No cap: everyone goes.
	_, w3 := p.wait()
	if w3 == nil {
		t.Fatal("joined no line at the cap")
	}
	p.setCap(0)
	select {
	case <-w3.handed:
	default:
		t.Fatal("lifting the cap left a caller in line")
	}
	if p.waiting.Load() != 0 {
		t.Errorf("%d counted waiting, want 0", p.waiting.Load())
	}
}

// TestWaitInLineEnds: a caller in line for a place under the cap on
// requests in flight leaves it when its context ends, and the places add
// up after.
func TestWaitInLineEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{})
		l.sent.setCap(1)
		first, err := l.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if _, err := l.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait in line: %v, want the context's deadline", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("waited %v in line, want the context's 1s", d)
		}
		first.Done(quota.Observation{})
		if n, w := l.sent.out.Load(), l.sent.waiting.Load(); n != 0 || w != 0 {
			t.Errorf("%d in flight and %d waiting after all ended, want 0 and 0", n, w)
		}
		next, err := l.Wait(t.Context())
		if err != nil || next.level != 1 {
			t.Fatalf("Wait after: level %d, %v; want level 1", next.level, err)
		}
		next.Cancel()
	})
}
