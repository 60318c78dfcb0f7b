package quota

import "time"

// reading is what one policy of one family said, before it is merged into
// an Observation. Only the fields in known carry information.
type reading struct {
	known     Field
	limit     int64
	window    time.Duration
	remaining int64
	reset     time.Time
	slack     time.Duration // the reset may be up to this much early: its value was rounded
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
// one, the remaining and reset of one, never mixing the fields of two
// policies within a pair.
func pick(a, b reading, now time.Time) reading {
	out := a
	if tighterLimit(&b, &a) {
		out.known = out.known&^(FieldLimit|FieldWindow) | b.known&(FieldLimit|FieldWindow)
		out.limit, out.window = b.limit, b.window
	}
	if tighterBudget(&b, &a, now) {
		out.known = out.known&^(FieldRemaining|FieldReset) | b.known&(FieldRemaining|FieldReset)
		out.remaining, out.reset, out.slack = b.remaining, b.reset, b.slack
	}
	return out
}

// merge folds one family's reading into o. Families describe the same quota,
// so when they disagree the more restrictive value wins field by field: the
// smallest limit (keeping its window, or borrowing the other's when it has
// none), the smallest remaining and the latest reset.
func (o *Observation) merge(r reading) {
	if r.known&FieldLimit != 0 {
		cur := reading{known: o.Known & (FieldLimit | FieldWindow), limit: o.Limit, window: o.Window}
		if tighterLimit(&r, &cur) {
			if r.known&FieldWindow == 0 {
				r.window = o.Window
				r.known |= o.Known & FieldWindow
			}
			o.Known = o.Known&^FieldWindow | r.known&(FieldLimit|FieldWindow)
			o.Limit, o.Window = r.limit, r.window
		} else if cur.known&FieldWindow == 0 && r.known&FieldWindow != 0 {
			o.Known |= FieldWindow
			o.Window = r.window
		}
	}
	if r.known&FieldRemaining != 0 && (!o.Has(FieldRemaining) || r.remaining < o.Remaining) {
		o.Known |= FieldRemaining
		o.Remaining = r.remaining
	}
	if r.known&FieldReset != 0 && (!o.Has(FieldReset) || r.reset.After(o.ResetAt)) {
		o.Known |= FieldReset
		o.ResetAt, o.ResetSlack = r.reset, r.slack
	}
}

// mergeRetryAfter keeps the longest retry hint, with its slack.
func (o *Observation) mergeRetryAfter(d, slack time.Duration) {
	if !o.Has(FieldRetryAfter) || d > o.RetryAfter {
		o.Known |= FieldRetryAfter
		o.RetryAfter, o.RetrySlack = d, slack
	}
}
