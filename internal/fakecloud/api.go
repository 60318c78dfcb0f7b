package fakecloud

import "net/http"

// serveAPI answers an OpenAPI request: identity, timestamp, nonce, faults,
// quota, answer.
func (c *Cloud) serveAPI(w http.ResponseWriter, r *http.Request) {
	now := c.now()
	reqID := c.newRequestID()
	w.Header().Set("x-acs-request-id", reqID)
	id := parseIdentity(w, r)
	account := c.account(id.accessKeyID)

	refuse := func(o outcome, status int, code string) {
		c.stats.record(account, id.action, o, faultPlan{})
		c.writeAnswer(w, r, status, c.errorBody(reqID, code), faultPlan{})
	}
	switch {
	case id.accessKeyID == "":
		refuse(outInvalid, http.StatusBadRequest, CodeMissingAccessKeyID)
		return
	case id.action == "":
		refuse(outInvalid, http.StatusBadRequest, CodeMissingAction)
		return
	}
	if id.timestamp != "" {
		ts, ok := parseTimestamp(id.timestamp)
		if !ok {
			refuse(outInvalid, http.StatusBadRequest, CodeTimestampFormat)
			return
		}
		if d := now.Sub(ts); d > c.cfg.MaxClockSkew || -d > c.cfg.MaxClockSkew {
			refuse(outExpired, http.StatusBadRequest, CodeTimestampExpired)
			return
		}
	}
	if id.nonce != "" && !c.nonces.use(id.accessKeyID+"\x00"+id.nonce, now) {
		refuse(outReplay, http.StatusBadRequest, CodeNonceUsed)
		return
	}

	plan := c.drawFaults()
	if plan.unavailable {
		plan = faultPlan{unavailable: true, latency: plan.latency}
		c.stats.record(account, id.action, outUnavailable, plan)
		c.writeAnswer(w, r, http.StatusServiceUnavailable, c.errorBody(reqID, CodeServiceUnavailable), plan)
		return
	}

	c.advancePhases(now)
	a := c.admit(account, id.action, now)
	if !a.ok {
		c.setRateLimitHeaders(w.Header(), a, now)
		c.stats.record(account, id.action, outThrottled, plan)
		c.writeAnswer(w, r, c.cfg.ThrottleStatus, c.errorBody(reqID, c.cfg.ThrottleCode), plan)
		return
	}
	if c.cfg.HeadersOnEveryAnswer {
		c.setRateLimitHeaders(w.Header(), a, now)
	}
	c.stats.record(account, id.action, outAdmitted, plan)
	c.writeAnswer(w, r, http.StatusOK, successBody(reqID, id, account), plan)
}
