package fakecloud

import (
	"net/http"
	"strconv"
	"time"
)

// serveAPI answers an OpenAPI request: identity, timestamp, nonce, faults,
// quota, answer.
func (c *Cloud) serveAPI(w http.ResponseWriter, r *http.Request) {
	if d := c.arrival(); d > 0 && !sleep(r.Context(), d) {
		return // the client gave up on the way: nothing arrived
	}
	now := c.now()
	reqID := c.newRequestID()
	w.Header().Set("x-acs-request-id", reqID)
	id := parseIdentity(w, r)
	account := c.account(id.accessKeyID)

	refuse := func(o Outcome, status int, code string) {
		c.record(now, account, id.action, o, faultPlan{})
		c.writeAnswer(w, r, status, c.errorBody(reqID, code), faultPlan{})
	}
	switch {
	case id.accessKeyID == "":
		refuse(Invalid, http.StatusBadRequest, CodeMissingAccessKeyID)
		return
	case id.action == "":
		refuse(Invalid, http.StatusBadRequest, CodeMissingAction)
		return
	}
	if id.timestamp != "" {
		ts, ok := parseTimestamp(id.timestamp)
		if !ok {
			refuse(Invalid, http.StatusBadRequest, CodeTimestampFormat)
			return
		}
		if d := now.Sub(ts); d > c.cfg.MaxClockSkew || -d > c.cfg.MaxClockSkew {
			refuse(Expired, http.StatusBadRequest, CodeTimestampExpired)
			return
		}
	}
	if id.nonce != "" && !c.nonces.use(id.accessKeyID+"\x00"+id.nonce, now) {
		refuse(Replayed, http.StatusBadRequest, CodeNonceUsed)
		return
	}

	plan := c.drawFaults()
	if plan.unavailable {
		plan = faultPlan{unavailable: true, latency: plan.latency}
		c.record(now, account, id.action, Unavailable, plan)
		c.writeAnswer(w, r, http.StatusServiceUnavailable, c.errorBody(reqID, CodeServiceUnavailable), plan)
		return
	}

	c.advancePhases(now)
	a := c.admit(account, id.action, now)
	defer a.release()
	// A request holds its place under a Concurrency quota until its
	// answer begins: a client may send the next as soon as it has the
	// headers, before the body is written.
	plan.answered = a.release
	c.stats.recordUnseen(a.unseenAdmitted, a.unseenRefused)
	plan.shed = a.ok && (plan.shed || c.shedEvery())
	switch {
	case !a.ok:
		c.setRateLimitHeaders(w.Header(), a, now)
		c.record(now, account, id.action, Throttled, plan)
		c.writeAnswer(w, r, c.cfg.ThrottleStatus, c.errorBody(reqID, c.cfg.ThrottleCode), plan)
	case plan.shed:
		if d := c.Faults().ShedRetryAfter; d > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(ceilDiv(d, time.Second), 10))
		}
		c.record(now, account, id.action, Shed, plan)
		c.writeAnswer(w, r, c.cfg.ThrottleStatus, c.errorBody(reqID, c.cfg.ThrottleCode), plan)
	default:
		if c.cfg.HeadersOnEveryAnswer {
			c.setRateLimitHeaders(w.Header(), a, now)
		}
		c.record(now, account, id.action, Admitted, plan)
		c.writeAnswer(w, r, http.StatusOK, successBody(reqID, id, account), plan)
	}
}

// shedEvery counts a request the quotas admitted and reports whether it is
// the ShedEvery-th.
func (c *Cloud) shedEvery() bool {
	n := c.Faults().ShedEvery
	return n > 0 && c.admitted.Add(1)%uint64(n) == 0
}

// record counts one request and reports it to Config.OnRequest.
func (c *Cloud) record(now time.Time, account, action string, o Outcome, p faultPlan) {
	c.stats.record(account, action, o, p)
	if c.cfg.OnRequest != nil {
		c.cfg.OnRequest(Event{At: now, Account: account, Action: action, Outcome: o})
	}
}
