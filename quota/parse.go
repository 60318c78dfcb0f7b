package quota

import (
	"net/http"
	"strings"
	"time"
)

// Parser reads rate-limit signals from answers into Observations. The zero
// Parser (and a nil *Parser) uses the documented defaults and is ready to
// use. A Parser is safe for concurrent use; its fields must not be changed
// after first use.
type Parser struct {
	// MaxHint caps every duration the server states: Retry-After,
	// x-acs-retry-after, and how far ahead ResetAt may lie. 0 or less means
	// DefaultMaxHint (1 min).
	MaxHint time.Duration

	// Horizon is the longest window a quota is paced over. A quota whose
	// window is longer (a daily one) is a budget to stay inside, not a pace
	// to spread over its window: where the server lists several policies,
	// the tightest within Horizon gives Limit and Window, and a longer
	// window's limit is left out of the Observation. So is the reset of a
	// budget that resets beyond Horizon while some of it is left: it is
	// spent at the pace in force, not spread until its reset; once it is
	// spent (Remaining 0) its reset, capped by MaxHint, pauses the tenant.
	// Where several budgets are said, a spent one binds first, then one
	// that resets within Horizon. 0 or less means DefaultHorizon (15 min).
	Horizon time.Duration

	// MaxBody is how many bytes of an error answer's body (status >= 400)
	// Parse peeks at for an error code. 0 means DefaultMaxBody (64 KiB); a
	// negative value means the body is never read.
	MaxBody int64

	// ThrottleCodes are extra body error codes that mean a throttle, on top
	// of those IsThrottleCode knows. Compared ignoring ASCII case.
	ThrottleCodes []string

	// TransientCodes are extra body error codes that mean a transient
	// failure, on top of those IsTransientCode knows. Compared ignoring
	// ASCII case.
	TransientCodes []string
}

// Parse is (*Parser)(nil).Parse: it reads resp with the default Parser.
func Parse(resp *http.Response, now time.Time) Observation {
	var p *Parser
	return p.Parse(resp, now)
}

// Parse reads resp into an Observation; now is the time the answer arrived
// and becomes Observation.At. For an error answer (status >= 400) it peeks
// at up to MaxBody bytes of resp.Body for an error code and replaces
// resp.Body with a reader that yields the full original bytes (and then
// whatever error the original body returned); closing it closes the original
// body. A 2xx or 3xx answer's body is never touched. Parse must not run
// while another goroutine uses resp. A nil resp gives an Observation with
// only At set.
func (p *Parser) Parse(resp *http.Response, now time.Time) (o Observation) {
	if resp == nil {
		o.At = now
		return o
	}
	var body []byte
	if resp.StatusCode >= 400 {
		body = peekBody(resp, p.maxBody())
	}
	p.parse(&o, resp.StatusCode, resp.Header, body, now)
	return o
}

// ParseParts reads an answer given as its parts: status code, header and
// the start of the body, which is only looked at when status >= 400. It
// reads every header family (see Signal), each in every form its
// specifications and common servers use:
//
//   - Retry-After: delta seconds or an HTTP-date; a past date means 0.
//   - x-acs-retry-after (milliseconds), x-ratelimit-user-api and
//     x-ratelimit-user (Limit:20,Remain:0,TimeLeft:2000,Reset:1733130000).
//   - X-RateLimit-Limit/Remaining/Reset/Quota-ID, with Reset in delta
//     seconds, epoch seconds or epoch milliseconds, told apart by magnitude
//     relative to now.
//   - RateLimit-Limit/Remaining/Reset (delta seconds).
//   - RateLimit-Policy and RateLimit structured fields (RFC 9651 lists; a
//     field that does not parse is ignored whole).
//
// Header names are matched ignoring case. Families that disagree are merged
// into the most restrictive reading (see Observation); a quota whose window
// is longer than Horizon is a budget, not a pace (see Parser.Horizon).
// Malformed values are ignored and reported in Observation.Malformed,
// durations are capped at MaxHint and counts at MaxCount.
//
// The answer is a throttle (Observation.Throttled) if the status is 429, if
// the body's code is a throttle code, or if it is a 403 that says the quota
// is exhausted (Remaining 0) or gives a retry hint, as GitHub does. An
// exhausted quota on a successful answer is not a throttle. Otherwise it is
// transient (Observation.Transient) if the body's code is a transient code,
// or the status is 502, 503 or 504.
func (p *Parser) ParseParts(status int, h http.Header, body []byte, now time.Time) (o Observation) {
	p.parse(&o, status, h, body, now)
	return o
}

