package transport

import (
	"log/slog"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/quotastore"
)

// Config sets up a Transport. Every zero field means the default its comment
// gives, so the zero Config is ready to use.
type Config struct {
	// Key names the tenant of each request. Nil means an AlibabaKeys made
	// from Accounts, Product and Depth. A key set on the request's context
	// with quota.WithKey always wins.
	Key KeyFunc

	// Accounts maps AccessKeyIds to the account that owns them, for the
	// default Key. Nil means each AccessKeyId is its own account, known by a
	// keyed hash of it (the AccessKeyId itself never appears in a key).
	Accounts map[string]string

	// Product names the product of requests to a host that is not an Alibaba
	// Cloud host, for the default Key. Empty means the host name.
	Product string

	// Depth cuts the default Key's tenants (see quota.Key.Prefix). Zero means
	// quota.DepthAPI: one limiter per account, product, region and API
	// operation, as Alibaba Cloud counts its quotas.
	Depth int

	// Salt keys the hash that stands for an AccessKeyId missing from
	// Accounts, for the default Key; keep it secret. Empty means a random
	// salt per process: the "ak-" labels then change on restart and differ
	// between processes, so processes whose metrics or stores must agree on
	// tenants must all set the same Salt (see AlibabaKeys.Salt).
	Salt []byte

	// Rules gives tenants a starting quota before the server has said
	// anything, matched by longest key prefix. Nil means no rules: a tenant
	// starts in slow start (a few requests in flight, doubling per round
	// trip) and learns the quota from its throttles or rate-limit headers.
	Rules *quota.Rules

	// Limiter tunes every tenant's limiter; see adaptive.Config for its
	// defaults. Its Rule is replaced by the matching entry of Rules.
	Limiter adaptive.Config

	// MaxTenants bounds how many tenants are tracked at once; at it, a new
	// tenant evicts the least recently used of 16 sampled (see
	// adaptive.RegistryConfig). Zero means adaptive's default.
	MaxTenants int

	// IdleTTL is how long a tenant may go unused before it is evicted. Zero
	// means adaptive's default.
	IdleTTL time.Duration

	// Breaker, if set, gives each tenant a circuit breaker set up by it
	// (see package breaker; zero fields mean its defaults): when the
	// tenant's service fails (5xx, ServiceUnavailable, no answer) at the
	// breaker's rate, RoundTrip refuses at once with an error matching
	// ErrCircuitOpen, until one probe finds the service back. Throttles
	// never open it. Nil means no breaker, at no cost.
	Breaker *breaker.Config

	// Store, if set, shares tenants' quotas with the other processes that
	// spend them (see Store; package redisquota keeps them in Redis): a
	// tenant whose pace a rule or the server's headers set is paced across
	// all the processes as one, and a pause the server asks of one holds
	// them all; a tenant whose pace no one says is learned by one process
	// for all, whose pace the others follow; and what a learner settles on
	// is kept for processes that start cold on the tenant. If the store
	// fails a call (its own timeout bounds each), no request fails or
	// waits for it: the tenants it shared go on each alone at StoreShare
	// of their pace, the Observer and Logger hear of it once, and one
	// request per StoreRetry tries the store again. Nil means each process
	// paces on its own, at no cost.
	Store quotastore.Store

	// StoreShare is the share of each shared tenant's pace a process keeps
	// while its Store does not answer. Zero means 1/N, with N the most
	// processes the store has seen spending one tenant's quota since the
	// Transport started, at least 2: a process cannot tell an outage of
	// the store from one of its own link to it, so it assumes the others
	// go on too.
	StoreShare float64

	// StoreRetry is how long the tenants go on alone after the Store
	// failed before one request tries it again. Zero means 1 s.
	StoreRetry time.Duration

	// Parser reads the answers. Nil means a zero quota.Parser: hints capped at
	// one minute, error bodies peeked at up to 64 KiB.
	Parser *quota.Parser

	// Observer, if set, is told of every request and of every change of a
	// tenant's limits (see Observer). Nil means nothing is observed, at no
	// cost.
	Observer Observer

	// Logger, if set, receives structured records of what the Transport
	// decides, and never one for an allowed or waited request: Info
	// "tollgate: throttled" when a throttle changes a tenant's limits, Info
	// "tollgate: quota changed" when limits change without one, Warn
	// "tollgate: request refused" when a wait would pass the deadline; each
	// throttle answer, planned pauses, pace changes and failures at Debug.
	// Error texts are logged with URL queries and credential values removed.
	// Nil means no logging.
	Logger *slog.Logger
}
