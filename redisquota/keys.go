package redisquota

import "github.com/tollgate-go/tollgate/quota"

// keys are a tenant's keys in Redis.
type keys struct {
	tat   string // hash: t, the theoretical arrival time; the pace that set it (i interval, u burst span, l and w the window log's limit and window; s, 1 if said (Reserve), 0 if learned), for Cancel and for a process that joins; d, its due time if logged
	pause string // string: the end of the tenant's pause
	log   string // list: the latest due times, newest first
	peers string // sorted set: process IDs by the time of their latest reservation
	learn string // hash: what a learner last settled on (l limit, w window, lo and hi its bounds, in µs)
	lead  string // hash: the leader of a tenant the processes learn as one (id; le, the end of its lease; hd, of its hold)
	relay string // list: the followers' answers for the leader ("sent,answered,flag", Redis times in µs)
}

// keysOf returns tenant k's keys: prefix, "{", k's String form, "}:", and
// a suffix. The braces make a Redis Cluster hash tag, so the keys of one
// tenant, which one script touches, share a hash slot. The String form is
// never empty (the root tenant's is "acs") and holds no credential (see
// quota.Key).
func keysOf(prefix string, k quota.Key) keys {
	base := prefix + "{" + k.String() + "}:"
	return keys{tat: base + "tat", pause: base + "pause", log: base + "log", peers: base + "peers", learn: base + "learned", lead: base + "lead", relay: base + "relay"}
}

// all returns the keys the reserve script takes, in its order.
func (k keys) all() []string {
	return []string{k.tat, k.pause, k.log, k.peers, k.learn, k.lead, k.relay}
}
