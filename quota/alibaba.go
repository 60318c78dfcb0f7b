package quota

import "time"

// parseAlibaba reads the Alibaba Cloud gateway headers x-ratelimit-user-api
// (the per-API quota) and x-ratelimit-user (the account quota). Each value
// is a list of Name:Value fields in any order, e.g.
//
//	Limit:20,Remain:0,TimeLeft:2000,Reset:1733130000
//
// where TimeLeft is the milliseconds left in the current window and Reset
// the window's end (epoch seconds, though delta and epoch milliseconds are
// told apart as for X-RateLimit-Reset). TimeLeft is preferred to Reset for
// ResetAt. The window length itself is not given, so Window stays unknown
// (package adaptive takes it from the resets).
// The two headers are two quotas: the more restrictive pair wins (see pick).
func parseAlibaba(o *Observation, api, user []string, now time.Time, maxHint, horizon time.Duration) {
	o.Signals |= SignalAlibaba
	var r reading
	for i, vs := range [2][]string{api, user} {
		if vs == nil {
			continue
		}
		x, bad := alibabaReading(vs, now, maxHint, horizon)
		if bad {
			o.Malformed |= SignalAlibaba
		}
		if i == 0 {
			r = x
		} else {
			r = pick(r, x, now)
		}
	}
	o.merge(r, horizon)
}

// alibabaField indexes the fields of an Alibaba rate-limit header.
const (
	aliLimit = iota
	aliRemain
	aliTimeLeft
	aliReset
	aliFields
)

// alibabaReading reads the lines of one Alibaba rate-limit header as one
// record. Unknown field names are skipped; a field that does not parse, or
// that is repeated with another value, is dropped and reported as bad.
func alibabaReading(vs []string, now time.Time, maxHint, horizon time.Duration) (r reading, bad bool) {
	var (
		val  [aliFields]decimal
		set  [aliFields]bool
		drop [aliFields]bool
	)
	for m := range members(vs) {
		name, num, ok := cut(m, ':')
		if !ok {
			name, num, ok = cut(m, '=')
		}
		if !ok {
			bad = true
			continue
		}
		f := alibabaFieldOf(trimOWS(name))
		if f < 0 {
			continue
		}
		d, good := parseDecimal(num)
		if !good || (f != aliTimeLeft && f != aliReset && d.frac != 0) {
			bad, drop[f] = true, true
			continue
		}
		if set[f] && d != val[f] {
			bad, drop[f] = true, true
		}
		val[f], set[f] = d, true
	}
	for f := range set {
		set[f] = set[f] && !drop[f]
	}
	if set[aliLimit] {
		r.known |= FieldLimit
		r.limit = min(val[aliLimit].whole, MaxCount)
	}
	if set[aliRemain] {
		r.known |= FieldRemaining
		r.remaining = min(val[aliRemain].whole, MaxCount)
	}
	switch {
	case set[aliTimeLeft]:
		if d, ok := val[aliTimeLeft].dur(time.Millisecond); ok {
			r.setReset(now.Add(d), now, maxHint, horizon)
			r.slack = time.Millisecond
		} else {
			bad = true
		}
	case set[aliReset]:
		if t, ok := resetAt(val[aliReset], now); ok {
			r.setReset(t, now, maxHint, horizon)
			r.slack = resetSlack(val[aliReset], now)
		} else {
			bad = true
		}
	}
	return r, bad
}

// alibabaFieldOf maps a field name, in any case, to its index, or -1.
func alibabaFieldOf(name string) int {
	switch name {
	case "Limit":
		return aliLimit
	case "Remain":
		return aliRemain
	case "TimeLeft":
		return aliTimeLeft
	case "Reset":
		return aliReset
	}
	switch {
	case equalFold(name, "limit"):
		return aliLimit
	case equalFold(name, "remain"), equalFold(name, "remaining"):
		return aliRemain
	case equalFold(name, "timeleft"):
		return aliTimeLeft
	case equalFold(name, "reset"):
		return aliReset
	}
	return -1
}
