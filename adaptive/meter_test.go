package adaptive

import (
	"math"
	"testing"
	"time"
)

func TestMeterSaturates(t *testing.T) {
	var m meter
	for range 70000 {
		m.add(int64(time.Second))
	}
	if got := m.sum(int64(time.Second)); got != math.MaxUint16 {
		t.Fatalf("sum %v, want %v", got, math.MaxUint16)
	}
}
