package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/redisquota"
)

// newRedisClient returns a client of the Redis at addr, with
// ContextTimeoutEnabled, without which redisquota cannot bound its calls.
func newRedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
}

// pingTimeout bounds the PING that checks -redis at the start.
const pingTimeout = time.Second

// pingRedis checks that the Redis at addr answers PING within pingTimeout.
// It tries once, so that a refused connection says so rather than that the
// time ran out on go-redis's retries.
func pingRedis(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("-redis %s: Redis did not answer PING within %v: %w", addr, pingTimeout, err)
	}
	return nil
}

// warm loads store's scripts into Redis within pingTimeout, so that the
// run's first calls to the store do not spend its 50 ms Timeout on a dial
// and a NOSCRIPT (see redisquota.Store.Warm).
func warm(ctx context.Context, store *redisquota.Store) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return store.Warm(ctx)
}

// runPrefix returns a prefix for the Redis keys of one run, unique to it:
// "tollgate:demo-", 16 random hex digits and ":". No key an earlier run
// left behind (they expire on their own) can then meet this run's.
func runPrefix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "tollgate:demo-" + hex.EncodeToString(b[:]) + ":"
}

// quietRedis is go-redis's logger in the example: it drops go-redis's own
// lines (its pool's refused dials, while Redis is down), which would break
// into the progress lines; the progress line says "store down" instead.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
