package quota

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestEvery(t *testing.T) {
	tests := []struct {
		n    int64
		d    time.Duration
		want Rule
	}{
		{200, time.Minute, Rule{Rate: 200.0 / 60, Burst: 1, Limit: 200, Window: time.Minute}},
		{5, time.Second, Rule{Rate: 5, Burst: 1, Limit: 5, Window: time.Second}},
		{0, time.Second, Rule{}},
		{-1, time.Second, Rule{}},
		{5, 0, Rule{}},
		{5, -time.Second, Rule{}},
	}
	for _, tt := range tests {
		if got := Every(tt.n, tt.d); got != tt.want {
			t.Errorf("Every(%d, %v) = %+v, want %+v", tt.n, tt.d, got, tt.want)
		}
	}
}

func TestRulesLongestPrefix(t *testing.T) {
	var r Rules
	ecs := Key{Product: "ecs"}
	hz := Key{Product: "ecs", Region: "cn-hangzhou"}
	acct := Key{"ecs", "cn-hangzhou", "123", ""}
	api := Key{"ecs", "cn-hangzhou", "123", "DescribeInstances"}
	r.Set(ecs, Every(100, time.Second))
	r.Set(acct, Every(50, time.Second))
	r.Set(api, Every(5, time.Second))
	tests := []struct {
		k      Key
		prefix Key
		ok     bool
	}{
		{api, api, true},
		{Key{"ecs", "cn-hangzhou", "123", "RunInstances"}, acct, true},
		{acct, acct, true},
		{Key{"ecs", "cn-hangzhou", "456", "DescribeInstances"}, ecs, true},
		{hz, ecs, true},
		{ecs, ecs, true},
		{Key{Product: "rds"}, Key{}, false},
		{Key{Product: "ecs2"}, Key{}, false},
		{Key{}, Key{}, false},
	}
	for _, tt := range tests {
		rule, prefix, ok := r.Lookup(tt.k)
		if ok != tt.ok || prefix != tt.prefix {
			t.Errorf("Lookup(%s) = %s, %v; want %s, %v", tt.k, prefix, ok, tt.prefix, tt.ok)
			continue
		}
		if want, _, _ := r.Lookup(prefix); ok && rule != want {
			t.Errorf("Lookup(%s) rule %+v, want the rule of %s", tt.k, rule, prefix)
		}
	}
	// A rule for the root covers every key.
	r.Set(Key{}, Every(1000, time.Second))
	if _, p, ok := r.Lookup(Key{Product: "rds"}); !ok || p != (Key{}) {
		t.Errorf("root rule not found: %s, %v", p, ok)
	}
	if r.Len() != 4 {
		t.Errorf("Len = %d, want 4", r.Len())
	}
	// Replacing and deleting.
	r.Set(api, Every(7, time.Second))
	if rule, _, _ := r.Lookup(api); rule.Limit != 7 {
		t.Errorf("replaced rule: %+v", rule)
	}
	r.Delete(api)
	r.Delete(api)
	r.Delete(Key{Product: "never-set"})
	if _, p, _ := r.Lookup(api); p != acct {
		t.Errorf("after Delete, Lookup = %s, want %s", p, acct)
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d, want 3", r.Len())
	}
}

func TestRulesZeroAndNil(t *testing.T) {
	var r Rules
	if _, _, ok := r.Lookup(Key{Product: "ecs"}); ok || r.Len() != 0 {
		t.Errorf("zero Rules not empty")
	}
	r.Delete(Key{Product: "ecs"})
	var nilRules *Rules
	if _, _, ok := nilRules.Lookup(Key{Product: "ecs"}); ok || nilRules.Len() != 0 {
		t.Errorf("nil Rules not empty")
	}
}

func TestRulesLookupDoesNotSeeGaps(t *testing.T) {
	// A rule set for a key with a gap (no Region) never matches: its
	// fields past the gap would be ignored otherwise, widening the rule.
	var r Rules
	r.Set(Key{Product: "ecs", Account: "123"}, Every(1, time.Second))
	if _, _, ok := r.Lookup(Key{"ecs", "cn-hangzhou", "123", ""}); ok {
		t.Errorf("a rule with a gap matched")
	}
}

// TestRulesConcurrent runs writers and lock-free readers together under
// -race: a reader always sees a consistent table.
func TestRulesConcurrent(t *testing.T) {
	var r Rules
	base := Key{Product: "ecs", Region: "cn-hangzhou"}
	r.Set(base, Every(100, time.Second))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := Key{"ecs", "cn-hangzhou", fmt.Sprint(w), fmt.Sprint(i % 10)}
				r.Set(k, Every(int64(i+1), time.Second))
				if i%3 == 0 {
					r.Delete(k)
				}
			}
		}()
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := Key{"ecs", "cn-hangzhou", fmt.Sprint(g), fmt.Sprint(i % 10)}
				rule, p, ok := r.Lookup(k)
				if !ok || (p != k && p != base) || rule.Limit <= 0 {
					t.Errorf("Lookup(%s) = %+v, %s, %v", k, rule, p, ok)
					return
				}
				_ = r.Len()
			}
		}()
	}
	wg.Wait()
}

func BenchmarkRulesLookup(b *testing.B) {
	var r Rules
	for i := range 100 {
		r.Set(Key{"ecs", "cn-hangzhou", fmt.Sprint(i), ""}, Every(10, time.Second))
	}
	r.Set(Key{Product: "ecs"}, Every(100, time.Second))
	k := Key{"ecs", "cn-hangzhou", "999", "DescribeInstances"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Lookup(k)
		}
	})
}
