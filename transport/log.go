package transport

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

// Messages of the records the Logger receives (see Config.Logger).
//
// Levels are chosen so that Info shows what tollgate decided, at most about
// one record per round trip and tenant however hard the server throttles:
//
//   - msgThrottled (Info): a throttle answer changed the tenant's limits:
//     cut the rate, set a learned limit, paused the tenant. The limiter cuts
//     at most once per round trip, so this is the throttles' summary.
//   - msgQuota (Info): with no throttle, the tenant's limit, window, burst,
//     source or learned cap on requests in flight changed, e.g. rate-limit
//     headers first seen or changed.
//   - msgPaused (Debug): a pause with no throttle, e.g. the server's
//     Remaining reached 0 and the tenant waits for the reset: the plan
//     working.
//   - msgRate (Debug): the paced rate moved without a throttle (header
//     pacing, learned regrowth above 10%).
//   - msgThrottle (Debug): one record per throttle answer; under heavy
//     throttling this is one per request, so it is kept below Info.
//   - msgRefused (Warn): a request was not sent because its deadline would
//     pass first (with would_wait and left); Debug when the caller's
//     context was cancelled.
//   - msgFailed (Debug): the next RoundTripper failed; the caller gets the
//     error too.
//   - msgBreaker (Warn): a tenant's circuit breaker changed state (opened,
//     let a probe through, closed), one record per change; the requests it
//     refuses are not logged.
//   - msgStoreDown (Warn): the Store (Config.Store) failed a call; the
//     shared tenants go on each alone at a share of their quota. One record
//     per outage, not per request.
//   - msgStoreUp (Info): the Store answers again; the tenants share again.
//
// Allowed and waited requests are never logged.
const (
	msgQuota     = "tollgate: quota changed"
	msgThrottled = "tollgate: throttled"
	msgPaused    = "tollgate: paused"
	msgRate      = "tollgate: rate changed"
	msgThrottle  = "tollgate: throttle answer"
	msgRefused   = "tollgate: request refused"
	msgFailed    = "tollgate: request failed"
	msgBreaker   = "tollgate: circuit breaker"
	msgStoreDown = "tollgate: store unreachable"
	msgStoreUp   = "tollgate: store back"
)

// logObserver is the Observer behind Config.Logger.
//
// It never logs a request's URL or headers, and passes every error text
// through RedactError: the errors of the next RoundTripper are *url.Error,
// whose text quotes the full URL with its AccessKeyId and Signature.
type logObserver struct {
	l *slog.Logger
}

// newLogObserver returns an Observer that logs to l, or nil if l is nil.
func newLogObserver(l *slog.Logger) Observer {
	if l == nil {
		return nil
	}
	return &logObserver{l: l}
}

func (o *logObserver) enabled(level slog.Level) bool {
	return o.l.Enabled(context.Background(), level)
}

// Request logs throttle answers (Debug), refusals (Warn, or Debug when the
// context was cancelled) and failures (Debug); nothing else.
func (o *logObserver) Request(ev RequestEvent) {
	switch ev.Result {
	case ResultThrottled:
		if !o.enabled(slog.LevelDebug) {
			return
		}
		attrs := []slog.Attr{
			tenantAttr(ev.Key),
			slog.Int("status", ev.Answer.Status),
		}
		if ev.Answer.Code != "" {
			attrs = append(attrs, slog.String("code", ev.Answer.Code))
		}
		if ev.Answer.Has(quota.FieldRetryAfter) {
			attrs = append(attrs, slog.Duration("retry_after", ev.Answer.RetryAfter))
		}
		attrs = append(attrs, slog.Duration("wait", ev.Wait))
		o.l.LogAttrs(context.Background(), slog.LevelDebug, msgThrottle, attrs...)
	case ResultRefused:
		level := slog.LevelWarn
		if errors.Is(ev.Err, context.Canceled) {
			level = slog.LevelDebug
		}
		if !o.enabled(level) {
			return
		}
		attrs := []slog.Attr{tenantAttr(ev.Key), slog.Duration("wait", ev.Wait)}
		var we *adaptive.WaitError
		if errors.As(ev.Err, &we) {
			attrs = append(attrs,
				slog.Duration("would_wait", we.Wait),
				slog.Duration("left", we.Left),
				slog.String("reason", we.Reason))
		}
		attrs = append(attrs, errorAttr(ev.Err))
		o.l.LogAttrs(context.Background(), level, msgRefused, attrs...)
	case ResultFailed:
		if !o.enabled(slog.LevelDebug) {
			return
		}
		o.l.LogAttrs(context.Background(), slog.LevelDebug, msgFailed,
			tenantAttr(ev.Key), slog.Duration("wait", ev.Wait), errorAttr(ev.Err))
	}
}

