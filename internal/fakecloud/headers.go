package fakecloud

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderMode selects the rate-limit header families a [Cloud] sends. The
// zero HeaderMode (HeadersNone) sends none, like the real gateway. Families
// combine with |.
//
// Values describe the quota that decided the request (see below): Remaining
// counts down within a window and Reset/TimeLeft count toward its end. For
// a sliding window, Reset is when the oldest admission in the window leaves
// it; for a token bucket, Limit is the burst and Reset is when the bucket is
// full again. Retry hints are the time until the next admission is possible,
// always rounded up (seconds for Retry-After, milliseconds for
// x-acs-retry-after), so a client that obeys them is never early.
type HeaderMode uint

const (
	// HeadersNone sends no rate-limit header.
	HeadersNone HeaderMode = 0
	// HeadersAlibaba sends "x-ratelimit-user-api: Limit:20,Remain:0,TimeLeft:2000,Reset:1733130000"
	// for the API quota and x-ratelimit-user for the account total
	// (TimeLeft in ms until the reset, Reset in epoch seconds), and on
	// throttles x-acs-retry-after in ms.
	HeadersAlibaba HeaderMode = 1 << iota
	// HeadersRetryAfter sends Retry-After on throttles: delta seconds, or
	// an HTTP-date if Config.RetryAfterDate.
	HeadersRetryAfter
	// HeadersXRateLimit sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (epoch seconds, GitHub style).
	HeadersXRateLimit
	// HeadersIETF sends RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (delta seconds).
	HeadersIETF
	// HeadersIETFStructured sends the structured fields
	// `RateLimit-Policy: "default";q=100;w=60` and `RateLimit: "default";r=50;t=30`.
	HeadersIETFStructured

	// HeadersAll sends every family.
	HeadersAll = HeadersAlibaba | HeadersRetryAfter | HeadersXRateLimit | HeadersIETF | HeadersIETFStructured
)

var headerModeNames = []struct {
	mode HeaderMode
	name string
}{
	{HeadersAlibaba, "alibaba"},
	{HeadersRetryAfter, "retry-after"},
	{HeadersXRateLimit, "x-ratelimit"},
	{HeadersIETF, "ietf"},
	{HeadersIETFStructured, "ietf-structured"},
}

// String returns the families as ParseHeaderMode reads them, e.g.
// "alibaba,retry-after", or "none".
func (m HeaderMode) String() string {
	var names []string
	for _, n := range headerModeNames {
		if m&n.mode != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseHeaderMode parses a comma-separated list of "none", "alibaba",
// "retry-after", "x-ratelimit", "ietf", "ietf-structured" and "all".
func ParseHeaderMode(s string) (HeaderMode, error) {
	var m HeaderMode
	for f := range strings.SplitSeq(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "", "none":
			continue
		case "all":
			m |= HeadersAll
			continue
		}
		found := false
		for _, n := range headerModeNames {
			if n.name == f {
				m |= n.mode
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("fakecloud: unknown header mode %q", f)
		}
	}
	return m, nil
}

// ceilDiv returns ⌈d/unit⌉ for d ≥ 0, and 0 for d < 0.
func ceilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + unit - 1) / unit)
}

// ceilUnix returns t as epoch seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// setRateLimitHeaders sets the configured families on h for a.
func (c *Cloud) setRateLimitHeaders(h http.Header, a admission, now time.Time) {
	mode := c.cfg.Headers
	st, ok := a.binding()
	if mode == HeadersNone || !ok {
		return
	}
	throttled := !a.ok
	if mode&HeadersAlibaba != 0 {
		if a.hasAPI {
			h.Set("x-ratelimit-user-api", alibabaValue(a.api, now))
		}
		if a.hasTotal {
			h.Set("x-ratelimit-user", alibabaValue(a.total, now))
		}
		if throttled {
			h.Set("x-acs-retry-after", strconv.FormatInt(max(ceilDiv(st.retry, time.Millisecond), 1), 10))
		}
	}
	if mode&HeadersRetryAfter != 0 && throttled {
		if c.cfg.RetryAfterDate {
			h.Set("Retry-After", time.Unix(ceilUnix(now.Add(st.retry)), 0).UTC().Format(http.TimeFormat))
		} else {
			h.Set("Retry-After", strconv.FormatInt(max(ceilDiv(st.retry, time.Second), 1), 10))
		}
	}
	if mode&HeadersXRateLimit != 0 {
		h.Set("X-RateLimit-Limit", strconv.Itoa(st.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(st.remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(now.Add(st.reset)), 10))
	}
	if mode&HeadersIETF != 0 {
		h.Set("RateLimit-Limit", strconv.Itoa(st.limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(st.remaining))
		h.Set("RateLimit-Reset", strconv.FormatInt(ceilDiv(st.reset, time.Second), 10))
	}
	if mode&HeadersIETFStructured != 0 {
		h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, st.limit, ceilDiv(st.quota.Window, time.Second)))
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, st.remaining, ceilDiv(st.reset, time.Second)))
	}
}

// alibabaValue formats an x-ratelimit-user(-api) value.
func alibabaValue(st limitStatus, now time.Time) string {
	return fmt.Sprintf("Limit:%d,Remain:%d,TimeLeft:%d,Reset:%d",
		st.limit, st.remaining, ceilDiv(st.reset, time.Millisecond), ceilUnix(now.Add(st.reset)))
}

// garbage holds malformed values for the malformed-headers fault.
var garbage = []string{
	"garbage",
	"-5",
	"99999999999999999999999999",
	"Fri, 31 Dec 9999 23:59:59 GMT",
	"1e309",
	"",
	"Limit:abc,Remain:-1,TimeLeft:99999999999999999999,Reset:-5",
	`"default";q=-1;w=abc`,
}

// malformedHeaders are the headers the malformed-headers fault overwrites.
var malformedHeaders = []string{
	"x-ratelimit-user-api", "x-ratelimit-user", "x-acs-retry-after", "Retry-After",
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
	"RateLimit-Policy", "RateLimit",
}

// setMalformedHeaders sets every rate-limit header to garbage chosen by pick.
func setMalformedHeaders(h http.Header, pick func(n int) int) {
	for _, k := range malformedHeaders {
		h.Set(k, garbage[pick(len(garbage))])
	}
}
