package fakecloud

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Policy is the admission algorithm of a [Quota]. The zero Policy is
// FixedWindow.
type Policy int

const (
	// FixedWindow admits at most Limit requests in each window. Where the
	// windows start is the Quota's Align: by default [k·Window + Offset,
	// (k+1)·Window + Offset) from the Unix epoch, like a real per-second or
	// per-minute counter.
	FixedWindow Policy = iota
	// SlidingWindow admits at most Limit requests in any trailing Window
	// (an exact log of admission times).
	SlidingWindow
	// TokenBucket refills Limit tokens per Window, up to Burst, and admits a
	// request per token.
	TokenBucket
	// Concurrency admits a request while fewer than Limit of the account's
	// requests are being worked on: from admission until its answer begins
	// (after the latency), or the client goes away. It counts requests in
	// flight at the server, not a rate: Window, Burst and Unseen are
	// ignored, and a refused request is answered at once.
	Concurrency
)

// String returns "fixed", "sliding", "bucket" or "concurrency".
func (p Policy) String() string {
	switch p {
	case FixedWindow:
		return "fixed"
	case SlidingWindow:
		return "sliding"
	case TokenBucket:
		return "bucket"
	case Concurrency:
		return "concurrency"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, accepting what
// [ParsePolicy] accepts.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// ParsePolicy parses "fixed", "sliding", "bucket" (also "token-bucket",
// "token") or "concurrency" (also "inflight"); the empty string is
// FixedWindow.
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "fixed", "fixed-window":
		return FixedWindow, nil
	case "sliding", "sliding-window":
		return SlidingWindow, nil
	case "bucket", "token-bucket", "token":
		return TokenBucket, nil
	case "concurrency", "inflight", "in-flight":
		return Concurrency, nil
	}
	return 0, fmt.Errorf("fakecloud: unknown policy %q (want fixed, sliding, bucket or concurrency)", s)
}

// Alignment says where a [FixedWindow] quota's windows start.
type Alignment int

const (
	// AlignEpoch starts the windows at k·Window + Offset from the Unix
	// epoch, for every integer k: a per-second counter keyed by the clock,
	// Offset 0, or one whose clock is set elsewhere.
	AlignEpoch Alignment = iota
	// AlignFirst starts a window at the first request after the last
	// window ended, the account's first request starting the first one: a
	// counter created on first use that expires Window later (a Redis INCR
	// with an EXPIRE). Windows drift from any grid as the requests do.
	AlignFirst
)

// String returns "epoch" or "first".
func (a Alignment) String() string {
	if a == AlignFirst {
		return "first"
	}
	return "epoch"
}

// Unlimited as a [Quota] Limit removes the quota.
const Unlimited = -1

// Window bounds; a Quota's Window is clamped to them.
const (
	minWindow = time.Millisecond
	maxWindow = 24 * time.Hour
	maxLimit  = 1 << 30
)

// Quota is a limit held by an account.
//
// API is the action it applies to; empty means the account's total over all
// actions. Account is the account it applies to; empty means every account
// (each account still has its own counter). A more specific quota (named
// account) overrides a general one for the same API. A request must fit
// both its API quota and its account total, if any.
//
// Limit requests per Window: Window zero means 1 s, and is clamped to
// [1 ms, 24 h]; Limit 0 refuses everything; a negative Limit ([Unlimited])
// removes the quota. Burst is the token bucket's capacity (zero means
// Limit); the window policies ignore it. For [Concurrency], Limit is the
// number of requests in flight and the other fields are ignored.
//
// Unseen is a consumer the client cannot see (another service, a console
// user on the same account) spending Unseen requests per Window from the
// same counter, one every Window/Unseen, at the instants (k+½)·Window/Unseen
// from the Unix epoch: for a fixed window whose length is a multiple of
// that spacing, evenly spread over each window. Its requests are admitted
// or refused by the policy like any other, counted apart in [Stats].Unseen
// (as the client's requests reach the quota, since they are decided
// lazily, in time order, before each of them). It is there before the
// first request (a fixed or sliding window holds its share from the
// start), except that a token bucket starts full and a window aligned to
// the first request has no past.
//
// Align and Offset say where a [FixedWindow]'s windows start (see
// [Alignment]); Offset, taken modulo Window, applies to [AlignEpoch]
// only. The other policies ignore both.
type Quota struct {
	API     string        `json:"api,omitempty"`
	Account string        `json:"account,omitempty"`
	Policy  Policy        `json:"policy"`
	Limit   int           `json:"limit"`
	Window  time.Duration `json:"window"`
	Burst   int           `json:"burst,omitempty"`
	Unseen  int           `json:"unseen,omitempty"`
	Align   Alignment     `json:"align,omitempty"`
	Offset  time.Duration `json:"offset,omitempty"`
}

