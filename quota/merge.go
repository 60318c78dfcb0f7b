package quota

import "time"

// reading is what one policy of one family said, before it is merged into
// an Observation. Only the fields in known carry information.
type reading struct {
	known     Field
	limit     int64
	window    time.Duration
	remaining int64
	reset     time.Time     // capped by MaxHint
	said      time.Time     // the reset as said, before MaxHint capped it
	slack     time.Duration // the reset may be up to this much early: its value was rounded
	far       bool          // the reset lies beyond the horizon (before MaxHint capped it)
}

// pacesBefore reports whether policy a rather than b should pace: a policy
// whose window is within the horizon before one whose window is longer,
// else the tighter limit.
func pacesBefore(a, b *reading, horizon time.Duration) bool {
	if la, lb := a.longer(horizon), b.longer(horizon); la != lb && a.known&b.known&FieldLimit != 0 {
		return lb
	}
	return tighterLimit(a, b)
}

// longer reports whether r's window is known to be longer than horizon.
func (r *reading) longer(horizon time.Duration) bool {
	return r.known&FieldWindow != 0 && r.window > horizon
}

// bindsBefore reports whether budget a rather than b binds the client: a
// spent budget before one that is not, then one that resets within the
// horizon before one that resets beyond it, else the tighter budget.
func bindsBefore(a, b *reading, now time.Time) bool {
	if sa, sb := a.spent(now), b.spent(now); sa != sb {
		return sa
	}
	if a.known&b.known&FieldReset != 0 && a.far != b.far {
		return b.far
	}
	return tighterBudget(a, b, now)
}

// spent reports whether r says its budget is spent, and not reset by now.
func (r *reading) spent(now time.Time) bool {
	return r.known&FieldRemaining != 0 && r.remaining == 0 && (r.known&FieldReset == 0 || r.reset.After(now))
}

// tighterLimit reports whether the limit of a is more restrictive than that
// of b. With both windows known the lower rate wins (ties: the smaller
// limit); otherwise the smaller limit wins.
func tighterLimit(a, b *reading) bool {
	if a.known&FieldLimit == 0 {
		return false
	}
	if b.known&FieldLimit == 0 {
		return true
	}
	if a.known&b.known&FieldWindow != 0 {
		ra := float64(a.limit) / a.window.Seconds()
		rb := float64(b.limit) / b.window.Seconds()
		if ra != rb {
			return ra < rb
		}
	}
	return a.limit < b.limit
}

// tighterBudget reports whether the remaining budget of a is more
// restrictive than that of b: the lower spendable rate remaining/(reset-now)
// when both give both, else the smaller remaining, else the later reset.
// A budget that resets now restricts nothing.
func tighterBudget(a, b *reading, now time.Time) bool {
	const rr = FieldRemaining | FieldReset
	switch {
	case a.known&(rr) == 0:
		return false
	case b.known&(rr) == 0:
		return true
	case a.known&rr == rr && b.known&rr == rr:
		ta, tb := a.reset.Sub(now).Seconds(), b.reset.Sub(now).Seconds()
		switch {
		case ta <= 0:
			return false
		case tb <= 0:
			return true
		}
		ra, rb := float64(a.remaining)/ta, float64(b.remaining)/tb
		if ra != rb {
			return ra < rb
		}
		return a.reset.After(b.reset)
	case a.known&b.known&FieldRemaining != 0:
		return a.remaining < b.remaining
	case a.known&FieldRemaining != 0:
		return true
	case b.known&FieldRemaining != 0:
		return false
	}
	return a.reset.After(b.reset)
}

// pick combines two policies of one family (e.g. a per-second and a
// per-hour quota) into the most restrictive pair: the limit and window of
// one, the remaining and reset of the one that binds (see bindsBefore),
// never mixing the fields of two policies within a pair.
func pick(a, b reading, now time.Time) reading {
	out := a
	if tighterLimit(&b, &a) {
		out.known = out.known&^(FieldLimit|FieldWindow) | b.known&(FieldLimit|FieldWindow)
		out.limit, out.window = b.limit, b.window
	}
	if bindsBefore(&b, &a, now) {
		out.known = out.known&^(FieldRemaining|FieldReset) | b.known&(FieldRemaining|FieldReset)
		out.remaining, out.reset, out.said, out.slack, out.far = b.remaining, b.reset, b.said, b.slack, b.far
	}
	return out
}

// merge folds one family's reading into o. Families describe the same quota,
// so when they disagree the more restrictive value wins field by field: the
// smallest limit, one whose window is within the horizon first (see
// pacesBefore), keeping its window or, when it has none, borrowing the
// other's if that is within the horizon; the smallest remaining and the
// latest reset (as said: several beyond MaxHint are all capped alike). A
// budget that resets beyond the horizon with some of it left gives its
// remaining but not its reset (see Parser.Horizon); and a reset beyond the
// horizon, spent or not, is no window's end (ResetSaid).
func (o *Observation) merge(r reading, horizon time.Duration) {
	if r.far && r.known&FieldRemaining != 0 && r.remaining > 0 {
		// A budget that resets beyond the horizon and is not spent is one
		// to stay inside, not to spread until its reset.
		r.known &^= FieldReset
	}
	if r.known&FieldLimit != 0 {
		cur := reading{known: o.Known & (FieldLimit | FieldWindow), limit: o.Limit, window: o.Window}
		if pacesBefore(&r, &cur, horizon) {
			if r.known&FieldWindow == 0 && !cur.longer(horizon) {
				r.window = o.Window
				r.known |= o.Known & FieldWindow
			}
			o.Known = o.Known&^FieldWindow | r.known&(FieldLimit|FieldWindow)
			o.Limit, o.Window = r.limit, r.window
		} else if cur.known&FieldWindow == 0 && r.known&FieldWindow != 0 && !r.longer(horizon) {
			o.Known |= FieldWindow
			o.Window = r.window
		}
	}
	if r.known&FieldRemaining != 0 && (!o.Has(FieldRemaining) || r.remaining < o.Remaining) {
		o.Known |= FieldRemaining
		o.Remaining = r.remaining
	}
	if r.known&FieldReset != 0 && (!o.Has(FieldReset) || r.later(o)) {
		o.Known |= FieldReset
		o.ResetAt, o.ResetSlack, o.ResetSaid = r.reset, r.slack, time.Time{}
		if !r.far {
			o.ResetSaid = r.said
		}
	}
}

// later reports whether r's reset lies after o's, as said: one beyond the
// horizon (o's has no ResetSaid) after one within it, else the later
// said (capped alike beyond the horizon, the first stands).
func (r *reading) later(o *Observation) bool {
	if oFar := o.ResetSaid.IsZero(); r.far != oFar {
		return r.far
	}
	if r.far {
		return r.reset.After(o.ResetAt)
	}
	return r.said.After(o.ResetSaid)
}

// mergeRetryAfter keeps the longest retry hint, with its slack.
func (o *Observation) mergeRetryAfter(d, slack time.Duration) {
	if !o.Has(FieldRetryAfter) || d > o.RetryAfter {
		o.Known |= FieldRetryAfter
		o.RetryAfter, o.RetrySlack = d, slack
	}
}
