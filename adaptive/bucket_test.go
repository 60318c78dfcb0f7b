package adaptive

import (
	"testing"
)

// TestBucketStall checks that a stall makes the next token due when the
// window has room, the next one paced after it, and never earlier than
// the bucket would have.
func TestBucketStall(t *testing.T) {
	var b bucket
	b.set(0, 10, 1) // 100 ms apart
	if w, _ := b.take(0); w != 0 {
		t.Fatalf("first token not there at once: %d ns", w)
	}
	b.stall(150e6)
	if w := b.due(0); w != 150e6 {
		t.Fatalf("first token after the stall due in %d ns, want 150ms", w)
	}
	b.stall(50e6) // earlier than the bucket's own: no change
	if w := b.due(0); w != 150e6 {
		t.Fatalf("an earlier stall moved the token to %d ns, want 150ms", w)
	}
	if w, _ := b.take(150e6); w != 0 {
		t.Fatalf("token not there at 150ms: %d ns to go", w)
	}
	if w := b.due(150e6); w != 100e6 {
		t.Fatalf("second token after the stall due in %d ns, want 100ms", w)
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
