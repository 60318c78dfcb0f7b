package quota

import "time"

// maxQuotaID caps the length of a quota id or policy name.
const maxQuotaID = 128

// parseXRateLimit reads X-RateLimit-Limit, X-RateLimit-Remaining,
// X-RateLimit-Reset and X-RateLimit-Quota-ID. Reset may be delta seconds
// (most gateways), epoch seconds (GitHub) or epoch milliseconds; resetKind
// tells them apart by magnitude.
func parseXRateLimit(o *Observation, limit, remaining, reset, quotaID []string, now time.Time, maxHint, horizon time.Duration) {
	o.Signals |= SignalXRateLimit
	r, bad := trio(limit, remaining)
	if d, ok, b := oneDecimal(reset); ok {
		if t, ok := resetAt(d, now); ok {
			r.setReset(t, now, maxHint, horizon)
			r.slack = resetSlack(d, now)
		} else {
			bad = true
		}
	} else if b {
		bad = true
	}
	if quotaID != nil {
		if id, ok := cleanID(quotaID); ok {
			if o.QuotaID == "" {
				o.QuotaID = id
			}
		} else {
			bad = true
		}
	}
	if bad {
		o.Malformed |= SignalXRateLimit
	}
	o.merge(r, horizon)
}

// trio reads the Limit and Remaining headers shared by the X-RateLimit and
// IETF families; the caller reads Reset, whose forms differ.
func trio(limit, remaining []string) (r reading, bad bool) {
	if limit != nil {
		l, w, known, b := parseLimit(limit)
		r.known |= known
		r.limit, r.window = l, w
		bad = bad || b
	}
	if remaining != nil {
		n, ok, b := oneCount(remaining)
		if ok {
			r.known |= FieldRemaining
			r.remaining = n
		}
		bad = bad || b
	}
	return r, bad
}

// parseLimit reads a limit header: a count, or a list whose first member is
// the limit in force followed by policies ("100, 100;w=60, 1000;w=3600").
// The window is the w parameter of the first member, or else of the first
// policy with the same count. known is zero if the first member does not
// parse; bad reports any member that does not parse.
func parseLimit(vs []string) (limit int64, window time.Duration, known Field, bad bool) {
	first := true
	for m := range members(vs) {
		num, params, _ := cut(m, ';')
		n, ok := parseCount(num)
		w, hasW, wbad := windowParam(params)
		bad = bad || !ok || wbad
		switch {
		case first:
			first = false
			if !ok {
				return 0, 0, 0, true
			}
			limit, known = n, FieldLimit
			if hasW {
				window, known = w, known|FieldWindow
			}
		case ok && hasW && n == limit && known&FieldWindow == 0:
			window, known = w, known|FieldWindow
		}
	}
	return limit, window, known, bad
}

// windowParam finds w=<seconds> among ";"-separated parameters.
func windowParam(params string) (w time.Duration, ok, bad bool) {
	for more := params != ""; more; {
		var p string
		p, params, more = cut(params, ';')
		k, v, _ := cut(p, '=')
		if !equalFold(trimOWS(k), "w") {
			continue
		}
		d, good := parseDecimal(v)
		if good {
			w, good = clampWindow(d)
		}
		if !good {
			return 0, false, true
		}
		ok = true
	}
	return w, ok, false
}

// oneCount reads a header that carries one count, possibly repeated across
// lines or list members (parameters after ';' are ignored). ok if at least
// one member parsed and all parsed members agree; bad if any member did not
// parse or they disagree.
func oneCount(vs []string) (n int64, ok, bad bool) {
	for m := range members(vs) {
		m, _, _ = cut(m, ';')
		x, good := parseCount(m)
		switch {
		case !good:
			bad = true
		case ok && x != n:
			return 0, false, true
		default:
			n, ok = x, true
		}
	}
	return n, ok, bad
}

// oneDecimal is oneCount for a decimal value such as a reset time.
func oneDecimal(vs []string) (d decimal, ok, bad bool) {
	for m := range members(vs) {
		m, _, _ = cut(m, ';')
		x, good := parseDecimal(m)
		switch {
		case !good:
			bad = true
		case ok && x != d:
			return decimal{}, false, true
		default:
			d, ok = x, true
		}
	}
	return d, ok, bad
}

// cleanID returns the quota id carried by the lines of a header: printable
// ASCII without spaces, at most maxQuotaID bytes, the same on every line.
func cleanID(vs []string) (string, bool) {
	var id string
	for i, v := range vs {
		v = trimOWS(v)
		if !printableID(v) || (i > 0 && v != id) {
			return "", false
		}
		id = v
	}
	return id, id != ""
}

// printableID reports whether s is a usable id: 1 to maxQuotaID bytes of
// visible ASCII.
func printableID(s string) bool {
	if s == "" || len(s) > maxQuotaID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
