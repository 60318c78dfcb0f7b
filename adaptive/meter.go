package adaptive

import (
	"math"
	"time"
)

// meter counts events over the trailing second in ten 100 ms buckets (and
// the one leaving). A bucket saturates at 65535 events, 655k a second: far
// past any quota a client learns from throttles.
type meter struct {
	e int64 // epoch (100 ms units) of the newest bucket
	c [11]uint16
}

// inc counts one event in bucket i, saturating.
func (m *meter) inc(i int64) {
	if m.c[i] < math.MaxUint16 {
		m.c[i]++
	}
}

const meterWidth = int64(100 * time.Millisecond)

func (m *meter) roll(now int64) int64 {
	e := now / meterWidth
	if e > m.e {
		for i := max(m.e+1, e-10); i <= e; i++ {
			m.c[i%11] = 0
		}
		m.e = e
	}
	return m.e
}

func (m *meter) add(now int64) {
	e := m.roll(now)
	m.inc(e % 11)
}

// sum returns the events in (now-1s, now], counting the oldest bucket by the
// fraction of it still inside.
func (m *meter) sum(now int64) float64 {
	e := m.roll(now)
	var s float64
	for i := e - 9; i <= e; i++ {
		s += float64(m.c[mod11(i)])
	}
	frac := float64(now%meterWidth) / float64(meterWidth)
	return s + float64(m.c[mod11(e-10)])*(1-frac)
}

// addAt counts an event that happened at at (Unix ns), if it is still
// within the meter's last second as of its newest bucket.
func (m *meter) addAt(at int64) {
	e := at / meterWidth
	switch {
	case e > m.e:
		m.add(at)
	case e > m.e-11 && e >= 0:
		m.inc(e % 11)
	}
}

func mod11(i int64) int64 { return ((i % 11) + 11) % 11 }
