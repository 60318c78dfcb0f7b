package redisquota

import "github.com/tollgate-go/tollgate/quota"

// keys are a tenant's keys in Redis.
type keys struct {
	tat   string // hash: t, the theoretical arrival time; the pace that set it (i interval, u burst span, l and w the window log's limit and window), for Cancel and for a process that joins; d, its due time if logged
	pause string // string: the end of the tenant's pause
	log   string // list: the latest due times, newest first
	peers string // sorted set: process IDs by the time of their latest reservation
	learn string // hash: what a learner last settled on (l limit, w window, lo and hi its bounds, in µs)
}

// keysOf returns tenant k's keys: prefix, "{", k's String form, "}:", and
// a suffix. The braces make a Redis Cluster hash tag, so the keys of one
// tenant, which one script touches, share a hash slot. The String form is
// never empty (the root tenant's is "acs") and holds no credential (see
// quota.Key).
func keysOf(prefix string, k quota.Key) keys {
	base := prefix + "{" + k.String() + "}:"
	return keys{tat: base + "tat", pause: base + "pause", log: base + "log", peers: base + "peers", learn: base + "learned"}
}
