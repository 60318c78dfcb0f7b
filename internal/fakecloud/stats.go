package fakecloud

import (
	"strconv"
	"sync"
	"time"
)

// Counters count the API requests of one tenant, one action or all.
type Counters struct {
	Requests    int64 `json:"requests"`    // every API request
	Admitted    int64 `json:"admitted"`    // answered with success (dropped ones included)
	Throttled   int64 `json:"throttled"`   // answered as a throttle: refused by a quota, or shed
	Shed        int64 `json:"shed"`        // of the throttled: admitted by the quotas, then shed (Faults.ShedRate)
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
	Unseen   Counters                       `json:"unseen"`   // the unseen consumers' requests (Quota.Unseen), all quotas
	Nonces   int                            `json:"nonces"`   // nonces remembered now
}

// otherName collects the names past the bound.
const otherName = "_other"

// Outcome is how an API request was answered.
type Outcome int

// The outcomes of an API request.
const (
	Admitted    Outcome = iota // answered with success
	Throttled                  // refused by a quota
	Shed                       // admitted by the quotas, answered as a throttle (Faults.ShedRate)
	Replayed                   // refused: SignatureNonceUsed
	Expired                    // refused: InvalidTimeStamp.Expired
	Invalid                    // refused: missing AccessKeyId or Action, bad timestamp
	Unavailable                // fault: 503 ServiceUnavailable
)

var outcomeNames = [...]string{"admitted", "throttled", "shed", "replayed", "expired", "invalid", "unavailable"}

// String returns the outcome's name, e.g. "throttled".
func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Throttle reports whether a client sees the answer as a throttle.
func (o Outcome) Throttle() bool { return o == Throttled || o == Shed }

// Event is one API request as the gateway answered it, for a test's own
// accounting ([Config.OnRequest]).
type Event struct {
	At      time.Time // when the gateway decided (Config.Now), before any latency
	Account string    // the account that owns the AccessKeyId
	Action  string
	Outcome Outcome
}

// statsRecorder counts requests. mu guards every field.
type statsRecorder struct {
	mu       sync.Mutex
	maxNames int
	total    Counters
	accounts map[string]*Counters
	actions  map[string]*Counters
	tenants  map[string]map[string]*Counters
	pairs    int // entries in tenants, at most 4*maxNames plus one "_other" per account
	unseen   Counters
}

func (s *statsRecorder) init(maxNames int) {
	s.maxNames = maxNames
	s.accounts = make(map[string]*Counters)
	s.actions = make(map[string]*Counters)
	s.tenants = make(map[string]map[string]*Counters)
}

// record counts one request.
func (s *statsRecorder) record(account, action string, o Outcome, p faultPlan) {
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
		case Admitted:
			c.Admitted++
		case Throttled:
			c.Throttled++
		case Shed:
			c.Throttled++
			c.Shed++
		case Replayed:
			c.Replays++
		case Expired:
			c.Expired++
		case Invalid:
			c.Invalid++
		case Unavailable:
			c.Unavailable++
		}
		if p.drop && o != Unavailable {
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

// recordUnseen counts the unseen consumers' requests.
func (s *statsRecorder) recordUnseen(admitted, refused int64) {
	if admitted == 0 && refused == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unseen.Requests += admitted + refused
	s.unseen.Admitted += admitted
	s.unseen.Throttled += refused
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
		Unseen:   s.unseen,
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
	s.total, s.unseen = Counters{}, Counters{}
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
