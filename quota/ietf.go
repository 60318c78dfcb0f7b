package quota

import "time"

// parseIETF reads the IETF trio RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset. Reset is delta seconds, as the draft says; Limit may be a
// list with a w parameter, as for X-RateLimit-Limit.
func parseIETF(o *Observation, limit, remaining, reset []string, now time.Time, maxHint, horizon time.Duration) {
	o.Signals |= SignalIETF
	r, bad := trio(limit, remaining)
	if reset != nil {
		d, ok, b := oneDecimal(reset)
		if ok {
			if dd, good := d.dur(time.Second); good {
				r.setReset(now.Add(dd), now, maxHint, horizon)
				r.slack = secondsSlack(d)
			} else {
				b = true
			}
		}
		bad = bad || b
	}
	if bad {
		o.Malformed |= SignalIETF
	}
	o.merge(r, horizon)
}

// parseIETFFields reads the structured fields of the IETF draft,
//
//	RateLimit-Policy: "burst";q=100;w=1, "daily";q=1000;w=86400
//	RateLimit: "burst";r=50;t=1
//
// across any number of lines. Each field is an RFC 9651 list: one that does
// not parse is ignored whole and reported as malformed. Within a field that
// parses, a member not named by a string or token (an older draft's policy
// may be a number instead: "100;w=60" is read as q=100), or whose q, w, r or
// t is not a non-negative integer (w not zero), is skipped and reported as
// malformed. A policy counted in another unit than requests
// (qu="content-bytes", "concurrent-requests"), and the budget that names it,
// are not a request rate and are skipped silently.
//
// When several policies are listed, one paces and one budgets. The limit is
// the lowest rate q/w among the policies whose window is within the
// horizon (a longer one only where none is: see Parser.Horizon). The budget
// is a spent one (r=0) if any, else the lowest spendable rate r/t among
// those whose reset is within the horizon, else among the others (see
// pick). So "burst";q=100;w=1 paces and "daily";q=1000;w=86400 stops the
// tenant only once its budget is spent. The name of the budget's policy,
// else of the limit's, becomes the QuotaID unless X-RateLimit-Quota-ID set
// one.
func parseIETFFields(o *Observation, policy, budget []string, now time.Time, maxHint, horizon time.Duration) {
	o.Signals |= SignalIETFFields
	lim, limName, others, badLim := policies(policy, horizon)
	bud, budName, badBud := budgets(budget, &others, now, maxHint, horizon)
	if badLim || badBud {
		o.Malformed |= SignalIETFFields
	}
	lim.known |= bud.known
	lim.remaining, lim.reset, lim.said, lim.slack, lim.far = bud.remaining, bud.reset, bud.said, bud.slack, bud.far
	o.merge(lim, horizon)
	if o.QuotaID == "" {
		name := budName
		if name == "" {
			name = limName
		}
		if printableID(name) {
			o.QuotaID = name
		}
	}
}

// policies reads a RateLimit-Policy field into the request quota that
// paces (see parseIETFFields) and that policy's name, and notes the
// policies in other units.
func policies(lines []string, horizon time.Duration) (lim reading, name string, others otherUnits, bad bool) {
	var m sfMember
	l := newSFList(lines)
	for l.next(&m) {
		requests, ok := m.unit()
		if ok && !requests {
			others.add(m.name())
			continue
		}
		r, good := m.policy()
		if !ok || !good {
			bad = true
			continue
		}
		if pacesBefore(&r, &lim, horizon) {
			lim, name = r, m.name()
		}
	}
	if l.bad {
		return reading{}, "", otherUnits{}, true
	}
	return lim, name, others, bad
}

// budgets reads a RateLimit field into the budget that binds (see
// parseIETFFields) and the name of its policy, skipping the budgets of
// policies in other units.
func budgets(lines []string, others *otherUnits, now time.Time, maxHint, horizon time.Duration) (bud reading, name string, bad bool) {
	var m sfMember
	l := newSFList(lines)
	for l.next(&m) {
		if others.has(m.name()) {
			continue
		}
		r, ok := m.budget(now, maxHint, horizon)
		if !ok {
			bad = true
			continue
		}
		if bindsBefore(&r, &bud, now) {
			bud, name = r, m.name()
		}
	}
	if l.bad {
		return reading{}, "", true
	}
	return bud, name, bad
}

// otherUnits names the policies of a RateLimit-Policy field that are not
// counted in requests. It keeps a few names, so that matching budgets to
// them stays linear in a hostile field's length.
type otherUnits struct {
	names [4]string
	n     int
}

func (u *otherUnits) add(name string) {
	if u.n < len(u.names) {
		u.names[u.n] = name
	}
	u.n++
}

// has reports whether the budget named name may belong to a policy in
// another unit: it does if it names one, and any may once more policies in
// other units were listed than the few names kept.
func (u *otherUnits) has(name string) bool {
	if u.n > len(u.names) {
		return true
	}
	for _, n := range u.names[:u.n] {
		if n == name {
			return true
		}
	}
	return false
}

// name returns the member's policy name: its item when that is a string or
// a token, else "".
func (m *sfMember) name() string {
	if m.item.kind == sfString || m.item.kind == sfToken {
		return m.item.str
	}
	return ""
}

// unit reports whether the member's quota unit, its qu parameter, is
// requests (the default); ok is false when qu is not a string.
func (m *sfMember) unit() (requests, ok bool) {
	switch m.qu.kind {
	case sfAbsent:
		return true, true
	case sfString:
		return m.qu.str == "requests", true
	}
	return false, false
}

// policy reads the member as a RateLimit-Policy policy: its quota q (or,
// as older drafts wrote it, its numeric item) and its window w.
func (m *sfMember) policy() (reading, bool) {
	q := m.q
	if q.kind == sfAbsent {
		q = m.item
	}
	n, ok := q.count()
	if !ok || m.name() == "" && m.item.kind != sfInteger {
		return reading{}, false
	}
	r := reading{known: FieldLimit, limit: min(n, MaxCount)}
	if m.w.kind != sfAbsent {
		n, ok := m.w.count()
		if !ok {
			return reading{}, false
		}
		w, ok := clampWindow(decimal{whole: n})
		if !ok {
			return reading{}, false
		}
		r.known, r.window = r.known|FieldWindow, w
	}
	return r, true
}

// budget reads the member as a RateLimit budget: its remaining r and its
// reset t, delta seconds, at least one of them.
func (m *sfMember) budget(now time.Time, maxHint, horizon time.Duration) (reading, bool) {
	var r reading
	if m.name() == "" || (m.r.kind == sfAbsent && m.t.kind == sfAbsent) {
		return r, false
	}
	if m.r.kind != sfAbsent {
		n, ok := m.r.count()
		if !ok {
			return r, false
		}
		r.known, r.remaining = FieldRemaining, min(n, MaxCount)
	}
	if m.t.kind != sfAbsent {
		n, ok := m.t.count()
		if !ok {
			return r, false
		}
		d, ok := decimal{whole: n}.dur(time.Second)
		if !ok {
			return r, false
		}
		r.slack = time.Second
		r.setReset(now.Add(d), now, maxHint, horizon)
	}
	return r, true
}
