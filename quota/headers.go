package quota

import "time"

// hdr names a header Parse reads.
type hdr uint8

const (
	hNone hdr = iota
	hRetryAfter
	hAcsRetryAfter
	hAliUserAPI
	hAliUser
	hXLimit
	hXRemaining
	hXReset
	hXQuotaID
	hLimit
	hRemaining
	hReset
	hPolicy
	hRateLimit
	numHdr
)

// headerID maps a header name, in any case, to the header it names. It
// decides on the length and first byte before comparing, so the headers of
// an ordinary answer (Content-Type, Date, X-Acs-Request-Id, ...) cost a
// couple of byte compares each.
func headerID(k string) hdr {
	if len(k) < len("ratelimit") {
		return hNone
	}
	switch k[0] | 0x20 {
	case 'r':
		switch len(k) {
		case 9:
			return named(k, "Ratelimit", "ratelimit", hRateLimit)
		case 11:
			return named(k, "Retry-After", "retry-after", hRetryAfter)
		case 15:
			if h := named(k, "Ratelimit-Limit", "ratelimit-limit", hLimit); h != hNone {
				return h
			}
			return named(k, "Ratelimit-Reset", "ratelimit-reset", hReset)
		case 16:
			return named(k, "Ratelimit-Policy", "ratelimit-policy", hPolicy)
		case 19:
			return named(k, "Ratelimit-Remaining", "ratelimit-remaining", hRemaining)
		}
	case 'x':
		switch len(k) {
		case 16:
			return named(k, "X-Ratelimit-User", "x-ratelimit-user", hAliUser)
		case 17:
			if h := named(k, "X-Ratelimit-Limit", "x-ratelimit-limit", hXLimit); h != hNone {
				return h
			}
			if h := named(k, "X-Ratelimit-Reset", "x-ratelimit-reset", hXReset); h != hNone {
				return h
			}
			return named(k, "X-Acs-Retry-After", "x-acs-retry-after", hAcsRetryAfter)
		case 20:
			if h := named(k, "X-Ratelimit-User-Api", "x-ratelimit-user-api", hAliUserAPI); h != hNone {
				return h
			}
			return named(k, "X-Ratelimit-Quota-Id", "x-ratelimit-quota-id", hXQuotaID)
		case 21:
			return named(k, "X-Ratelimit-Remaining", "x-ratelimit-remaining", hXRemaining)
		}
	}
	return hNone
}

// named returns h if k is the header name given in its canonical form
// (the common case, a plain compare) or lower case, ignoring case.
func named(k, canonical, lower string, h hdr) hdr {
	if k == canonical || equalFold(k, lower) {
		return h
	}
	return hNone
}

// parseHeaders reads every rate-limit header of h into o.
func parseHeaders(o *Observation, h map[string][]string, now time.Time, maxHint, horizon time.Duration) {
	var s headerSet
	for k, vs := range h {
		if id := headerID(k); id != hNone && len(vs) > 0 {
			s.add(id, vs)
		}
	}
	s.parse(o, now, maxHint, horizon)
}

// headerSet holds the lines of the headers Parse reads, found in one pass
// over the header map.
type headerSet struct {
	v [numHdr][]string
}

// add records the lines of header id. A header given under two spellings
// (a hand-built map with "retry-after" and "Retry-After") has its lines
// joined, so conflicts between them are seen.
func (s *headerSet) add(id hdr, vs []string) {
	if s.v[id] == nil {
		s.v[id] = vs
		return
	}
	s.v[id] = append(append(make([]string, 0, len(s.v[id])+len(vs)), s.v[id]...), vs...)
}

// parse reads every family present into o. X-RateLimit comes before the
// IETF fields so that an explicit X-RateLimit-Quota-ID names the quota.
func (s *headerSet) parse(o *Observation, now time.Time, maxHint, horizon time.Duration) {
	v := &s.v
	if v[hRetryAfter] != nil {
		parseRetryAfterHeader(o, v[hRetryAfter], now, maxHint)
	}
	if v[hAcsRetryAfter] != nil || v[hAliUserAPI] != nil || v[hAliUser] != nil {
		o.Signals |= SignalAlibaba
		if v[hAcsRetryAfter] != nil {
			d, ok, bad := oneHint(v[hAcsRetryAfter], now, maxHint, acsRetryAfter)
			if bad {
				o.Malformed |= SignalAlibaba
			}
			if ok {
				o.mergeRetryAfter(d, 0)
			}
		}
		if v[hAliUserAPI] != nil || v[hAliUser] != nil {
			parseAlibaba(o, v[hAliUserAPI], v[hAliUser], now, maxHint, horizon)
		}
	}
	if v[hXLimit] != nil || v[hXRemaining] != nil || v[hXReset] != nil || v[hXQuotaID] != nil {
		parseXRateLimit(o, v[hXLimit], v[hXRemaining], v[hXReset], v[hXQuotaID], now, maxHint, horizon)
	}
	if v[hLimit] != nil || v[hRemaining] != nil || v[hReset] != nil {
		parseIETF(o, v[hLimit], v[hRemaining], v[hReset], now, maxHint, horizon)
	}
	if v[hPolicy] != nil || v[hRateLimit] != nil {
		parseIETFFields(o, v[hPolicy], v[hRateLimit], now, maxHint, horizon)
	}
}
