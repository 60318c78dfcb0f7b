// Package fakecloud is an in-process fake of Alibaba Cloud's OpenAPI gateway,
// faithful enough about throttling to test tollgate end to end.
//
// A [Cloud] is an [http.Handler]. It accepts what the Alibaba Cloud SDKs send:
// RPC-style requests (GET or POST / with Action, AccessKeyId, SignatureNonce,
// Timestamp, … in the query or in a form body, as the v1 SDK does) and V3
// requests (x-acs-action, x-acs-signature-nonce, x-acs-date and an
// "Authorization: ACS3-HMAC-SHA256 Credential=<AccessKeyId>,…" header).
// Signatures are not verified, but a reused nonce is refused with
// SignatureNonceUsed and a timestamp more than 15 minutes off with
// InvalidTimeStamp.Expired, as the real gateway does.
//
// Quotas belong to accounts (several AccessKeyIds may share one, see
// [Config.Accounts]) and apply per (account, API action), with an optional
// per-account total. Each [Quota] is a fixed window, a sliding window, a
// token bucket or a cap on requests in flight, optionally shared with an
// unseen consumer ([Quota].Unseen); quotas can be changed at run time
// ([Cloud.SetQuota]) or scheduled in [Phase]s. Admission is exact under
// concurrency: each quota has its own mutex. With no quota configured every
// request is admitted.
//
// Fixed windows of any length (1 ms to 24 h) start at multiples of their
// length from the Unix epoch, in the clock's time: a 60 s window starts on
// each minute, a 1 h window on each hour. A synctest bubble's clock starts
// at midnight UTC on 1 January 2000, a boundary of every window that
// divides a day; a test that wants a client to start mid-window waits
// first.
//
// A throttled request gets what the real gateway answers: HTTP 400 with a
// JSON body whose Code is Throttling.User, no rate-limit headers. Status,
// code and header families ([HeaderMode]) are configurable, and [Faults]
// inject latency, 503 ServiceUnavailable answers, connections dropped
// mid-response, malformed rate-limit headers, slow bodies and throttles
// whatever the rate (load shedding). [Config.OnRequest] hears of every
// answer, for a test's own time series.
//
// # Three ways to run it
//
//   - In memory: [Cloud.RoundTripper] calls the handler directly, with no
//     socket. This is the way under [testing/synctest]: a loopback socket is
//     real I/O, which is not durably blocking, so a bubble whose goroutines
//     wait on the network never advances its fake clock. In memory, a fixed
//     window of 1 s takes no real time.
//   - On loopback in a test: [NewServer] (or [NewUnstartedServer]), in the
//     style of net/http/httptest, closed by tb.Cleanup.
//   - Outside tests: [Start] or [Cloud.Serve], as the example program and
//     cmd/fakecloud do.
//
// Admin routes live on the handler too: GET /_fakecloud/stats returns
// [Stats] as JSON, PUT /_fakecloud/quota?api=…&limit=…&window=… changes a
// quota live, GET /_fakecloud/quota lists them, POST /_fakecloud/reset calls
// [Cloud.Reset].
//
// Time comes from [Config.Now] (default time.Now, which is already fake
// inside a synctest bubble); all sleeps are timers that honour the request
// context.
package fakecloud

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a [Cloud]. The zero Config is a gateway with no quota
// (every request admitted) that throttles, when given quotas, like the real
// one: HTTP 400, code Throttling.User, no rate-limit headers.
type Config struct {
	// Now is the clock. If nil, time.Now is used (fake inside a synctest
	// bubble). Windows, phases, timestamps and nonce memory all use it;
	// latency and slow-body delays use real timers.
	Now func() time.Time

	// Quotas are the initial quotas, see [Quota]. If empty, every request is
	// admitted until a quota is set.
	Quotas []Quota

	// Phases schedule quota changes at offsets from the moment New is
	// called (measured with Now). Each phase applies its quotas as
	// [Cloud.SetQuota] does; phases apply lazily, on the first request (or
	// Stats/Quotas call) at or after their offset.
	Phases []Phase

	// Accounts maps an AccessKeyId to the account that owns it; quotas are
	// held by accounts. A key that is not in the map (or a nil map) is its
	// own account.
	Accounts map[string]string

	// ThrottleStatus is the HTTP status of a throttle answer. If zero, 400
	// (what the gateway mostly sends); 429 and 503 also occur in the wild.
	ThrottleStatus int

	// ThrottleCode is the Code of a throttle answer's JSON body. If empty,
	// "Throttling.User"; "Throttling.Api" and "Throttling" also occur.
	ThrottleCode string

	// Headers selects the rate-limit header families sent. If zero, none,
	// like the real gateway. Families combine with |.
	Headers HeaderMode

	// HeadersOnEveryAnswer sends the rate-limit headers on admitted answers
	// too. If false, they are sent on throttle answers only. Retry hints
	// (Retry-After, x-acs-retry-after) are sent on throttles only.
	HeadersOnEveryAnswer bool

	// RetryAfterDate sends Retry-After as an HTTP-date instead of delta
	// seconds.
	RetryAfterDate bool

	// Faults are the initial fault rates; see [Cloud.SetFaults].
	Faults Faults

	// Seed seeds the random source behind faults and latency jitter, so a
	// run is reproducible (given the same request order). Zero is a valid
	// seed.
	Seed uint64

	// Product names the product in the Recommend link. If empty, "Ecs".
	Product string

	// HostID is the HostId of JSON answers. If empty, "ecs.aliyuncs.com".
	HostID string

	// MaxClockSkew is how far a request timestamp may be from Now. If zero,
	// 15 minutes.
	MaxClockSkew time.Duration

	// NonceTTL is how long a nonce is remembered. If zero, 15 minutes (a
	// timestamp older than that is refused anyway).
	NonceTTL time.Duration

	// MaxNonces bounds nonce memory; the oldest are forgotten first. If
	// zero, 1<<17.
	MaxNonces int

	// OnRequest, if set, is called with every API request's [Event] once
	// the gateway has decided its answer, before any latency: a test can
	// keep its own time series of what the server admitted and refused.
	// It is called from the request's goroutine and must be safe for
	// concurrent use.
	OnRequest func(Event)

	// MaxTenants bounds the number of limiter states and of accounts and
	// actions tracked in Stats (beyond it, stats go to "_other"). If zero,
	// 1<<16 limiter states and 1024 names.
	MaxTenants int
}

