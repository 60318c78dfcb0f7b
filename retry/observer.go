package retry

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgate-go/tollgate/internal/redact"
	"github.com/tollgate-go/tollgate/quota"
)

// Observer sees the retries Do makes and the calls it gives up on, for
// metrics. Its methods are called synchronously by Do: they must be quick,
// must not block, and must be safe for concurrent use. Package
// github.com/tollgate-go/tollgate/metrics has one for Prometheus.
type Observer interface {
	// Retry is called before each wait, once Do has decided to retry.
	Retry(RetryEvent)
	// GiveUp is called once when Do returns a *GiveUpError.
	GiveUp(GiveUpEvent)
}

// RetryEvent describes one retry Do is about to make.
type RetryEvent struct {
	Key     quota.Key     // the tenant, quota.KeyFrom(ctx); the zero Key if none
	Attempt int           // the attempt that failed, 1 for the first; the retry about to be made has the same number
	Wait    time.Duration // the wait before the retry
	Class   Class         // the failed attempt's class: ClassThrottle, ClassTransient or ClassRefused
	Err     error         // the failed attempt's error; its text may quote credentials (see redact)
}

// GiveUpEvent describes a call Do gave up on.
type GiveUpEvent struct {
	Key      quota.Key     // the tenant, quota.KeyFrom(ctx); the zero Key if none
	Attempts int           // attempts made
	Elapsed  time.Duration // from the first attempt to giving up
	Wait     time.Duration // the wait that was refused (ErrElapsedExhausted, context.DeadlineExceeded) or needed (ErrRefused), else 0
	Class    Class         // the last attempt's class; ClassSuccess if no attempt was made
	Reason   error         // as GiveUpError.Reason
	Err      error         // the last attempt's error; nil if no attempt was made
}

// ReasonName returns a short, fixed name for ev.Reason, fit for a metric
// label: "permanent", "attempts", "elapsed", "deadline"
// (context.DeadlineExceeded), "refused" (ErrRefused), "budget", "canceled",
// or "other".
func (ev GiveUpEvent) ReasonName() string {
	switch {
	case errors.Is(ev.Reason, ErrPermanent):
		return "permanent"
	case errors.Is(ev.Reason, ErrAttemptsExhausted):
		return "attempts"
	case errors.Is(ev.Reason, ErrElapsedExhausted):
		return "elapsed"
	case errors.Is(ev.Reason, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(ev.Reason, ErrRefused):
		return "refused"
	case errors.Is(ev.Reason, ErrBudgetExhausted):
		return "budget"
	case errors.Is(ev.Reason, context.Canceled):
		return "canceled"
	}
	return "other"
}

// Log messages of Policy.Logger.
const (
	msgRetry  = "tollgate: retry"
	msgGiveUp = "tollgate: gave up"
)

// observing reports whether Do has anyone to tell.
func (p *Policy) observing() bool {
	return p != nil && (p.Observer != nil || p.Logger != nil)
}

// retried tells the Observer and the Logger of a retry.
func (p *Policy) retried(ev RetryEvent) {
	if p.Observer != nil {
		p.Observer.Retry(ev)
	}
	if l := p.Logger; l != nil && l.Enabled(context.Background(), slog.LevelDebug) {
		l.LogAttrs(context.Background(), slog.LevelDebug, msgRetry,
			slog.String("tenant", ev.Key.String()),
			slog.Int("attempt", ev.Attempt),
			slog.Duration("wait", ev.Wait),
			slog.String("class", ev.Class.String()),
			slog.String("error", redact.Error(ev.Err)))
	}
}

// gaveUp tells the Observer and the Logger of a give-up. The record is at
// Warn, except at Debug when no retry was made and the failure was
// permanent (the caller's error is the whole story) or when the caller
// cancelled.
func (p *Policy) gaveUp(ev GiveUpEvent) {
	if p.Observer != nil {
		p.Observer.GiveUp(ev)
	}
	l := p.Logger
	if l == nil {
		return
	}
	level := slog.LevelWarn
	if (errors.Is(ev.Reason, ErrPermanent) && ev.Attempts <= 1) || errors.Is(ev.Reason, context.Canceled) {
		level = slog.LevelDebug
	}
	if !l.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("tenant", ev.Key.String()),
		slog.String("reason", ev.ReasonName()),
		slog.Int("attempts", ev.Attempts),
		slog.Duration("elapsed", ev.Elapsed),
	)
	if ev.Wait > 0 {
		attrs = append(attrs, slog.Duration("next_wait", ev.Wait))
	}
	if ev.Err != nil {
		attrs = append(attrs,
			slog.String("class", ev.Class.String()),
			slog.String("error", redact.Error(ev.Err)))
	}
	l.LogAttrs(context.Background(), level, msgGiveUp, attrs...)
}
