// Package redisquota shares tenants' quotas among processes through Redis:
// its Store is a quotastore.Store, for transport.Config.Store.
//
// # What is shared
//
// A tenant's pace when every process derives it alike: from a rule, or
// from the server's rate-limit headers (see adaptive.Pace.Said), and the
// pauses the server asks of any process. All the processes then spend the
// tenant's quota as one.
//
// A tenant whose pace no process is told is learned by one of them, its
// leader, for all (see quotastore.LearnedTurn): the first process to ask
// for a turn on it when no other has led it lately (a lease each of its
// calls renews). The others take their turns at the pace it learned, hold
// while it learns alone, and relay their answers to it. And what a
// learner settles on is kept (Publish): a process that starts cold on the
// tenant reads it and starts from it instead of learning the quota again.
//
// # How
//
// Before each such request the Transport calls Reserve: one Lua script,
// run atomically by Redis, which takes the tenant's next admission and
// says how long to wait for it. The script reads the time from Redis
// (TIME), so processes whose clocks disagree still agree on it, and takes
// and returns durations relative to it. The admission is a GCRA
// reservation, as in a token bucket with Interval between admissions and
// Burst at once, but reserving future slots: the tenant's theoretical
// arrival time (tat) says when the bucket is full again, an admission is
// due at tat less Burst-1 intervals or now, whichever is later, and taking
// it moves tat one Interval on. A pause holds every admission until it
// ends. A pace with a window limit (at most Limit in any Window) also keeps
// a sliding log of the latest Limit due times: the next is due no earlier
// than Window after the oldest of them. Cancel gives back the latest
// admission of a request that will not be sent; Pause sets a pause. The
// scripts need Redis 5 or later, which replicates their effects rather
// than the scripts themselves, so they may read TIME before they write.
//
// For a learned tenant, ReserveLearned runs the same script with the
// leader's part first: a call from the leader (or from any process once
// the lease has lapsed) sets the pace, holds or frees the followers, and
// takes the answers they relayed; a follower's call adds its answers (a
// throttle among them holds the followers until the leader has heard it),
// then is held, or takes a turn at the leader's pace, at most
// LearnedTurn.BookAhead ahead (250 ms from a Transport) so that a new
// pace or a hold reaches the whole fleet within that. A hold begun voids the turns taken before it
// (an epoch in every answer).
//
// # Keys
//
// Each tenant has up to seven keys, named Prefix + "{" + key + "}:" + a
// suffix, the braces a Redis Cluster hash tag that puts them in one slot:
//
//   - tat, a hash of the arrival time and the pace that set it (what
//     Cancel needs, and what a process that knows no pace yet reserves
//     at), expiring a second after the arrival time passes;
//   - pause, the pause's end, expiring a second after it;
//   - log, the window's due times, expiring a second after the newest
//     leaves the window (at most 10000 entries);
//   - peers, the processes that reserved within PeerTTL, by Config.ID, for
//     Reservation.Peers, expiring a second after PeerTTL;
//   - learned, a hash of the estimate a learner last settled on (limit,
//     window and its bounds in microseconds), expiring EstimateTTL (a
//     week) after it was last published or read;
//   - lead, a hash of a learned tenant's leader (its Config.ID), the end
//     of its lease and of its hold, and the hold's epoch, expiring a
//     second after the lease;
//   - relay, the followers' answers waiting for the leader (their times
//     on Redis's clock and whether throttled; at most 1024), expiring a
//     second after the lease.
//
// An idle tenant leaves nothing behind but what was learned of its quota. Keys and values hold only the
// tenant's key (quota.Key, which never holds an AccessKeyId), numbers and
// the process IDs: no credential is ever written to Redis.
//
// # When Redis fails
//
// A key that is missing reads as a full bucket, which is exactly what an
// expired one was. So when Redis restarts and loses every key, or they are
// flushed, each tenant gets at most Burst admissions at once and then its
// Interval, never more; a pause in force is lost with its key. A restart
// also empties Redis's script cache: a call that finds its script missing
// (NOSCRIPT) sends it again (EVAL) in the same call.
//
// Every call is bounded by Config.Timeout (50 ms by default), which needs
// the go-redis client's ContextTimeoutEnabled option: New refuses a client
// without it, whose calls would wait out its ReadTimeout instead. A call
// that fails or times out returns an error, and the Transport goes on
// without the store, each process at a share of the tenant's pace, trying
// the store again after a while (see transport.Config.Store and
// StoreShare).
//
// go-redis logs what its connection pool meets (a refused dial, during an
// outage) through its own logger, to stderr by default; redis.SetLogger
// changes it, for the whole program.
package redisquota
