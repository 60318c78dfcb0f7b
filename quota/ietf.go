package quota

import "time"

// parseIETF reads the IETF trio RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset. Reset is delta seconds, as the draft says; Limit may be a
// list with a w parameter, as for X-RateLimit-Limit.
func parseIETF(o *Observation, limit, remaining, reset []string, now time.Time, maxHint time.Duration) {
	o.Sources |= SourceIETF
	r, bad := trio(limit, remaining)
	if reset != nil {
		d, ok, b := oneDecimal(reset)
		if ok {
			if dd, good := d.dur(time.Second); good {
				r.known |= FieldReset
				r.reset = clampTime(now.Add(dd), now, maxHint)
				r.slack = secondsSlack(d)
			} else {
				b = true
			}
		}
		bad = bad || b
	}
	if bad {
		o.Malformed |= SourceIETF
	}
	o.merge(r)
}

// parseIETFFields reads the structured fields of the IETF draft,
//
//	RateLimit-Policy: "burst";q=100;w=1, "daily";q=1000;w=86400
//	RateLimit: "burst";r=50;t=1
//
// across any number of lines. When several policies are listed the most
// restrictive one wins: for the limit, the lowest rate q/w; for the budget,
// the lowest spendable rate r/t (see pick). The name of the budget's policy,
// else of the limit's, becomes the QuotaID unless X-RateLimit-Quota-ID set
// one. Members that do not parse, or carry a negative or non-numeric q, w, r
// or t, are skipped and reported as malformed. An older draft's numeric item
// ("100;w=60") is read as q.
func parseIETFFields(o *Observation, policy, budget []string, now time.Time, maxHint time.Duration) {
	o.Sources |= SourceIETFFields
	var (
		lim, bud         reading
		limName, budName string
		m                sfMember
		bad              bool
	)
	for _, v := range policy {
		for l := (sfList{s: v}); l.next(&m); {
			q := m.q
			if !q.set {
				q = m.item
			}
			if m.bad || !q.set || q.bad || q.d.frac != 0 {
				bad = true
				continue
			}
			r := reading{known: FieldLimit, limit: min(q.d.whole, MaxCount)}
			if m.w.set {
				w, ok := clampWindow(m.w.d)
				if !ok || m.w.bad {
					bad = true
					continue
				}
				r.known, r.window = r.known|FieldWindow, w
			}
			if tighterLimit(&r, &lim) {
				lim, limName = r, m.name
			}
		}
	}
	for _, v := range budget {
		for l := (sfList{s: v}); l.next(&m); {
			if m.bad || m.r.bad || m.t.bad || (!m.r.set && !m.t.set) || m.r.d.frac != 0 {
				bad = true
				continue
			}
			var r reading
			if m.r.set {
				r.known, r.remaining = FieldRemaining, min(m.r.d.whole, MaxCount)
			}
			if m.t.set {
				d, ok := m.t.d.dur(time.Second)
				if !ok {
					bad = true
					continue
				}
				r.known, r.reset = r.known|FieldReset, clampTime(now.Add(d), now, maxHint)
				r.slack = secondsSlack(m.t.d)
			}
			if tighterBudget(&r, &bud, now) {
				bud, budName = r, m.name
			}
		}
	}
	if bad {
		o.Malformed |= SourceIETFFields
	}
	lim.known |= bud.known
	lim.remaining, lim.reset, lim.slack = bud.remaining, bud.reset, bud.slack
	o.merge(lim)
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
