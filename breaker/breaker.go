package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// State is the state of a Breaker.
type State uint8

// The states of a Breaker.
const (
	StateClosed   State = iota // every request goes
	StateHalfOpen              // one request, the probe, goes
	StateOpen                  // no request goes
)

// String returns the state's name: "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half-open"
	case StateOpen:
		return "open"
	}
	return "State(?)"
}

func stateOf(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	case gobreaker.StateOpen:
		return StateOpen
	}
	return StateClosed
}

// ErrOpen is matched (errors.Is) by the *OpenError with which a Breaker
// refuses a request.
var ErrOpen = errors.New("breaker: circuit open")

// OpenError is a Breaker's refusal: the request was not sent.
// errors.Is(err, ErrOpen) holds for it.
type OpenError struct {
	// Wait is how long until a request may go again: until the probe, if
	// the breaker is open; until the probe in flight times out, if it is
	// half-open (its answer may close the breaker sooner).
	Wait time.Duration
	// Probing is set when the breaker is half-open and its probe is in
	// flight.
	Probing bool
}

// Error says why the request was refused and how long until a request may
// go. It holds no part of the request.
func (e *OpenError) Error() string {
	if e.Probing {
		return fmt.Sprintf("breaker: circuit half-open, its probe in flight (times out in %v)", e.Wait.Round(time.Millisecond))
	}
	return fmt.Sprintf("breaker: circuit open, the service is failing (next probe in %v)", e.Wait.Round(time.Millisecond))
}

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Change is a change of a Breaker's state.
type Change struct {
	From, To State
	At       time.Time
	// Until is when the breaker lets a probe through, if To is StateOpen.
	Until time.Time
	// Failures of Answers within Window opened a closed breaker; both are
	// 0 for other changes.
	Failures, Answers int
}

// Breaker is one tenant's circuit breaker: see the package doc for its
// model. Ask Check before waiting for anything (it refuses an open breaker's
// requests without a lock), Allow right before sending, and report the
// answer's Outcome to the Pass that Allow returned.
//
// A nil *Breaker lets every request go. A Breaker is safe for concurrent
// use.
type Breaker struct {
	cb           *gobreaker.TwoStepCircuitBreaker[struct{}]
	openFor      int64
	probeTimeout int64
	onChange     func(Change)

	state     atomic.Uint32         // the State, as gobreaker last set it
	inRow     atomic.Int64          // failures since the last outcome that was not one
	openUntil atomic.Int64          // Unix ns at which an open breaker lets the probe through
	probe     atomic.Pointer[probe] // the half-open probe in flight; nil if none
	tripped   gobreaker.Counts      // the counts that last opened it; under gobreaker's lock

	mu      sync.Mutex // guards pending; taken under gobreaker's lock, never the other way round
	pending []Change   // changes not yet handed to onChange, oldest first
	npend   atomic.Int32
	flushMu sync.Mutex // held by whoever hands changes to onChange, so they come in order
}

// probe is the request a half-open breaker let through.
type probe struct {
	done     func(error)   // gobreaker's
	deadline int64         // Unix ns after which it counts as failed
	over     atomic.Bool   // done was called
	answered chan struct{} // closed when done was called
}

// Errors that tell gobreaker an Outcome.
var (
	errFailure = errors.New("failure")
	errIgnored = errors.New("ignored")
)

// New returns a closed Breaker set up by cfg, whose zero fields mean the
// defaults documented on Config. onChange, if not nil, is told of every
// change of state, once each and in order, never under a lock of the
// Breaker's: it may call the Breaker. It runs on the goroutine of a
// request, so it must be quick.
func New(cfg Config, onChange func(Change)) *Breaker {
	cfg = cfg.resolved()
	b := &Breaker{openFor: int64(cfg.OpenFor), probeTimeout: int64(cfg.ProbeTimeout), onChange: onChange}
	minAnswers := uint32(min(cfg.MinRequests, 1<<31))
	ratio := cfg.FailureRatio
	inRow := uint32(0)
	if cfg.ConsecutiveFailures > 0 {
		inRow = uint32(min(cfg.ConsecutiveFailures, 1<<31))
	}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		MaxRequests:  1,
		Interval:     cfg.Window,
		BucketPeriod: max(cfg.Window/10, 1),
		// gobreaker lets the probe through once its clock is past the
		// timeout, and changed sets openUntil a moment after gobreaker
		// read its clock: one nanosecond less lets it through at openUntil.
		Timeout: max(cfg.OpenFor-1, 1),
		ReadyToTrip: func(c gobreaker.Counts) bool {
			answers := c.TotalSuccesses + c.TotalFailures
			trip := inRow > 0 && b.inRow.Load() >= int64(inRow) ||
				answers >= minAnswers && float64(c.TotalFailures) >= ratio*float64(answers)
			if trip {
				b.tripped = c
			}
			return trip
		},
		OnStateChange: b.changed,
		IsExcluded:    func(err error) bool { return err == errIgnored },
	})
	return b
}

// changed is gobreaker's OnStateChange: it runs under gobreaker's lock, so
// it only records the change, for flush to hand on.
func (b *Breaker) changed(_ string, from, to gobreaker.State) {
	now := time.Now()
	c := Change{From: stateOf(from), To: stateOf(to), At: now}
	if c.To == StateOpen {
		c.Until = now.Add(time.Duration(b.openFor))
		b.openUntil.Store(c.Until.UnixNano())
		if c.From == StateClosed {
			c.Failures = int(b.tripped.TotalFailures)
			c.Answers = int(b.tripped.TotalFailures + b.tripped.TotalSuccesses)
		}
	}
	if c.To != StateHalfOpen {
		b.probe.Store(nil)
	}
	b.inRow.Store(0)
	b.state.Store(uint32(c.To))
	if b.onChange == nil {
		return
	}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	b.npend.Add(1)
}

