package adaptive

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// simKind is how a simulated server counts its quota.
type simKind int

const (
	fixedWindow   simKind = iota // L per W, windows aligned to the clock (Alibaba's per-second counters)
	slidingWindow                // at most L in any trailing W
	tokenBucket                  // rate L/W, burst L/10
)

func (k simKind) String() string {
	return [...]string{"fixed", "sliding", "bucket"}[k]
}

// simServer answers requests with Observations, as quota.Parse would read
// them off a real server's answers. Only accepted requests use quota.
type simServer struct {
	kind    simKind
	win     time.Duration
	headers bool

	mu     sync.Mutex
	limit  int64
	fixedN int64     // accepted in the current fixed window
	fixedW int64     // index of the current fixed window
	times  []int64   // sliding: accepted times in the trailing window
	tokens float64   // bucket
	last   time.Time // bucket: last refill
	start  time.Time
	slots  []simSlot // per 100 ms of the run
}

type simSlot struct{ ok, throttled int64 }

const simSlot0 = 100 * time.Millisecond

func newSimServer(kind simKind, limit int64, win time.Duration, headers bool, start time.Time) *simServer {
	return &simServer{kind: kind, limit: limit, win: win, headers: headers, start: start, last: start, tokens: float64(limit)}
}

func (s *simServer) setLimit(l int64) {
	s.mu.Lock()
	s.limit = l
	s.mu.Unlock()
}

func (s *simServer) burst() float64 { return max(1, float64(s.limit)/10) }

// handle decides one request arriving at now.
func (s *simServer) handle(now time.Time) quota.Observation {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := now.UnixNano()
	o := quota.Observation{At: now, Status: 200}
	var ok bool
	var remaining int64
	var reset time.Time
	switch s.kind {
	case fixedWindow:
		if w := ns / int64(s.win); w != s.fixedW {
			s.fixedW, s.fixedN = w, 0
		}
		if ok = s.fixedN < s.limit; ok {
			s.fixedN++
		}
		remaining = max(s.limit-s.fixedN, 0)
		reset = time.Unix(0, (s.fixedW+1)*int64(s.win))
	case slidingWindow:
		i := 0
		for i < len(s.times) && s.times[i] <= ns-int64(s.win) {
			i++
		}
		s.times = s.times[i:]
		if ok = int64(len(s.times)) < s.limit; ok {
			s.times = append(s.times, ns)
		}
		remaining = max(s.limit-int64(len(s.times)), 0)
		reset = now // when one more would fit
		if n := int64(len(s.times)); n >= s.limit && s.limit > 0 {
			reset = time.Unix(0, s.times[n-s.limit]+int64(s.win))
		}
	case tokenBucket:
		rate := float64(s.limit) / s.win.Seconds()
		s.tokens = min(s.burst(), s.tokens+now.Sub(s.last).Seconds()*rate)
		s.last = now
		if ok = s.tokens >= 1; ok {
			s.tokens--
		}
		remaining = int64(s.tokens)
		reset = now.Add(time.Duration((1 - (s.tokens - float64(remaining))) / rate * 1e9))
	}
	if !ok {
		o.Status, o.Throttled, o.Code = 429, true, "Throttling.User"
	}
	if s.headers {
		o.Known = quota.FieldLimit | quota.FieldWindow | quota.FieldRemaining | quota.FieldReset
		o.Limit, o.Window, o.Remaining, o.ResetAt = s.limit, s.win, remaining, reset
	}
	slot := int(now.Sub(s.start) / simSlot0)
	for len(s.slots) <= slot {
		s.slots = append(s.slots, simSlot{})
	}
	if ok {
		s.slots[slot].ok++
	} else {
		s.slots[slot].throttled++
	}
	return o
}

// stats returns accepted and throttled requests in [from, to) of the run.
func (s *simServer) stats(from, to time.Duration) (ok, throttled int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := int(from / simSlot0); i < int(to/simSlot0) && i < len(s.slots); i++ {
		ok += s.slots[i].ok
		throttled += s.slots[i].throttled
	}
	return ok, throttled
}

// simClient runs workers that send through lim to srv until ctx is done,
// each request taking 10-30 ms of latency, half on the way there.
func simClient(ctx context.Context, wg *sync.WaitGroup, lim *Limiter, srv *simServer, workers int, seed uint64) {
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for {
				t, err := lim.Wait(ctx)
				if err != nil {
					return
				}
				lat := 10*time.Millisecond + time.Duration(rng.Int64N(int64(20*time.Millisecond)))
				time.Sleep(lat / 2)
				obs := srv.handle(time.Now())
				time.Sleep(lat - lat/2)
				obs.At = time.Now()
				t.Done(obs)
			}
		})
	}
}
