package quota

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Rule is a static quota a tenant starts from before the server has said
// anything. The zero Rule means unlimited.
type Rule struct {
	Rate   float64       // sustained requests per second; 0 means no pacing
	Burst  int           // token bucket depth; 0 means max(1, ceil(Rate))
	Limit  int64         // at most Limit requests in any trailing Window; 0 means no window
	Window time.Duration // the window Limit applies to; 0 with Limit set means 1 s
}

// Every returns a Rule for "n requests per d": a rate of n/d, a burst of 1 and
// a window of n per d, the safe reading of a server's fixed-window quota.
// A non-positive n or d gives the zero (unlimited) Rule.
func Every(n int64, d time.Duration) Rule {
	if n <= 0 || d <= 0 {
		return Rule{}
	}
	return Rule{Rate: float64(n) / d.Seconds(), Burst: 1, Limit: n, Window: d}
}

// Rules is a table of static rules matched by longest key prefix: a rule for
// acs:ecs covers every ECS tenant, and a rule for
// acs:ecs:cn-hangzhou:123:DescribeInstances overrides it for that operation.
//
// Lookups take no lock (the table is copied on write), so Rules suits a table
// that is read on every request and rarely changed. The zero Rules is an
// empty table ready to use. Rules is safe for concurrent use; it must not be
// copied after first use.
type Rules struct {
	mu    sync.Mutex // serialises writers only
	table atomic.Pointer[map[Key]Rule]
}

// Set adds or replaces the rule for the tenants under prefix. It copies the
// table, so it costs O(rules); lookups already under way see the table as it
// was before, later ones the new rule. A prefix with a gap (Region empty but
// Account set, say) is stored as given but never matches: its Depth stops
// at the gap, and widening it to the fields before the gap would apply the
// rule to tenants it was not meant for.
func (r *Rules) Set(prefix Key, rule Rule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[Key]Rule, 1)
	if old := r.table.Load(); old != nil {
		next = maps.Clone(*old)
	}
	next[prefix] = rule
	r.table.Store(&next)
}

// Delete removes the rule set for exactly prefix, if any.
func (r *Rules) Delete(prefix Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[prefix]; !ok {
		return
	}
	next := maps.Clone(*old)
	delete(next, prefix)
	r.table.Store(&next)
}

// Lookup returns the rule with the longest prefix of k, and that prefix.
// ok is false when no rule covers k. A nil *Rules has no rules.
func (r *Rules) Lookup(k Key) (rule Rule, prefix Key, ok bool) {
	if r == nil {
		return Rule{}, Key{}, false
	}
	t := r.table.Load()
	if t == nil || len(*t) == 0 {
		return Rule{}, Key{}, false
	}
	for d := k.Depth(); d >= 0; d-- {
		p := k.Prefix(d)
		if rule, ok := (*t)[p]; ok {
			return rule, p, true
		}
	}
	return Rule{}, Key{}, false
}

// Len returns the number of rules in the table. A nil *Rules has none.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	if t := r.table.Load(); t != nil {
		return len(*t)
	}
	return 0
}