// flush hands the pending changes to onChange, outside gobreaker's lock.
// If another goroutine is at it, that one hands on these too.
func (b *Breaker) flush() {
	for b.npend.Load() > 0 {
		if !b.flushMu.TryLock() {
			return
		}
		b.mu.Lock()
		cs := b.pending
		b.pending = nil
		b.npend.Store(0)
		b.mu.Unlock()
		for _, c := range cs {
			b.onChange(c)
		}
		b.flushMu.Unlock()
	}
}

// State returns the breaker's state as of the last request it saw: an open
// breaker whose OpenFor has passed reads open until a request comes to
// probe.
func (b *Breaker) State() State {
	if b == nil {
		return StateClosed
	}
	return State(b.state.Load())
}

// OpenUntil returns when the breaker, if it is open, lets the probe through.
func (b *Breaker) OpenUntil() time.Time {
	if b == nil || b.State() != StateOpen {
		return time.Time{}
	}
	return time.Unix(0, b.openUntil.Load())
}

// Check reports whether a request at now would be refused, without taking
// a lock or counting anything: an *OpenError if the breaker is open, or
// half-open with its probe in flight; nil if the request may try Allow.
func (b *Breaker) Check(now time.Time) error {
	if b == nil {
		return nil
	}
	ns := now.UnixNano()
	switch State(b.state.Load()) {
	case StateOpen:
		if w := b.openUntil.Load() - ns; w > 0 {
			return &OpenError{Wait: time.Duration(w)}
		}
	case StateHalfOpen:
		if p := b.probe.Load(); p != nil {
			if w := p.deadline - ns; w > 0 {
				return &OpenError{Wait: time.Duration(w), Probing: true}
			}
		}
	}
	return nil
}

// Await waits while the breaker is half-open with its probe in flight,
// until the probe's answer (or its ProbeTimeout), and then returns what
// Check says: nil if the probe closed the breaker, an *OpenError if it
// opened it again. It does not wait while the breaker is open: it refuses
// at once. A wait for a probe's answer has no known length, so it is not
// failed early for a deadline; it ends with ctx, returning ctx.Err().
//
// This is the pause gate's discipline in package adaptive: one request
// probes, the others wait for its answer rather than fail, so traffic
// resumes one round trip after the service does.
func (b *Breaker) Await(ctx context.Context) error {
	if b == nil {
		return nil
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := time.Now()
		err := b.Check(now)
		if oe, ok := err.(*OpenError); !ok || !oe.Probing {
			return err
		}
		p := b.probe.Load()
		if p == nil {
			continue // answered meanwhile: Check again
		}
		d := time.Duration(p.deadline - now.UnixNano())
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-p.answered:
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Allow lets a request at now go, or refuses it with an *OpenError. A
// request let go must be sent, and its Outcome reported to the Pass.
func (b *Breaker) Allow(now time.Time) (Pass, error) {
	if b == nil {
		return Pass{}, nil
	}
	if err := b.Check(now); err != nil {
		return Pass{}, err
	}
	if p := b.probe.Load(); p != nil && now.UnixNano() >= p.deadline {
		p.finish(b, Failure) // no answer in time
	}
	done, err := b.cb.Allow()
	if err != nil {
		b.flush()
		return Pass{}, b.refusal(now)
	}
	pass := Pass{b: b, done: done}
	if b.State() == StateHalfOpen {
		pass.probe = &probe{done: done, deadline: now.UnixNano() + b.probeTimeout, answered: make(chan struct{})}
		b.probe.Store(pass.probe)
	}
	b.flush()
	return pass, nil
}

// refusal returns the error for a request gobreaker refused at now.
func (b *Breaker) refusal(now time.Time) *OpenError {
	ns := now.UnixNano()
	if b.State() == StateOpen {
		return &OpenError{Wait: time.Duration(max(b.openUntil.Load()-ns, 0))}
	}
	if p := b.probe.Load(); p != nil {
		return &OpenError{Wait: time.Duration(max(p.deadline-ns, 0)), Probing: true}
	}
	return &OpenError{Wait: time.Duration(b.probeTimeout), Probing: true}
}

// Pass is a request a Breaker let go. Report its answer with Done, once.
// The zero Pass belongs to no Breaker; its methods do nothing.
type Pass struct {
	b     *Breaker
	done  func(error)
	probe *probe
}

// Probe reports whether the request is the probe of a half-open breaker.
func (p Pass) Probe() bool { return p.probe != nil }

// Done reports the outcome of the request's answer.
func (p Pass) Done(o Outcome) {
	switch {
	case p.b == nil:
	case p.probe != nil:
		p.probe.finish(p.b, o)
	default:
		p.b.count(o)
		p.done(errOf(o))
		p.b.flush()
	}
}

// finish reports the probe's outcome, once.
func (p *probe) finish(b *Breaker, o Outcome) {
	if !p.over.CompareAndSwap(false, true) {
		return
	}
	b.probe.CompareAndSwap(p, nil)
	b.count(o)
	p.done(errOf(o))
	close(p.answered)
	b.flush()
}

// count keeps the row of failures: any other outcome breaks it, a throttle
// too. (gobreaker's own ConsecutiveFailures skips what it does not count,
// so throttles between failures would join them into one row: a tenant at
// its quota sees no success at the end of each window, only throttles and
// failures.)
func (b *Breaker) count(o Outcome) {
	if o == Failure {
		b.inRow.Add(1)
	} else {
		b.inRow.Store(0)
	}
}

func errOf(o Outcome) error {
	switch o {
	case Failure:
		return errFailure
	case Ignored:
		return errIgnored
	}
	return nil
}
