package transport

import (
	"net/http"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
)

// TestTenantCache checks that the Transport's memory of recent tenants
// gives the same key and Limiter as naming them afresh, keeps tenants
// apart, and lets go of a Limiter the registry evicted.
func TestTenantCache(t *testing.T) {
	req := func(akid, action string) *http.Request {
		r, err := http.NewRequest(http.MethodPost, "http://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId="+akid+"&Action="+action+"&RegionId=cn-hangzhou", nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tr := New(nil, Config{IdleTTL: time.Minute})
	tr.init()
	seen := map[quota.Key]*adaptive.Limiter{}
	for round := range 3 {
		for _, akid := range []string{"LTAI5tA", "LTAI5tB", "LTAI5tC"} {
			for _, action := range []string{"DescribeInstances", "RunInstances", "DescribeRegions"} {
				r := req(akid, action)
				k, lim := tr.tenant(r)
				if want := tr.Key(r); k != want {
					t.Fatalf("key %v, want %v as named afresh", k, want)
				}
				if lim != tr.Limiter(k) {
					t.Fatalf("round %d: %v: the cached Limiter is not the registry's", round, k)
				}
				if prev, ok := seen[k]; ok && prev != lim {
					t.Fatalf("round %d: %v got a second Limiter", round, k)
				}
				seen[k] = lim
			}
		}
	}
	if len(seen) != 9 {
		t.Fatalf("%d tenants, want 9", len(seen))
	}

	// Evicted from the registry: the next request gets the fresh Limiter.
	k, old := tr.tenant(req("LTAI5tA", "DescribeInstances"))
	tr.limits.Sweep(time.Now().Add(time.Hour))
	if !old.Evicted() {
		t.Fatal("Sweep did not evict the idle tenant")
	}
	k2, fresh := tr.tenant(req("LTAI5tA", "DescribeInstances"))
	if k2 != k || fresh == old || fresh != tr.Limiter(k) {
		t.Fatal("after eviction the cache still gave the evicted Limiter")
	}

	// A key in the context wins over the cache.
	ctxKey := quota.Key{Product: "custom"}
	r := req("LTAI5tA", "DescribeInstances")
	r = r.WithContext(quota.WithKey(r.Context(), ctxKey))
	if k, _ := tr.tenant(r); k != ctxKey {
		t.Fatalf("key %v, want the context's %v", k, ctxKey)
	}
}