// String formats q as [ParseQuota] reads it.
func (q Quota) String() string {
	api := q.API
	if api == "" {
		api = "*"
	}
	if q.Account != "" {
		api = q.Account + "/" + api
	}
	s := fmt.Sprintf("%s=%d/%s", api, q.Limit, q.Window)
	if q.Policy != FixedWindow {
		s += ":" + q.Policy.String()
	}
	if q.Burst > 0 {
		s += ",burst=" + strconv.Itoa(q.Burst)
	}
	if q.Unseen > 0 {
		s += ",unseen=" + strconv.Itoa(q.Unseen)
	}
	if q.Align == AlignFirst {
		s += ",align=first"
	}
	if q.Offset > 0 {
		s += ",offset=" + q.Offset.String()
	}
	return s
}

// Phase is a set of quota changes applied at offset At from the start.
type Phase struct {
	At     time.Duration `json:"at"`
	Quotas []Quota       `json:"quotas"`
}

// ParseQuota parses
// "[account/]API=LIMIT/WINDOW[:POLICY][,burst=N][,unseen=N][,align=first][,offset=D]",
// e.g. "DescribeInstances=20/1s", "acme/*=100/1m:sliding" (API "*" is the
// account total), "RunInstances=5/1s:bucket,burst=10",
// "DescribeInstances=50/1s,unseen=20", "DescribeInstances=8/1s:concurrency",
// "DescribeInstances=100/1m,align=first" or "DescribeInstances=7/7s,offset=2.5s".
// LIMIT may be "unlimited".
func ParseQuota(s string) (Quota, error) {
	var q Quota
	name, rest, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return q, fmt.Errorf("fakecloud: quota %q: want [account/]API=LIMIT/WINDOW", s)
	}
	if acct, api, ok := strings.Cut(name, "/"); ok {
		q.Account, name = acct, api
	}
	if name != "*" {
		q.API = name
	}
	if r, off, ok := strings.Cut(rest, ",offset="); ok {
		d, err := time.ParseDuration(off)
		if err != nil || d < 0 {
			return q, fmt.Errorf("fakecloud: quota %q: bad offset %q", s, off)
		}
		q.Offset, rest = d, r
	}
	if r, align, ok := strings.Cut(rest, ",align="); ok {
		switch align {
		case "first":
			q.Align = AlignFirst
		case "epoch":
		default:
			return q, fmt.Errorf("fakecloud: quota %q: bad align %q (want epoch or first)", s, align)
		}
		rest = r
	}
	if r, unseen, ok := strings.Cut(rest, ",unseen="); ok {
		n, err := strconv.Atoi(unseen)
		if err != nil || n < 0 {
			return q, fmt.Errorf("fakecloud: quota %q: bad unseen %q", s, unseen)
		}
		q.Unseen, rest = n, r
	}
	if r, burst, ok := strings.Cut(rest, ",burst="); ok {
		n, err := strconv.Atoi(burst)
		if err != nil || n < 0 {
			return q, fmt.Errorf("fakecloud: quota %q: bad burst %q", s, burst)
		}
		q.Burst, rest = n, r
	}
	if r, pol, ok := strings.Cut(rest, ":"); ok {
		p, err := ParsePolicy(pol)
		if err != nil {
			return q, err
		}
		q.Policy, rest = p, r
	}
	lim, win, ok := strings.Cut(rest, "/")
	if !ok {
		return q, fmt.Errorf("fakecloud: quota %q: want LIMIT/WINDOW", s)
	}
	l, err := parseLimit(lim)
	if err != nil {
		return q, fmt.Errorf("fakecloud: quota %q: %w", s, err)
	}
	q.Limit = l
	w, err := time.ParseDuration(win)
	if err != nil {
		return q, fmt.Errorf("fakecloud: quota %q: %w", s, err)
	}
	q.Window = w
	return q.normalized(), nil
}

func parseLimit(s string) (int, error) {
	if strings.EqualFold(s, "unlimited") {
		return Unlimited, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad limit %q", s)
	}
	return n, nil
}