// Cloud is the fake gateway, an [http.Handler]. Create it with [New]. It is
// safe for simultaneous use by multiple goroutines.
type Cloud struct {
	cfg   Config
	now   func() time.Time
	start time.Time

	rulesMu   sync.Mutex // guards writes to rules and phase application
	rules     atomic.Pointer[ruleSet]
	phases    []Phase
	nextPhase atomic.Int64

	lims   limiters
	nonces nonceSet
	stats  statsRecorder

	faults atomic.Pointer[Faults]
	rngMu  sync.Mutex // guards rng
	rng    *rand.Rand

	reqSeq   atomic.Uint64
	admitted atomic.Uint64 // requests the quotas admitted while ShedEvery was set
}

var _ http.Handler = (*Cloud)(nil)

// New returns a fake gateway configured by cfg. Invalid quota fields are
// normalised as documented on [Quota]; New never fails.
func New(cfg Config) *Cloud {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ThrottleStatus == 0 {
		cfg.ThrottleStatus = http.StatusBadRequest
	}
	if cfg.ThrottleStatus < 100 || cfg.ThrottleStatus > 999 {
		cfg.ThrottleStatus = http.StatusBadRequest
	}
	if cfg.ThrottleCode == "" {
		cfg.ThrottleCode = "Throttling.User"
	}
	if cfg.Product == "" {
		cfg.Product = "Ecs"
	}
	if cfg.HostID == "" {
		cfg.HostID = "ecs.aliyuncs.com"
	}
	if cfg.MaxClockSkew <= 0 {
		cfg.MaxClockSkew = 15 * time.Minute
	}
	if cfg.NonceTTL <= 0 {
		cfg.NonceTTL = 15 * time.Minute
	}
	if cfg.MaxNonces <= 0 {
		cfg.MaxNonces = 1 << 17
	}
	maxNames := 1024
	maxLims := 1 << 16
	if cfg.MaxTenants > 0 {
		maxNames, maxLims = cfg.MaxTenants, cfg.MaxTenants
	}
	accounts := make(map[string]string, len(cfg.Accounts))
	for k, v := range cfg.Accounts {
		accounts[k] = v
	}
	cfg.Accounts = accounts

	c := &Cloud{
		cfg:   cfg,
		now:   cfg.Now,
		start: cfg.Now(),
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
	}
	c.lims.init(maxLims)
	c.nonces.init(cfg.NonceTTL, cfg.MaxNonces)
	c.stats.init(maxNames)

	rs := ruleSet{}
	for _, q := range cfg.Quotas {
		rs.set(q)
	}
	c.rules.Store(&rs)
	c.phases = append([]Phase(nil), cfg.Phases...)
	sort.SliceStable(c.phases, func(i, j int) bool { return c.phases[i].At < c.phases[j].At })
	f := cfg.Faults
	c.faults.Store(&f)
	return c
}

// ServeHTTP answers an OpenAPI request, or an admin request under
// /_fakecloud/.
func (c *Cloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		c.serveAdmin(w, r)
		return
	}
	c.serveAPI(w, r)
}

// account returns the account that owns accessKeyID.
func (c *Cloud) account(accessKeyID string) string {
	if a, ok := c.cfg.Accounts[accessKeyID]; ok && a != "" {
		return a
	}
	return accessKeyID
}

// Reset forgets counters, limiter state (every quota starts afresh) and
// remembered nonces. Quotas, phases already applied and faults are kept.
func (c *Cloud) Reset() {
	c.lims.reset()
	c.nonces.reset()
	c.stats.reset()
}

// SetFaults replaces the fault rates for the requests that follow.
func (c *Cloud) SetFaults(f Faults) {
	c.faults.Store(&f)
}

// Faults returns the fault rates in force.
func (c *Cloud) Faults() Faults {
	return *c.faults.Load()
}

// writeJSON writes v as an indented-free JSON answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
