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

// TestBucketSetReportsDrift checks that small changes of the rate are
// reported once they add up to 5%.
func TestBucketSetReportsDrift(t *testing.T) {
	var b bucket
	if !b.set(0, 100, 1) {
		t.Fatal("pacing turned on not reported")
	}
	for _, r := range []float64{98, 96.5} {
		if b.set(0, r, 1) {
			t.Fatalf("%v/s reported: less than 5%% from 100/s", r)
		}
	}
	if !b.set(0, 95, 1) {
		t.Fatal("95/s not reported: 5% from the last reported 100/s")
	}
	if b.set(0, 94, 1) {
		t.Fatal("94/s reported: 1% from the last reported 95/s")
	}
}