// Limits logs one record per change; see the messages above for levels.
func (o *logObserver) Limits(ev LimitsEvent) {
	a, b := ev.Before, ev.After
	paused := b.PauseUntil.After(a.PauseUntil)
	var level slog.Level
	var msg string
	switch {
	case ev.Answer.Throttled:
		level, msg = slog.LevelInfo, msgThrottled
	case a.Source != b.Source, a.Limit != b.Limit, a.Window != b.Window, a.Burst != b.Burst,
		a.InFlightLimit != b.InFlightLimit:
		level, msg = slog.LevelInfo, msgQuota
	case paused:
		level, msg = slog.LevelDebug, msgPaused
	default:
		level, msg = slog.LevelDebug, msgRate
	}
	if !o.enabled(level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		tenantAttr(ev.Key),
		slog.String("source", b.Source.String()),
		slog.String("prev_source", a.Source.String()),
		slog.Float64("rate", b.Rate),
		slog.Float64("prev_rate", a.Rate),
	)
	if b.Limit != 0 || a.Limit != 0 {
		attrs = append(attrs,
			slog.Int64("limit", b.Limit),
			slog.Int64("prev_limit", a.Limit),
			slog.Duration("window", b.Window))
		if a.Window != b.Window {
			attrs = append(attrs, slog.Duration("prev_window", a.Window))
		}
	}
	if b.InFlightLimit != 0 || a.InFlightLimit != 0 {
		attrs = append(attrs,
			slog.Int64("in_flight_limit", b.InFlightLimit),
			slog.Int64("prev_in_flight_limit", a.InFlightLimit))
	}
	if b.Burst != a.Burst {
		attrs = append(attrs, slog.Int("burst", b.Burst), slog.Int("prev_burst", a.Burst))
	}
	if b.Remaining >= 0 {
		attrs = append(attrs, slog.Int64("remaining", b.Remaining))
	}
	if paused {
		attrs = append(attrs, slog.Time("pause_until", b.PauseUntil))
		if at := ev.Answer.At; !at.IsZero() {
			attrs = append(attrs, slog.Duration("pause", b.PauseUntil.Sub(at).Round(time.Millisecond)))
		}
	}
	if ev.Answer.Status != 0 {
		attrs = append(attrs, slog.Int("status", ev.Answer.Status))
	}
	if ev.Answer.Code != "" {
		attrs = append(attrs, slog.String("code", ev.Answer.Code))
	}
	if ev.Answer.Throttled {
		attrs = append(attrs, slog.Bool("throttled", true))
	}
	o.l.LogAttrs(context.Background(), level, msg, attrs...)
}

// Breaker logs one record per change of a tenant's circuit breaker, at
// Warn.
func (o *logObserver) Breaker(ev BreakerEvent) {
	if !o.enabled(slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{
		tenantAttr(ev.Key),
		slog.String("state", ev.To.String()),
		slog.String("prev_state", ev.From.String()),
	}
	if ev.To == breaker.StateOpen {
		attrs = append(attrs, slog.Duration("probe_in", ev.Until.Sub(ev.At)))
	}
	if ev.Answers > 0 {
		attrs = append(attrs, slog.Int("failures", ev.Failures), slog.Int("answers", ev.Answers))
	}
	o.l.LogAttrs(context.Background(), slog.LevelWarn, msgBreaker, attrs...)
}

// Store logs one record per change of the Store's health: Warn when it
// stops answering, Info when it answers again.
func (o *logObserver) Store(ev StoreEvent) {
	if ev.Up {
		if o.enabled(slog.LevelInfo) {
			o.l.LogAttrs(context.Background(), slog.LevelInfo, msgStoreUp)
		}
		return
	}
	if o.enabled(slog.LevelWarn) {
		o.l.LogAttrs(context.Background(), slog.LevelWarn, msgStoreDown, errorAttr(ev.Err), slog.Float64("share", ev.Share))
	}
}

func tenantAttr(k quota.Key) slog.Attr { return slog.String("tenant", k.String()) }

// errorAttr is the "error" attribute: err's text with credentials removed
// (RedactError), never the raw text.
func errorAttr(err error) slog.Attr { return slog.String("error", RedactError(err)) }

// joinObservers returns an Observer that tells each of obs in turn, skipping
// nil ones, or nil if there are none.
func joinObservers(obs ...Observer) Observer {
	var live multiObserver
	for _, o := range obs {
		if o != nil {
			live = append(live, o)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return live
}

type multiObserver []Observer

func (m multiObserver) Request(ev RequestEvent) {
	for _, o := range m {
		o.Request(ev)
	}
}

func (m multiObserver) Limits(ev LimitsEvent) {
	for _, o := range m {
		o.Limits(ev)
	}
}

func (m multiObserver) Breaker(ev BreakerEvent) {
	for _, o := range m {
		if bo, ok := o.(BreakerObserver); ok {
			bo.Breaker(ev)
		}
	}
}

func (m multiObserver) Store(ev StoreEvent) {
	for _, o := range m {
		if so, ok := o.(StoreObserver); ok {
			so.Store(ev)
		}
	}
}
