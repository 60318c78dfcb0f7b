package shapes

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// Attempt outcomes as the callers saw them, counted to check them against
// the server's own counts.
const (
	attemptOK = iota
	attemptThrottled
	attemptError // any other error answer, or no answer
	// The caller's context ended while the request was out: the server
	// may have answered it either way.
	attemptCut
	attemptKinds
)

// recorder keeps a run's time series: the server's counts per bucket (from
// fakecloud's OnRequest), the callers' calls, and the learner's estimate
// in each bucket.
type recorder struct {
	start time.Time
	plan  plan

	mu        sync.Mutex // guards the fields below it
	admitted  []int      // per bucket, as the server decided
	throttled []int
	shed      []int // of the throttled, those the server shed (fakecloud.Shed)
	requests  []int
	totals    counts // the whole run, and the calls that end after it
	calls     []callRecord
	failures  map[string]int

	attempts [attemptKinds]atomic.Int64
	cut      atomic.Bool

	estimates []estimate // per bucket, written by sample alone
	// learners are, per bucket, every client's learner at the bucket's
	// end (Options.Trace), in the clients' order; nil if not traced.
	learners [][]adaptive.Snapshot
}

// callRecord is one call: when it began, how long it took, its class,
// whether it succeeded.
type callRecord struct {
	at, took time.Duration
	priority transport.Priority
	ok       bool
}

// counts are the server's answers to the callers' account.
type counts struct {
	admitted, throttled, requests int64
}

// estimate is the learner's belief over one bucket.
type estimate struct {
	perBucket float64           // the mean of what it would admit per bucket; NaN if it had no limit
	sn        adaptive.Snapshot // its state at the bucket's end
	ok        bool              // sn was read
}

func newRecorder(start time.Time, p plan) *recorder {
	n := p.buckets()
	return &recorder{
		start:     start,
		plan:      p,
		admitted:  make([]int, n),
		throttled: make([]int, n),
		shed:      make([]int, n),
		requests:  make([]int, n),
		estimates: make([]estimate, n),
		failures:  map[string]int{},
	}
}

// server counts one answer of the server, for the callers' account.
func (r *recorder) server(ev fakecloud.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := int(ev.At.Sub(r.start) / r.plan.bucket)
	in := i >= 0 && i < len(r.requests)
	if in {
		r.requests[i]++
	}
	r.totals.requests++
	switch {
	case ev.Outcome == fakecloud.Admitted:
		r.totals.admitted++
		if in {
			r.admitted[i]++
		}
	case ev.Outcome.Throttle():
		r.totals.throttled++
		if in {
			r.throttled[i]++
			if ev.Outcome == fakecloud.Shed {
				r.shed[i]++
			}
		}
	}
}

// call records one call of class p.
func (r *recorder) call(from time.Time, took time.Duration, p transport.Priority, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, callRecord{at: from.Sub(r.start), took: took, priority: p, ok: err == nil})
	if err != nil {
		r.failures[failureReason(err)]++
	}
}

// failureReason names why a call failed, for the table's notes.
func failureReason(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{retry.ErrBudgetExhausted, "retry budget"},
		{retry.ErrAttemptsExhausted, "attempts"},
		{retry.ErrElapsedExhausted, "elapsed"},
		{retry.ErrRefused, "refused"},
		{retry.ErrPermanent, "permanent"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	var we *adaptive.WaitError
	switch {
	case errors.As(err, &we):
		return "refused" // by the Transport, with no retry.Do above it
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	return "other"
}

// samplesPerBucket is how often the learner's estimate is read in a bucket.
const samplesPerBucket = 10

// sample records the learner of the first client's only tenant: in each
// bucket, the mean of its estimate read ten times (it swings inside a
// window: cut at a throttle, raised again), and its state at the bucket's
// end; with trace, every client's state at the bucket's end too. With no
// Transport (a bare run) it records nothing.
func (r *recorder) sample(trs []*transport.Transport, trace bool) {
	for i := range r.estimates {
		r.estimates[i].perBucket = math.NaN()
	}
	tr := trs[0]
	if tr == nil {
		return
	}
	if trace {
		r.learners = make([][]adaptive.Snapshot, len(r.estimates))
	}
	for i := range r.estimates {
		sum, n := 0.0, 0
		for j := range samplesPerBucket {
			at := time.Duration(i)*r.plan.bucket + time.Duration(j+1)*r.plan.bucket/samplesPerBucket
			time.Sleep(time.Until(r.start.Add(at)))
			tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool {
				sn := l.Snapshot()
				r.estimates[i].sn, r.estimates[i].ok = sn, true
				if x := perBucket(sn, r.plan.bucket); !math.IsNaN(x) {
					sum, n = sum+x, n+1
				}
				return false
			})
		}
		if n > 0 {
			r.estimates[i].perBucket = sum / float64(n)
		}
		if trace {
			r.learners[i] = make([]adaptive.Snapshot, len(trs))
			for k, tr := range trs {
				tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool {
					r.learners[i][k] = l.Snapshot()
					return false
				})
			}
		}
	}
}

// perBucket is what a limiter in state sn admits per bucket at most: its
// window limit scaled to the bucket, else its pace; NaN if it has neither.
func perBucket(sn adaptive.Snapshot, bucket time.Duration) float64 {
	switch {
	case sn.Limit > 0 && sn.Window > 0:
		return float64(sn.Limit) * bucket.Seconds() / sn.Window.Seconds()
	case sn.Rate > 0:
		return sn.Rate * bucket.Seconds()
	}
	return math.NaN()
}

// span sums per-bucket counts over buckets [from, to).
func span(xs []int, from, to int) int64 {
	var n int64
	for _, x := range xs[max(from, 0):min(to, len(xs))] {
		n += int64(x)
	}
	return n
}

// percentile returns the p-th percentile (0..1) of sorted xs, the
// nearest rank; zero if xs is empty.
func percentile[T time.Duration | float64](xs []T, p float64) T {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// successTimes returns, sorted, the durations of the successful calls that
// began in [from, to) and that keep, e.g. those of one class; keep nil
// keeps all.
func successTimes(calls []callRecord, from, to time.Duration, keep func(callRecord) bool) []time.Duration {
	var ds []time.Duration
	for _, c := range calls {
		if c.ok && c.at >= from && c.at < to && (keep == nil || keep(c)) {
			ds = append(ds, c.took)
		}
	}
	slices.Sort(ds)
	return ds
}