// normalized applies the documented defaults and clamps.
func (q Quota) normalized() Quota {
	if q.Limit < 0 {
		q.Limit = Unlimited
	}
	if q.Limit > maxLimit {
		q.Limit = maxLimit
	}
	if q.Window == 0 {
		q.Window = time.Second
	}
	q.Window = min(max(q.Window, minWindow), maxWindow)
	if q.Burst <= 0 || q.Policy != TokenBucket {
		q.Burst = 0
	}
	if q.Burst > maxLimit {
		q.Burst = maxLimit
	}
	if q.Policy < FixedWindow || q.Policy > Concurrency {
		q.Policy = FixedWindow
	}
	if q.Unseen < 0 || q.Policy == Concurrency {
		q.Unseen = 0
	}
	// At most one unseen request per nanosecond of window.
	q.Unseen = min(q.Unseen, maxLimit, int(q.Window))
	if q.Policy != FixedWindow || q.Align != AlignEpoch {
		q.Offset = 0
	}
	if q.Policy != FixedWindow || q.Align != AlignFirst {
		q.Align = AlignEpoch
	}
	q.Offset %= q.Window
	if q.Offset < 0 {
		q.Offset += q.Window
	}
	return q
}

// capacity is the most a quota can admit at once.
func (q Quota) capacity() int {
	if q.Policy == TokenBucket && q.Burst > 0 {
		return q.Burst
	}
	return q.Limit
}

// ruleKey names a quota rule or a limiter: account "" is every account in
// a rule, api "" the account total.
type ruleKey struct{ account, api string }

// ruleSet is an immutable (copy-on-write) table of quotas.
type ruleSet map[ruleKey]Quota

// set adds, replaces or (Limit < 0) removes q in rs, which must be private.
func (rs ruleSet) set(q Quota) {
	q = q.normalized()
	k := ruleKey{q.Account, q.API}
	if q.Limit < 0 {
		delete(rs, k)
		return
	}
	rs[k] = q
}

// lookup returns the quota for api ("" for the total) held by account.
func (rs ruleSet) lookup(account, api string) (Quota, bool) {
	if q, ok := rs[ruleKey{account, api}]; ok {
		return q, true
	}
	q, ok := rs[ruleKey{"", api}]
	return q, ok
}

// SetQuota adds or replaces the quota for (q.Account, q.API), or removes it
// if q.Limit is negative. Limiter state carries over: a fixed window keeps
// its count (unless Window changed), a sliding window its log, a bucket its
// tokens (capped to the new Burst); a Policy change starts afresh.
// Requests already admitted stay admitted.
func (c *Cloud) SetQuota(q Quota) {
	c.rulesMu.Lock()
	defer c.rulesMu.Unlock()
	c.setQuotasLocked([]Quota{q})
}

// setQuotasLocked applies qs; the caller holds c.rulesMu.
func (c *Cloud) setQuotasLocked(qs []Quota) {
	old := c.rules.Load()
	rs := make(ruleSet, len(*old)+len(qs))
	for k, v := range *old {
		rs[k] = v
	}
	for _, q := range qs {
		rs.set(q)
	}
	c.rules.Store(&rs)
}

// Quotas returns the quotas in force, sorted by account then API.
func (c *Cloud) Quotas() []Quota {
	c.advancePhases(c.now())
	rs := *c.rules.Load()
	out := make([]Quota, 0, len(rs))
	for _, q := range rs {
		out = append(out, q)
	}
	sortQuotas(out)
	return out
}

func sortQuotas(qs []Quota) {
	for i := 1; i < len(qs); i++ {
		for j := i; j > 0 && lessQuota(qs[j], qs[j-1]); j-- {
			qs[j], qs[j-1] = qs[j-1], qs[j]
		}
	}
}

func lessQuota(a, b Quota) bool {
	if a.Account != b.Account {
		return a.Account < b.Account
	}
	return a.API < b.API
}

// advancePhases applies every phase whose offset has passed at now.
func (c *Cloud) advancePhases(now time.Time) {
	i := int(c.nextPhase.Load())
	if i >= len(c.phases) || now.Sub(c.start) < c.phases[i].At {
		return
	}
	c.rulesMu.Lock()
	defer c.rulesMu.Unlock()
	i = int(c.nextPhase.Load())
	for ; i < len(c.phases) && now.Sub(c.start) >= c.phases[i].At; i++ {
		c.setQuotasLocked(c.phases[i].Quotas)
	}
	c.nextPhase.Store(int64(i))
}
