package window

import (
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestCountConservative(t *testing.T) {
	w := New(time.Second, 10) // 100 ms buckets, ring of 11
	w.Add(at(50), 3)          // bucket [0,100)
	w.Add(at(150), 2)         // bucket [100,200)
	steps := []struct {
		ms   int
		want int64
	}{
		{150, 5},
		{999, 5},
		{1050, 5}, // bucket [0,100) still overlaps (50,1050]
		{1099, 5},
		{1100, 2}, // [0,100) is now entirely older than the window
		{1199, 2},
		{1200, 0},
		{40, 5}, // a time behind the newest bucket counts everything newer
	}
	for _, s := range steps {
		if got := w.Count(at(s.ms)); got != s.want {
			t.Errorf("Count(%d ms) = %d, want %d", s.ms, got, s.want)
		}
	}
}

func TestTryAddAndNextFree(t *testing.T) {
	w := New(time.Second, 10)
	for i := range 5 {
		if !w.TryAdd(at(i*100), 1, 5) {
			t.Fatalf("TryAdd #%d refused", i)
		}
	}
	if w.TryAdd(at(500), 1, 5) {
		t.Fatal("TryAdd past the limit admitted")
	}
	// The event at 0 ms leaves the window at 1100 ms.
	if got, want := w.NextFree(at(500), 1, 5), at(1100); !got.Equal(want) {
		t.Fatalf("NextFree = %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if got, want := w.NextFree(at(500), 3, 5), at(1300); !got.Equal(want) {
		t.Fatalf("NextFree(n=3) = %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if got := w.NextFree(at(500), 0, 5); !got.Equal(at(500)) {
		t.Fatalf("NextFree(n=0) = %v, want now", got.Sub(t0))
	}
	if w.TryAdd(at(1099), 1, 5) {
		t.Fatal("TryAdd at 1099 ms admitted")
	}
	if !w.TryAdd(at(1100), 1, 5) {
		t.Fatal("TryAdd at 1100 ms refused")
	}
	if w.TryAdd(at(1100), 1, 5) {
		t.Fatal("second TryAdd at 1100 ms admitted")
	}
	if w.TryAdd(at(2000), 6, 5) {
		t.Fatal("TryAdd of more than the limit admitted")
	}
	if w.Count(at(5000)) != 0 || !w.NextFree(at(5000), 5, 5).Equal(at(5000)) {
		t.Fatal("window not empty after a long idle")
	}
}

func TestZeroAndSaturation(t *testing.T) {
	var z Window
	z.Add(at(0), 5)
	if z.Count(at(0)) != 0 || !z.TryAdd(at(0), 3, 3) || z.TryAdd(at(0), 4, 3) || !z.NextFree(at(0), 1, 1).Equal(at(0)) {
		t.Fatal("zero Window misbehaves")
	}
	w := New(time.Second, 1)
	w.Add(at(0), MaxCount)
	w.Add(at(0), 10)
	if got := w.Count(at(0)); got != MaxCount {
		t.Fatalf("saturated Count = %d", got)
	}
	if w.TryAdd(at(0), 1, 1<<40) {
		t.Fatal("TryAdd past MaxCount admitted")
	}
	if w.Len() != time.Second || w.Width() != time.Second {
		t.Fatal("Len/Width")
	}
	if w := New(time.Millisecond, 100); w.Width() != MinWidth || w.Len() != time.Millisecond {
		t.Fatalf("MinWidth not applied: %v %v", w.Width(), w.Len())
	}
}

// TestTryAddConcurrentNeverOver hammers one Window from many goroutines with
// a shared clock and checks, from the admitted timestamps, that no interval
// of one window length ever held more than the limit.
func TestTryAddConcurrentNeverOver(t *testing.T) {
	const (
		limit   = 37
		workers = 16
		perG    = 4000
	)
	w := New(100*time.Millisecond, 7) // odd resolution on purpose
	var clock atomic.Int64            // ns since t0
	var mu sync.Mutex
	var admitted []int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			var mine []int64
			for i := range perG {
				ns := clock.Add(int64(37*time.Microsecond + time.Duration(g*i%5)*time.Microsecond))
				if w.TryAdd(t0.Add(time.Duration(ns)), 1, limit) {
					mine = append(mine, ns)
				}
			}
			mu.Lock()
			admitted = append(admitted, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	W := int64(w.Len())
	worst, j := 0, 0
	for i := range admitted {
		for admitted[i]-admitted[j] >= W {
			j++
		}
		worst = max(worst, i-j+1)
	}
	if worst > limit {
		t.Fatalf("%d events in one window, limit %d", worst, limit)
	}
	// The window must also not be needlessly strict: the clock ran for many
	// windows, each should have admitted close to the limit.
	windows := float64(clock.Load()) / float64(W)
	if got := float64(len(admitted)) / windows; got < 0.8*limit {
		t.Fatalf("only %.1f events per window, limit %d", got, limit)
	}
	t.Logf("%d admitted over %.0f windows; worst window %d (limit %d)", len(admitted), windows, worst, limit)
}

// TestSameInstantExact checks that concurrent callers at one instant admit
// exactly limit events.
func TestBehindTheNewestBucket(t *testing.T) {
	w := New(time.Second, 10) // 100 ms buckets
	w.Add(at(0), 3)           // bucket 0
	w.Add(at(1150), 1)        // bucket 11, the newest: its window starts at bucket 1
	// A call at 1050 ms (bucket 10, one behind) has a window that still
	// holds bucket 0: it must see those 3.
	if w.TryAdd(at(1050), 1, 4) {
		t.Fatal("admitted: bucket 0 not counted for a call one bucket behind")
	}
	if !w.TryAdd(at(1050), 1, 5) {
		t.Fatal("refused within the limit")
	}
	if w.TryAdd(at(950), 1, 100) {
		t.Fatal("admitted a call two buckets behind")
	}
}

func TestSameInstantExact(t *testing.T) {
	w := New(time.Second, 10)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if w.TryAdd(at(7), 1, 500) {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n.Load() != 500 || w.Count(at(7)) != 500 {
		t.Fatalf("admitted %d, count %d, want 500", n.Load(), w.Count(at(7)))
	}
}

// TestFixedWindowServer: a client keeping to a Window of L per W never
// overruns a server counting L per W in fixed windows at any phase.
func TestFixedWindowServer(t *testing.T) {
	const L = 10
	w := New(time.Second, 4)
	var sent []int
	for ms := 0; ms < 10000; ms += 3 {
		if w.TryAdd(at(ms), 1, L) {
			sent = append(sent, ms)
		}
	}
	for phase := 0; phase < 1000; phase += 50 {
		counts := map[int]int{}
		for _, ms := range sent {
			counts[(ms+phase)/1000]++
		}
		for win, c := range counts {
			if c > L {
				t.Fatalf("phase %d window %d: %d > %d", phase, win, c, L)
			}
		}
	}
}

// TestNarrowWindowAgrees checks, on windows whose buckets are a
// millisecond wide (bucket numbers near today's Unix milliseconds, where an
// empty ring slot read as an epoch seems newer than any real one), that
// TryAdd refuses only when NextFree says the window has no room now. A
// retire that
// took empty slots for newer buckets lost their counts: TryAdd refused on
// its cached sum while NextFree, reading the ring, said there was room.
func TestNarrowWindowAgrees(t *testing.T) {
	const limit = 43
	for seed := range 500 {
		r := rand.New(rand.NewSource(int64(seed)))
		start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
		w := New(8*time.Millisecond, 64)
		now := start
		for i := range 300 {
			now = now.Add(time.Duration(r.Intn(3000)) * time.Microsecond)
			if r.Intn(4) == 0 {
				w.Add(now, r.Intn(limit))
				continue
			}
			if w.TryAdd(now, 1, limit) {
				continue
			}
			if free := w.NextFree(now, 1, limit); !free.After(now) {
				t.Fatalf("seed %d, step %d: TryAdd refused, NextFree says free now (count %d)", seed, i, w.Count(now))
			}
		}
	}
}