// parse is ParseParts writing into o, which must be zero.
func (p *Parser) parse(o *Observation, status int, h http.Header, body []byte, now time.Time) {
	p.parseHead(o, status, h, now)
	p.parseBody(o, body)
}

// parseHead reads the status and headers into o, which must be zero.
func (p *Parser) parseHead(o *Observation, status int, h http.Header, now time.Time) {
	o.At, o.Status = now, status
	// Most answers carry no rate-limit header: look for one first, and only
	// then pay for collecting and parsing them.
	for k := range h {
		if headerID(k) != hNone {
			parseHeaders(o, h, now, p.maxHint(), p.horizon())
			p.beyondHorizon(o)
			break
		}
	}
}

// parseBody reads the error code of an error answer's body into o, which
// holds its head, and classifies the answer.
func (p *Parser) parseBody(o *Observation, body []byte) {
	if o.Status >= 400 && len(body) > 0 {
		code, found, bad := bodyCode(body)
		if found {
			o.Signals |= SignalBody
			o.Code = code
		}
		if bad {
			o.Malformed |= SignalBody
		}
	}
	p.classify(o)
}

// beyondHorizon leaves out of o a limit over a window longer than the
// horizon: a budget, not a pace (see Parser.Horizon).
func (p *Parser) beyondHorizon(o *Observation) {
	if o.Has(FieldWindow) && o.Window > p.horizon() {
		o.Known &^= FieldLimit | FieldWindow
		o.Limit, o.Window = 0, 0
	}
}

// classify sets Throttled and Transient from the status and code.
func (p *Parser) classify(o *Observation) {
	switch {
	case o.Code != "" && p.isThrottle(o.Code):
		o.Throttled = true
	case o.Status == http.StatusTooManyRequests:
		o.Throttled = true
		o.Signals |= SignalStatus
	case o.Status == http.StatusForbidden && (o.Has(FieldRetryAfter) || (o.Has(FieldRemaining) && o.Remaining == 0)):
		o.Throttled = true
		o.Signals |= SignalStatus
	case o.Code != "" && p.isTransient(o.Code):
		o.Transient = true
	case o.Status == http.StatusBadGateway || o.Status == http.StatusServiceUnavailable || o.Status == http.StatusGatewayTimeout:
		o.Transient = true
		o.Signals |= SignalStatus
	}
}

func (p *Parser) isThrottle(code string) bool {
	return IsThrottleCode(code) || p != nil && hasCode(p.ThrottleCodes, code)
}

func (p *Parser) isTransient(code string) bool {
	return IsTransientCode(code) || p != nil && hasCode(p.TransientCodes, code)
}

// hasCode reports whether codes holds code, ignoring case.
func hasCode(codes []string, code string) bool {
	for _, c := range codes {
		if strings.EqualFold(c, code) {
			return true
		}
	}
	return false
}

func (p *Parser) maxHint() time.Duration {
	if p == nil || p.MaxHint <= 0 {
		return DefaultMaxHint
	}
	return p.MaxHint
}

func (p *Parser) horizon() time.Duration {
	if p == nil || p.Horizon <= 0 {
		return DefaultHorizon
	}
	return p.Horizon
}

func (p *Parser) maxBody() int64 {
	if p == nil || p.MaxBody == 0 {
		return DefaultMaxBody
	}
	return p.MaxBody
}
