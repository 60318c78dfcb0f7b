package quota

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrMalformed is wrapped by the errors of the exported value parsers, such
// as ParseRetryAfter: the value is unreadable and must be ignored.
var ErrMalformed = errors.New("quota: malformed rate-limit value")

// ParseRetryAfter reads a Retry-After value: delta seconds ("120", and
// tolerantly "1.5") or an HTTP-date in any of the three forms http.ParseTime
// accepts. A date in the past gives 0. The result is capped at maxHint; a
// maxHint of 0 or less means DefaultMaxHint. Negative, non-numeric, NaN,
// exponent and overflowing values return an error wrapping ErrMalformed.
func ParseRetryAfter(v string, now time.Time, maxHint time.Duration) (time.Duration, error) {
	if maxHint <= 0 {
		maxHint = DefaultMaxHint
	}
	d, ok := retryAfter(v, now, maxHint)
	if !ok {
		return 0, fmt.Errorf("%w: Retry-After %q", ErrMalformed, v)
	}
	return d, nil
}

// retryAfter is ParseRetryAfter without the error value.
func retryAfter(v string, now time.Time, maxHint time.Duration) (time.Duration, bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if c := v[0]; c >= '0' && c <= '9' {
		n, ok := parseDecimal(v)
		if !ok {
			return 0, false
		}
		d, ok := n.dur(time.Second)
		if !ok {
			return 0, false
		}
		return min(d, maxHint), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxHint), true
}

// parseRetryAfterHeader reads every Retry-After line. Lines must agree; any
// unreadable line or a disagreement marks the family malformed, and a
// disagreement drops the hint altogether.
func parseRetryAfterHeader(o *Observation, vs []string, now time.Time, maxHint time.Duration) {
	o.Signals |= SignalRetryAfter
	d, ok, bad := oneHint(vs, now, maxHint, retryAfter)
	if bad {
		o.Malformed |= SignalRetryAfter
	}
	if ok {
		o.mergeRetryAfter(d, retrySlack(vs))
	}
}

// retrySlack is the resolution of a Retry-After value: a server that says
// whole seconds, or a date, rounds its wait up to the next second; one that
// says a fraction ("1.5") is taken at its word.
func retrySlack(vs []string) time.Duration {
	for _, v := range vs {
		if strings.Contains(v, ".") {
			return 0
		}
	}
	return time.Second
}

// acsRetryAfter reads x-acs-retry-after: milliseconds, capped at maxHint.
func acsRetryAfter(v string, _ time.Time, maxHint time.Duration) (time.Duration, bool) {
	n, ok := parseDecimal(v)
	if !ok {
		return 0, false
	}
	d, ok := n.dur(time.Millisecond)
	if !ok {
		return 0, false
	}
	return min(d, maxHint), true
}

// oneHint reads a hint header that may be repeated on several lines: ok if
// at least one line parsed and all parsed lines agree; bad if any line did
// not parse or the lines disagree.
func oneHint(vs []string, now time.Time, maxHint time.Duration, parse func(string, time.Time, time.Duration) (time.Duration, bool)) (d time.Duration, ok, bad bool) {
	for _, v := range vs {
		x, good := parse(v, now, maxHint)
		switch {
		case !good:
			bad = true
		case ok && x != d:
			return 0, false, true
		default:
			d, ok = x, true
		}
	}
	return d, ok, bad
}
