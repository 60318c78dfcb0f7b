package adaptive

import (
	"math"
	"testing"
)

func TestBucketStall(t *testing.T) {
	var b bucket
	b.set(0, 10, 1) // 100 ms apart
	e := b.epoch.Load()
	for range 5 {
		b.reserve(0, math.MaxInt64)
	}
	if !b.stall(150e6, e) {
		t.Fatal("stall refused with the current epoch")
	}
	if b.stall(300e6, e) {
		t.Fatal("stall restarted the queue again with a stale epoch")
	}
	if due, _, _ := b.reserve(0, math.MaxInt64); due != 150e6 {
		t.Fatalf("first place after the stall due at %d ns, want 150ms", due)
	}
	if due, _, _ := b.reserve(0, math.MaxInt64); due != 250e6 {
		t.Fatalf("second place after the stall due at %d ns, want 250ms", due)
	}
}

// TestBucketSetReportsDrift checks when a change of the rate is reported to
// the waiters: when it is 0.5% faster than the slowest since the last
// report, which a waiter may still be sleeping on; never when slower.
func TestBucketSetReportsDrift(t *testing.T) {
	var b bucket
	if !b.set(0, 100, 1) {
		t.Fatal("pacing turned on not reported")
	}
	for _, r := range []float64{98, 90, 50} {
		if b.set(0, r, 1) {
			t.Fatalf("down to %v/s reported", r)
		}
	}
	if b.set(0, 50.2, 1) {
		t.Fatal("50.2/s reported: less than 0.5% faster than the slowest, 50/s")
	}
	if !b.set(0, 97, 1) {
		t.Fatal("97/s not reported: waiters may sleep on the pace of 50/s")
	}
	if b.set(0, 97.3, 1) {
		t.Fatal("97.3/s reported: less than 0.5% faster than 97/s")
	}
	if !b.set(0, 97.6, 1) {
		t.Fatal("97.6/s not reported: 0.5% faster than 97/s")
	}
}
