package adaptive

import "testing"

// feed gives f n answers at level, throttled or not, with strays common,
// each sent alone, and counts them.
func feed(f *flight, level int64, n int, throttled bool) {
	for range n {
		f.answer(f.next(), level, throttled, true)
	}
	f.flush(true)
}

// next returns an admission time one flightInstant after the last.
func (f *flight) next() int64 {
	at := int64(0)
	for _, b := range f.pend {
		at = max(at, b.key*flightInstant)
	}
	return at
}

// flush counts every burst held.
func (f *flight) flush(strays bool) {
	for i := range f.pend {
		f.count(&f.pend[i], strays)
		f.pend[i] = flightBurst{}
	}
}

// TestFlightFindsCap: answers that split at 8 (none throttled up to it,
// most above) make the cap 8.
func TestFlightFindsCap(t *testing.T) {
	var f flight
	for level := int64(1); level <= 8; level++ {
		feed(&f, level, 40, false)
	}
	// Above 8 most are throttled, some get through (answers on their way
	// back are still counted in flight).
	feed(&f, 9, 10, false)
	feed(&f, 9, 10, true)
	feed(&f, 10, 12, true)
	if f.limit != 8 || f.cap() != 8 {
		t.Fatalf("N̂ = %d, cap %d; want 8", f.limit, f.cap())
	}
}

// TestFlightNoCapWithoutSplit: throttles spread over every level, or a
// split where strays are not common, make no cap.
func TestFlightNoCapWithoutSplit(t *testing.T) {
	tests := []struct {
		name   string
		strays bool
		every  int // one answer in every is throttled, at any level
	}{
		{"shedding at every level", true, 5},
		{"rare throttles at every level", true, 100},
		{"strays not common", false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flight
			for i := range 4000 {
				level := int64(i%16 + 1)
				f.answer(f.next(), level, i%tt.every == 0, tt.strays)
			}
			// Without strays a split at 8 must not make a cap either.
			for level := int64(1); level <= 8 && !tt.strays; level++ {
				for range 40 {
					f.answer(f.next(), level, false, false)
				}
				for range 20 {
					f.answer(f.next(), level+8, true, false)
				}
			}
			f.flush(tt.strays)
			if f.limit != 0 {
				t.Errorf("N̂ = %d, want none", f.limit)
			}
		})
	}
}

// TestFlightProbe: a probe of N̂+1 raises N̂ when it goes through, backs
// off when it fails, and a lower split lowers N̂ at once.
func TestFlightProbe(t *testing.T) {
	capped := func() *flight {
		f := &flight{}
		for level := int64(1); level <= 8; level++ {
			feed(f, level, 40, false)
		}
		feed(f, 9, 20, true)
		if f.limit != 8 {
			t.Fatalf("N̂ = %d, want 8", f.limit)
		}
		feed(f, 8, flightGap, false)
		feed(f, 8, 1, false) // the probe opens
		if f.cap() != 9 {
			t.Fatalf("cap %d after %d answers, want the probe's 9", f.cap(), flightGap+1)
		}
		return f
	}
	t.Run("the cap grew", func(t *testing.T) {
		f := capped()
		feed(f, 9, flightProbe, false)
		if f.limit != 9 {
			t.Errorf("N̂ = %d after %d successes at 9, want 9", f.limit, flightProbe)
		}
	})
	t.Run("the cap held", func(t *testing.T) {
		f := capped()
		feed(f, 9, 3, true)
		if f.limit != 8 || f.cap() != 8 {
			t.Errorf("N̂ = %d, cap %d after 3 throttles at 9; want 8, 8", f.limit, f.cap())
		}
		if f.wait != 2*flightGap {
			t.Errorf("next probe in %d answers, want %d", f.wait, 2*flightGap)
		}
	})
	t.Run("the cap fell", func(t *testing.T) {
		f := capped()
		// N fell to 5: the requests sent at 6 to 8 are throttled.
		feed(f, 5, 100, false)
		for level := int64(6); level <= 8; level++ {
			feed(f, level, 40, true)
		}
		if f.limit != 5 {
			t.Errorf("N̂ = %d after throttles at 6 to 8, want 5", f.limit)
		}
	})
}

// TestFlightBurstOrder: requests sent at one instant may reach the server
// in any order; their answers are counted as a cap would have taken them,
// whatever levels they were sent at.
func TestFlightBurstOrder(t *testing.T) {
	var f flight
	for round := range 10 {
		at := int64(round) * 10 * flightInstant
		for level := int64(1); level <= 16; level++ {
			// The server took the last sent first.
			f.answer(at, level, level <= 8, true)
		}
	}
	f.flush(true)
	if f.limit != 8 {
		t.Errorf("N̂ = %d, want 8; ok %v, throttled %v", f.limit, f.ok[:16], f.thr[:16])
	}
}
