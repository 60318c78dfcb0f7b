package quota

import "time"

// Signal is a set of rate-limit signal families, as bits. Observation uses
// it twice: Signals for the families present in an answer, Malformed for
// those present but (at least partly) unreadable.
type Signal uint16

// The signal families Parse reads.
const (
	SignalRetryAfter Signal = 1 << iota // Retry-After: seconds or HTTP-date
	SignalAlibaba                       // x-ratelimit-user-api, x-ratelimit-user, x-acs-retry-after
	SignalXRateLimit                    // X-RateLimit-Limit/Remaining/Reset, X-RateLimit-Quota-ID
	SignalIETF                          // RateLimit-Limit/Remaining/Reset
	SignalIETFFields                    // RateLimit-Policy and RateLimit structured fields
	SignalBody                          // an error code in the body of an error answer (JSON or XML)
	SignalStatus                        // the status code alone (429; 403 with an exhausted quota; 502, 503, 504)
)

// Field is a set of Observation fields known from the answer, as bits.
type Field uint8

// The fields of an Observation that may be known.
const (
	FieldLimit      Field = 1 << iota // Limit
	FieldWindow                       // Window
	FieldRemaining                    // Remaining
	FieldReset                        // ResetAt
	FieldRetryAfter                   // RetryAfter
)

// Observation is what one answer said about the tenant's quota. Parse fills
// it in; the adaptive limiter learns from it. Only the fields named in Known
// carry information: a zero Remaining with FieldRemaining unset means
// "not said", not "exhausted".
//
// When several families disagree, Observation holds the most restrictive
// reading: the smallest limit (of those whose window is within the parser's
// Horizon, if any is), the smallest remaining, the latest reset, the
// longest retry hint.
type Observation struct {
	At     time.Time // when the answer was observed (the now given to Parse)
	Status int       // HTTP status code
	Code   string    // error code from the body, e.g. "Throttling.User"; empty if none

	Throttled bool // the server refused the request for quota reasons
	Transient bool // a transient failure (e.g. ServiceUnavailable); not a quota signal

	Known      Field
	Limit      int64         // requests allowed per Window
	Window     time.Duration // the quota's window
	Remaining  int64         // requests left in the current window, never negative
	ResetAt    time.Time     // when the current window ends and Remaining refills
	ResetSlack time.Duration // ResetAt may be this much late: 1 s for a value in whole seconds (rounded), 1 ms for milliseconds
	// ResetSaid is the reset as the server said it, before MaxHint
	// capped ResetAt, where it lies within the parser's Horizon: the end
	// of a window that may lie further off than any pause should last.
	// It tells a window's length where the server says none (a fixed
	// window's first request hears of a whole window), and how long what
	// is left must last. Wait until ResetAt, never until ResetSaid. Zero
	// where no reset is known, or it lies beyond the Horizon (a budget's,
	// see Parser.Horizon).
	ResetSaid  time.Time
	RetryAfter time.Duration // wait before the next request, capped by the parser's MaxHint
	RetrySlack time.Duration // RetryAfter may be this much longer than the server's wait: 1 s for whole seconds or an HTTP-date (rounded up), 0 when finer
	QuotaID    string        // X-RateLimit-Quota-ID or the IETF policy name, if any

	Signals   Signal // families present in the answer
	Malformed Signal // families present but unreadable (ignored), e.g. "Retry-After: soon"
}

// Has reports whether all of the fields f are known.
func (o *Observation) Has(f Field) bool { return o.Known&f == f }

// RetryAt returns the time before which the tenant should send nothing: the
// explicit retry hint if there is one that asks to wait (see HintWaits; it
// takes precedence over a reset time), else ResetAt when the answer was a
// throttle or Remaining is 0. It returns the zero time when the answer asked
// for no pause.
func (o *Observation) RetryAt() time.Time {
	if o.Has(FieldRetryAfter) && o.HintWaits() {
		return o.At.Add(o.RetryAfter)
	}
	if o.Has(FieldReset) && (o.Throttled || (o.Has(FieldRemaining) && o.Remaining == 0)) {
		return o.ResetAt
	}
	return time.Time{}
}

// HintWaits reports whether the answer's retry hint, if any, asks the
// client to wait before its next request: it does on a throttle, a 503 and
// a redirect (3xx), the answers RFC 9110 §10.2.3 gives Retry-After for. On
// any other answer (a 202 Accepted or a 200 saying when to poll again) it is
// about the resource, not the quota, and pauses nothing. An Observation with
// no status (built by hand) counts as asking.
func (o *Observation) HintWaits() bool {
	return o.Status == 0 || o.Throttled || o.Status == 503 || o.Status >= 300 && o.Status < 400
}
