package redisquota

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Config's zero fields.
const (
	DefaultPrefix  = "tollgate:"
	DefaultTimeout = 50 * time.Millisecond
	DefaultPeerTTL = 10 * time.Second
	// DefaultEstimateTTL keeps a learned estimate through a week without
	// use: a weekly job finds what it learned last week.
	DefaultEstimateTTL = 7 * 24 * time.Hour
)

// Config sets up a Store. Every zero field but Client means the default its
// comment gives.
type Config struct {
	// Client reaches Redis: a *redis.Client, a *redis.ClusterClient (the
	// keys of one tenant share a hash slot) or any redis.UniversalClient.
	// Required.
	//
	// Its options must set ContextTimeoutEnabled: without it go-redis
	// ignores the deadline of each call's context, so a slow Redis would
	// hold every request for the client's ReadTimeout (5 s by default)
	// instead of Timeout. New refuses a client whose options say it is off.
	Client redis.UniversalClient

	// Prefix starts every key the Store writes. It may not hold '{' or '}',
	// which would change the keys' hash slots in Redis Cluster. Empty means
	// DefaultPrefix, "tollgate:".
	Prefix string

	// Timeout bounds each call to Redis, and so each method of the Store.
	// Zero means DefaultTimeout, 50 ms.
	Timeout time.Duration

	// PeerTTL is how long a process that stopped reserving still counts
	// among a tenant's peers (Reservation.Peers). Zero means
	// DefaultPeerTTL, 10 s.
	PeerTTL time.Duration

	// EstimateTTL is how long Redis keeps what a learner settled on for a
	// tenant (see quotastore.Store.Publish) after it was last published or
	// read by a process starting cold. Zero means DefaultEstimateTTL, a
	// week.
	EstimateTTL time.Duration

	// ID names this process among a tenant's peers. It is written to Redis,
	// so it must not hold anything secret. Empty means 16 random hex
	// digits, drawn anew for each Store.
	ID string
}

// resolve returns cfg with its defaults filled in, or an error saying what
// is wrong with it.
func (cfg Config) resolve() (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("redisquota: Config.Client is nil")
	}
	if err := checkDeadlines(cfg.Client); err != nil {
		return cfg, err
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return cfg, fmt.Errorf("redisquota: Config.Prefix %q holds '{' or '}', which would change the keys' hash slots", cfg.Prefix)
	}
	if cfg.Timeout < 0 || cfg.PeerTTL < 0 || cfg.EstimateTTL < 0 {
		return cfg, fmt.Errorf("redisquota: Config.Timeout (%v), Config.PeerTTL (%v) and Config.EstimateTTL (%v) may not be negative", cfg.Timeout, cfg.PeerTTL, cfg.EstimateTTL)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.PeerTTL == 0 {
		cfg.PeerTTL = DefaultPeerTTL
	}
	if cfg.EstimateTTL == 0 {
		cfg.EstimateTTL = DefaultEstimateTTL
	}
	if cfg.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		cfg.ID = hex.EncodeToString(b[:])
	}
	return cfg, nil
}

// checkDeadlines returns an error if c's options say it ignores the
// deadlines of contexts, so that Timeout could not bound a call: go-redis
// does unless ContextTimeoutEnabled is set, and a ReadTimeout or
// WriteTimeout of -2 turns deadlines off altogether.
func checkDeadlines(c redis.UniversalClient) error {
	var enabled, off bool
	switch o := c.(type) {
	case interface{ Options() *redis.Options }: // *redis.Client; -2 reads -1 here
		opt := o.Options()
		enabled, off = opt.ContextTimeoutEnabled, opt.ReadTimeout < 0 || opt.WriteTimeout < 0
	case interface{ Options() *redis.ClusterOptions }:
		opt := o.Options()
		enabled, off = opt.ContextTimeoutEnabled, opt.ReadTimeout < -1 || opt.WriteTimeout < -1
	case interface{ Options() *redis.RingOptions }:
		enabled = o.Options().ContextTimeoutEnabled
	default:
		return nil // a client that does not say: trust it
	}
	switch {
	case !enabled:
		return errors.New("redisquota: the Redis client's options do not set ContextTimeoutEnabled: without it go-redis ignores each call's deadline, and a slow Redis would block requests for the client's ReadTimeout instead of Config.Timeout")
	case off:
		return errors.New("redisquota: the Redis client's ReadTimeout or WriteTimeout is -2, which turns deadlines off: a slow Redis would block requests instead of failing after Config.Timeout")
	}
	return nil
}
