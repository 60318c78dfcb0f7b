package fakecloud

import "sync"

// Counters count the API requests of one tenant, one action or all.
type Counters struct {
	Requests    int64 `json:"requests"`    // every API request
	Admitted    int64 `json:"admitted"`    // answered with success (dropped ones included)
	Throttled   int64 `json:"throttled"`   // refused by a quota
	Replays     int64 `json:"replays"`     // refused: SignatureNonceUsed
	Expired     int64 `json:"expired"`     // refused: InvalidTimeStamp.Expired
	Invalid     int64 `json:"invalid"`     // refused: missing AccessKeyId or Action, bad timestamp
	Unavailable int64 `json:"unavailable"` // fault: 503 ServiceUnavailable
	Dropped     int64 `json:"dropped"`     // fault: connection closed mid-response
	Faults      int64 `json:"faults"`      // requests with any fault injected
}

// Stats is a snapshot of a [Cloud]'s counters. Memory is bounded: accounts
// and actions past Config.MaxTenants distinct names (default 1024), and
// (account, action) pairs past four times that, are counted under "_other".
type Stats struct {
	Total    Counters                       `json:"total"`
	Accounts map[string]Counters            `json:"accounts"` // by account
	Actions  map[string]Counters            `json:"actions"`  // by action, all accounts
	Tenants  map[string]map[string]Counters `json:"tenants"`  // by account, then action
	Nonces   int                            `json:"nonces"`   // nonces remembered now
}

// otherName collects the names past the bound.
const otherName = "_other"

// outcome is how an API request was answered.
type outcome int

const (
	outAdmitted outcome = iota
	outThrottled
	outReplay
	outExpired
	outInvalid
	outUnavailable
)

// statsRecorder counts requests. mu guards every field.
type statsRecorder struct {
	mu       sync.Mutex
	maxNames int
	total    Counters
	accounts map[string]*Counters
	actions  map[string]*Counters
	tenants  map[string]map[string]*Counters
	pairs    int // entries in tenants, at most 4*maxNames plus one "_other" per account
}

func (s *statsRecorder) init(maxNames int) {
	s.maxNames = maxNames
	s.accounts = make(map[string]*Counters)
	s.actions = make(map[string]*Counters)
	s.tenants = make(map[string]map[string]*Counters)
}

// record counts one request.
func (s *statsRecorder) record(account, action string, o outcome, p faultPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[account]; !ok && len(s.accounts) >= s.maxNames {
		account = otherName
	}
	if _, ok := s.actions[action]; !ok && len(s.actions) >= s.maxNames {
		action = otherName
	}
	byAction := s.tenants[account]
	if byAction == nil {
		byAction = make(map[string]*Counters)
		s.tenants[account] = byAction
	}
	tenantAction := action
	if _, ok := byAction[action]; !ok {
		if s.pairs >= 4*s.maxNames {
			tenantAction = otherName
		}
		if _, ok := byAction[tenantAction]; !ok {
			s.pairs++
		}
	}
	for _, c := range []*Counters{&s.total, counter(s.accounts, account), counter(s.actions, action), counter(byAction, tenantAction)} {
		c.Requests++
		switch o {
		case outAdmitted:
			c.Admitted++
		case outThrottled:
			c.Throttled++
		case outReplay:
			c.Replays++
		case outExpired:
			c.Expired++
		case outInvalid:
			c.Invalid++
		case outUnavailable:
			c.Unavailable++
		}
		if p.drop && o != outUnavailable {
			c.Dropped++
		}
		if p.injects() {
			c.Faults++
		}
	}
}

func counter(m map[string]*Counters, k string) *Counters {
	c := m[k]
	if c == nil {
		c = new(Counters)
		m[k] = c
	}
	return c
}

// snapshot copies the counters.
func (s *statsRecorder) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{
		Total:    s.total,
		Accounts: make(map[string]Counters, len(s.accounts)),
		Actions:  make(map[string]Counters, len(s.actions)),
		Tenants:  make(map[string]map[string]Counters, len(s.tenants)),
	}
	for k, v := range s.accounts {
		st.Accounts[k] = *v
	}
	for k, v := range s.actions {
		st.Actions[k] = *v
	}
	for a, m := range s.tenants {
		cm := make(map[string]Counters, len(m))
		for k, v := range m {
			cm[k] = *v
		}
		st.Tenants[a] = cm
	}
	return st
}

func (s *statsRecorder) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total = Counters{}
	clear(s.accounts)
	clear(s.actions)
	clear(s.tenants)
	s.pairs = 0
}

// Stats returns a snapshot of the counters.
func (c *Cloud) Stats() Stats {
	c.advancePhases(c.now())
	st := c.stats.snapshot()
	st.Nonces = c.nonces.len()
	return st
}
