package quota

import (
	"iter"
	"math"
	"time"
)

// Caps applied to what a server says.
const (
	// DefaultMaxHint caps every duration hint when Parser.MaxHint is 0.
	DefaultMaxHint = time.Minute

	// DefaultHorizon is the longest window paced when Parser.Horizon is 0:
	// a quarter hour. Windows of a second, a minute, five or ten minutes
	// are rates a server counts, to be spread; an hourly or a daily quota
	// is a budget, spent as the caller needs until it is gone.
	DefaultHorizon = 15 * time.Minute
	// DefaultMaxBody is how many bytes of an error body Parse peeks at when
	// Parser.MaxBody is 0.
	DefaultMaxBody = 64 << 10
	// MaxCount caps a limit or remaining count; larger values that still fit
	// an int64 are clamped to it, values that overflow are malformed.
	MaxCount = 1 << 40
	// MaxWindow caps a quota window read from a header.
	MaxWindow = 366 * 24 * time.Hour
)

// decimal is a non-negative decimal number: whole units plus a fraction in
// billionths of a unit.
type decimal struct {
	whole int64
	frac  int64 // [0, 1e9)
}

// isOWS reports whether c is HTTP optional white space.
func isOWS(c byte) bool { return c == ' ' || c == '\t' }

// trimOWS trims spaces and tabs from both ends of s.
func trimOWS(s string) string {
	for len(s) > 0 && isOWS(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isOWS(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// cut splits s at the first sep; more reports whether sep was found.
// members yields the non-empty list members of a header's lines: each line
// split at commas, optional white space trimmed. (No header family tollgate
// reads puts a comma inside a quoted string it needs.)
func members(vs []string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, v := range vs {
			for more := true; more; {
				var m string
				m, v, more = cut(v, ',')
				if m = trimOWS(m); m != "" && !yield(m) {
					return
				}
			}
		}
	}
}

func cut(s string, sep byte) (before, after string, more bool) {
	for i := 0; i < len(s); i++ { // values are short: a loop beats IndexByte
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// parseUint parses s, all ASCII digits, into an int64. It fails on an empty
// string, any other byte (signs, spaces, exponents) and overflow.
func parseUint(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := int64(s[i]) - '0'
		if d < 0 || d > 9 || n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseCount parses a limit or remaining count: digits only, after trimming
// white space, clamped to MaxCount.
func parseCount(s string) (int64, bool) {
	n, ok := parseUint(trimOWS(s))
	return min(n, MaxCount), ok
}

// parseDecimal parses digits with an optional fraction ("30", "1.5") after
// trimming white space. Signs, exponents, NaN and Inf are refused, as is a
// whole part that overflows an int64. Fraction digits past the ninth are
// checked and dropped.
func parseDecimal(s string) (decimal, bool) {
	s = trimOWS(s)
	w, f, dot := cut(s, '.')
	whole, ok := parseUint(w)
	if !ok || (dot && f == "") {
		return decimal{}, false
	}
	d := decimal{whole: whole}
	scale := int64(1e8)
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c < '0' || c > '9' {
			return decimal{}, false
		}
		d.frac += int64(c-'0') * scale
		scale /= 10
	}
	return d, true
}

// dur converts d, counted in unit, to a Duration; it fails if the result
// does not fit.
func (d decimal) dur(unit time.Duration) (time.Duration, bool) {
	if d.whole >= math.MaxInt64/int64(unit) {
		return 0, false
	}
	return time.Duration(d.whole)*unit + time.Duration(d.frac)*unit/time.Second, true
}

// clampTime returns t limited to [now, now+maxHint].
func clampTime(t, now time.Time, maxHint time.Duration) time.Time {
	if t.Before(now) {
		return now
	}
	if lim := now.Add(maxHint); t.After(lim) {
		return lim
	}
	return t
}

// clampWindow checks a window length in seconds.
func clampWindow(d decimal) (time.Duration, bool) {
	w, ok := d.dur(time.Second)
	if !ok || w <= 0 {
		return 0, false
	}
	return min(w, MaxWindow), true
}

// resetAt reads a reset value that may be delta seconds, epoch seconds or
// epoch milliseconds, telling them apart by magnitude relative to now (see
// resetKind), as said: setReset caps it. It fails only on a delta that
// overflows a Duration, which parseDecimal already excludes for realistic
// clocks.
func resetAt(d decimal, now time.Time) (t time.Time, ok bool) {
	switch resetKind(d.whole, now) {
	case resetDelta:
		dd, ok := d.dur(time.Second)
		if !ok {
			return time.Time{}, false
		}
		t = now.Add(dd)
	case resetEpochSeconds:
		t = time.Unix(d.whole, d.frac)
	default:
		t = time.UnixMilli(d.whole).Add(time.Duration(d.frac / 1e6))
	}
	return t, true
}

// setReset sets r's reset to t, as said (said, no earlier than now) and
// capped by maxHint (reset, see clampTime); far says t lies beyond
// now+horizon.
func (r *reading) setReset(t, now time.Time, maxHint, horizon time.Duration) {
	r.known |= FieldReset
	r.reset, r.far = clampTime(t, now, maxHint), t.Sub(now) > horizon
	r.said = r.reset
	if t.After(r.reset) {
		r.said = t
	}
}

// resetSlack returns how much earlier than resetAt(d, now) the real
// reset may be: a whole number of seconds was most likely rounded up (a
// second), a value in milliseconds or with a fraction is exact enough.
func resetSlack(d decimal, now time.Time) time.Duration {
	if d.frac != 0 || resetKind(d.whole, now) == resetEpochMillis {
		return time.Millisecond
	}
	return time.Second
}

// secondsSlack is resetSlack for a value known to be delta seconds.
func secondsSlack(d decimal) time.Duration {
	if d.frac != 0 {
		return time.Millisecond
	}
	return time.Second
}

type resetUnit int

const (
	resetDelta resetUnit = iota
	resetEpochSeconds
	resetEpochMillis
)

// resetKind tells a delta from epoch seconds from epoch milliseconds. With
// ref the Unix time of now in seconds (at least 1e9, i.e. 2001, so a zero or
// fake clock still classifies realistic values): values below ref/2 (about
// 28 years as a delta) are deltas, values below ref*500 (half of now in epoch
// milliseconds; as seconds that is beyond the year 20000) are epoch
// seconds, and larger values (from about 1985 on, in milliseconds) are epoch
// milliseconds.
func resetKind(v int64, now time.Time) resetUnit {
	ref := now.Unix()
	ref = max(ref, 1e9)
	ref = min(ref, 1<<40)
	switch {
	case v < ref/2:
		return resetDelta
	case v < ref*500:
		return resetEpochSeconds
	}
	return resetEpochMillis
}

// equalFold reports whether s equals lower, an ASCII lower-case string,
// ignoring ASCII case.
func equalFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
