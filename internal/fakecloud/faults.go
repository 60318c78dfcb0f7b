package fakecloud

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Faults are the faults a [Cloud] injects, each with a rate: the
// probability (0..1) that a request gets it, drawn from a random source
// seeded by [Config.Seed]. A rate ≤ 0 never injects, ≥ 1 always does (and
// draws nothing). The zero Faults injects nothing. Faults apply to API
// requests only, never to admin routes.
type Faults struct {
	// LatencyRate is the probability of delaying an answer by Latency plus
	// a uniform jitter in [0, LatencyJitter). The delay happens after
	// admission (the quota is spent at arrival) and ends early if the
	// request context is done. If both durations are zero, 100 ms.
	LatencyRate   float64       `json:"latency_rate,omitempty"`
	Latency       time.Duration `json:"latency,omitempty"`
	LatencyJitter time.Duration `json:"latency_jitter,omitempty"`

	// Arrival delays every request by Arrival plus a uniform jitter in
	// [0, ArrivalJitter) before the server sees it: its way there, where
	// Latency is the way back. The quotas count a request when it
	// arrives, so a client that takes its send for the arrival is off by
	// that much. A request whose context ends on the way is never
	// counted (the client sees the context's error).
	Arrival       time.Duration `json:"arrival,omitempty"`
	ArrivalJitter time.Duration `json:"arrival_jitter,omitempty"`

	// UnavailableRate is the probability of answering 503 with Code
	// ServiceUnavailable before admission (no quota spent).
	UnavailableRate float64 `json:"unavailable_rate,omitempty"`

	// DropRate is the probability of closing the connection mid-response,
	// after admission: the status, headers (with the full Content-Length)
	// and half the body are sent, then the connection is closed (via
	// http.Hijacker when the ResponseWriter supports it, otherwise by
	// panicking with http.ErrAbortHandler). A client sees an unexpected
	// EOF reading the body; [Cloud.RoundTripper] returns
	// io.ErrUnexpectedEOF from Body.Read. A caller driving ServeHTTP with an
	// httptest.ResponseRecorder sees the http.ErrAbortHandler panic.
	DropRate float64 `json:"drop_rate,omitempty"`

	// MalformedHeadersRate is the probability of replacing every rate-limit
	// header (all families, whatever Config.Headers says) by a malformed
	// value: garbage, negative, enormous, far-future dates.
	MalformedHeadersRate float64 `json:"malformed_headers_rate,omitempty"`

	// SlowBodyRate is the probability of writing the body in chunks of
	// SlowBodyChunk bytes (zero means 16) with SlowBodyDelay between them
	// (zero means 50 ms), flushing each.
	SlowBodyRate  float64       `json:"slow_body_rate,omitempty"`
	SlowBodyChunk int           `json:"slow_body_chunk,omitempty"`
	SlowBodyDelay time.Duration `json:"slow_body_delay,omitempty"`

	// ShedRate is the probability that a request the quotas admitted is
	// answered as a throttle anyway (Config.ThrottleStatus and
	// ThrottleCode), as a gateway shedding load does whatever the client's
	// rate. The quotas have counted it. The answer carries no rate-limit
	// header, only Retry-After (in seconds, rounded up) if ShedRetryAfter
	// is positive.
	ShedRate       float64       `json:"shed_rate,omitempty"`
	ShedRetryAfter time.Duration `json:"shed_retry_after,omitempty"`

	// ShedEvery, if positive, sheds every ShedEvery-th request the quotas
	// admitted (counted over all accounts), as ShedRate sheds at random: a
	// throttle the client's rate does not cause, on a fixed rhythm.
	ShedEvery int `json:"shed_every,omitempty"`
}

// faultPlan is the faults drawn for one request.
type faultPlan struct {
	latency     time.Duration
	unavailable bool
	drop        bool
	malformed   bool
	slow        bool
	chunk       int
	delay       time.Duration
	shed        bool
	answered    func() // called as the answer begins, after the latency: the server's work on it is done
}

// injects reports whether the plan injects anything.
func (p faultPlan) injects() bool {
	return p.latency > 0 || p.unavailable || p.drop || p.malformed || p.slow || p.shed
}

// drawFaults draws the faults of one request, in a fixed order so a seed
// gives a reproducible sequence.
func (c *Cloud) drawFaults() faultPlan {
	f := c.faults.Load()
	var p faultPlan
	if c.hit(f.LatencyRate) {
		p.latency = f.Latency
		if f.LatencyJitter > 0 {
			c.rngMu.Lock()
			p.latency += time.Duration(c.rng.Int64N(int64(f.LatencyJitter)))
			c.rngMu.Unlock()
		}
		if f.Latency <= 0 && f.LatencyJitter <= 0 {
			p.latency = 100 * time.Millisecond
		}
	}
	p.unavailable = c.hit(f.UnavailableRate)
	p.drop = c.hit(f.DropRate)
	p.malformed = c.hit(f.MalformedHeadersRate)
	if p.slow = c.hit(f.SlowBodyRate); p.slow {
		p.chunk, p.delay = f.SlowBodyChunk, f.SlowBodyDelay
		if p.chunk <= 0 {
			p.chunk = 16
		}
		if p.delay <= 0 {
			p.delay = 50 * time.Millisecond
		}
	}
	p.shed = c.hit(f.ShedRate)
	return p
}

// arrival returns how long a request takes to reach the server (see
// Faults.Arrival), drawing its jitter; zero draws nothing, so seeds
// give the sequences they gave before Arrival was set.
func (c *Cloud) arrival() time.Duration {
	f := c.faults.Load()
	d := max(f.Arrival, 0)
	if f.ArrivalJitter > 0 {
		c.rngMu.Lock()
		d += time.Duration(c.rng.Int64N(int64(f.ArrivalJitter)))
		c.rngMu.Unlock()
	}
	return d
}

// hit draws true with probability rate.
func (c *Cloud) hit(rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.rng.Float64() < rate
}

// intn returns a random int in [0, n).
func (c *Cloud) intn(n int) int {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.rng.IntN(n)
}

// sleep waits d or until ctx is done, reporting whether d elapsed. It uses
// a timer, so it is durably blocking inside a synctest bubble.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeAnswer writes status and body to w, applying the plan's latency,
// malformed headers, drop and slow body.
func (c *Cloud) writeAnswer(w http.ResponseWriter, r *http.Request, status int, body []byte, p faultPlan) {
	ctx := r.Context()
	if !sleep(ctx, p.latency) {
		return // the client is gone
	}
	if p.answered != nil {
		p.answered()
	}
	h := w.Header()
	if p.malformed {
		setMalformedHeaders(h, c.intn)
	}
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	switch {
	case p.drop:
		_, _ = w.Write(body[:len(body)/2])
		_ = rc.Flush()
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
		panic(http.ErrAbortHandler)
	case p.slow:
		for len(body) > 0 {
			n := min(p.chunk, len(body))
			if _, err := w.Write(body[:n]); err != nil {
				return
			}
			_ = rc.Flush()
			body = body[n:]
			if len(body) > 0 && !sleep(ctx, p.delay) {
				return
			}
		}
	default:
		_, _ = w.Write(body)
	}
}
