package transport

import (
	"hash/maphash"
	"strings"
	"sync/atomic"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
)

// tenantSlots is how many tenants a tenantCache remembers at most.
const tenantSlots = 64

// tenantCache remembers, for the request fields the default key function
// reads (host, AccessKeyId, RegionId, Action), the tenant key they make and
// its Limiter, so that a request of a tenant seen lately skips naming it and
// the registry lookup. It is direct-mapped by a hash of the fields: two
// tenants that share a slot take turns, each turn costing one naming and one
// lookup. Entries are immutable; a slot is replaced whole.
type tenantCache struct {
	seed  maphash.Seed
	slots [tenantSlots]atomic.Pointer[tenantEntry]
}

type tenantEntry struct {
	host, akid, region, action string
	key                        quota.Key
	lim                        *adaptive.Limiter
}

func newTenantCache() *tenantCache { return &tenantCache{seed: maphash.MakeSeed()} }

// get returns the key and Limiter of the tenant named by the fields, from the
// cache if the entry is there and its Limiter still in the registry, else by
// keys and the registry.
func (c *tenantCache) get(keys *AlibabaKeys, reg *adaptive.Registry, host, akid, region, action string) (quota.Key, *adaptive.Limiter) {
	// The AccessKeyId and Action tell most tenants apart; the region and
	// host only weigh in (the entry is checked field by field anyway).
	h := maphash.String(c.seed, akid) ^ 31*maphash.String(c.seed, action) ^
		7*uint64(len(region)) ^ 3*uint64(len(host))
	slot := &c.slots[h%tenantSlots]
	if e := slot.Load(); e != nil && e.host == host && e.akid == akid && e.region == region && e.action == action && !e.lim.Evicted() {
		return e.key, e.lim
	}
	key := keys.keyOf(host, akid, region, action)
	key = quota.Key{
		Product: strings.Clone(key.Product),
		Region:  strings.Clone(key.Region),
		Account: key.Account,
		API:     strings.Clone(key.API),
	}
	lim := reg.Get(key)
	slot.Store(&tenantEntry{
		host: strings.Clone(host), akid: strings.Clone(akid),
		region: strings.Clone(region), action: strings.Clone(action),
		key: key, lim: lim,
	})
	return key, lim
}
