package metrics

import (
	"maps"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// Defaults used for zero fields of a Config.
const (
	DefaultMaxTenants = 100
	DefaultNamespace  = "tollgate"
)

// OtherTenant is the tenant label shared by the tenants past
// Config.MaxTenants. No quota.Key has this String form.
const OtherTenant = "other"

// DefaultBuckets are the upper bounds, in seconds, of the wait histogram's
// buckets when Config.Buckets is nil: from 1 ms to the one minute that caps
// any server hint.
var DefaultBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Config sets up a Collector. Every zero field means the default its comment
// gives.
type Config struct {
	// MaxTenants bounds the tenant label's values: the first MaxTenants
	// tenants seen get their own, the rest share OtherTenant. 0 means
	// DefaultMaxTenants (100); a negative value means every tenant is
	// OtherTenant.
	MaxTenants int

	// Namespace prefixes every metric name. Empty means DefaultNamespace
	// ("tollgate").
	Namespace string

	// Buckets are the upper bounds, in seconds, of the wait histogram's
	// buckets, in increasing order (they are sorted, and repeats dropped).
	// Nil means DefaultBuckets.
	Buckets []float64

	// ConstLabels are added to every metric, e.g. {"client": "billing"} to
	// tell several Collectors in one registry apart. Nil means none.
	ConstLabels prometheus.Labels
}

// Collector counts what a transport.Transport and retry.Do decide and
// exports it to Prometheus; see the package documentation for the metrics.
// Make one with New: the zero Collector is not ready for use. A Collector is
// safe for concurrent use, and may be shared by any number of Transports and
// retry Policies, whose tenants then share its series. Register it once per
// registry.
type Collector struct {
	max     int
	buckets []float64

	mu      sync.Mutex                            // serialises additions to tenants
	tenants atomic.Pointer[map[quota.Key]*tenant] // copy-on-write: read lock-free, replaced under mu
	full    atomic.Bool                           // no room for another tenant
	other   *tenant

	requests, wait, changes, pauses         *prometheus.Desc
	pace, limit, window, remaining, sources *prometheus.Desc
	retries, giveups                        *prometheus.Desc
	transitions, breakerState               *prometheus.Desc
	storeUpDesc, storeOutagesDesc           *prometheus.Desc

	storeSeen    atomic.Bool   // a Store event came
	storeDown    atomic.Bool   // the last one said the store is down
	storeOutages atomic.Uint64 // Store events that said it went down
}

var (
	_ prometheus.Collector      = (*Collector)(nil)
	_ transport.Observer        = (*Collector)(nil)
	_ transport.BreakerObserver = (*Collector)(nil)
	_ transport.StoreObserver   = (*Collector)(nil)
	_ retry.Observer            = (*Collector)(nil)
)

// numResults is one more than the largest transport.Result.
const numResults = int(transport.ResultOpen) + 1

// breakerStates lists the breaker.States the breaker series have a series
// for, indexed by the State's value.
var breakerStates = [...]breaker.State{breaker.StateClosed, breaker.StateHalfOpen, breaker.StateOpen}

// sources lists the adaptive.Sources the source gauge has a series for.
var sources = [...]adaptive.Source{adaptive.SourceNone, adaptive.SourceRule, adaptive.SourceHeaders, adaptive.SourceLearned}

// priorities lists the classes the request counter and the wait histogram
// have a series for, by Priority.Index.
var priorities = [...]adaptive.Priority{adaptive.Interactive, adaptive.Default, adaptive.Batch}

// retryClasses lists the classes the retries counter has a series for.
var retryClasses = [...]retry.Class{retry.ClassThrottle, retry.ClassTransient, retry.ClassRefused}

// giveUpReasons lists the values of the giveups counter's reason label, as
// retry.GiveUpEvent.ReasonName returns them.
var giveUpReasons = [...]string{"permanent", "attempts", "elapsed", "deadline", "refused", "budget", "canceled", "other"}

// tenant holds one tenant label's values.
type tenant struct {
	label string
	gauge bool // exports gauges (not the OtherTenant)

	// By the request's class (Priority.Index); a class's series appear
	// once a request of it came, Default's at once.
	requests [len(priorities)][numResults]atomic.Uint64
	wait     [len(priorities)]histogram
	classes  [len(priorities)]atomic.Bool // a request of the class came
	changes  atomic.Uint64
	pauses   atomic.Uint64
	retries  [len(retryClasses)]atomic.Uint64
	giveups  [len(giveUpReasons)]atomic.Uint64

	remaining atomic.Int64 // the server's last Remaining; -1 if never said

	transitions [len(breakerStates)]atomic.Uint64 // breaker changes, by the State changed to
	breaker     atomic.Uint32                     // 1 + the State of the last change; 0 if none yet (OtherTenant: only whether there was one)

	mu   sync.Mutex // guards seen and snap
	seen bool       // a Limits event has set snap
	snap adaptive.Snapshot
}

// New returns a Collector set up by cfg, whose zero fields mean the
// defaults documented on Config.
func New(cfg Config) *Collector {
	c := &Collector{max: cfg.MaxTenants, buckets: sortedBuckets(cfg.Buckets)}
	if c.max == 0 {
		c.max = DefaultMaxTenants
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, append([]string{"tenant"}, labels...), cfg.ConstLabels)
	}
	c.requests = desc("requests_total", "RoundTrips by tenant and result: allowed (sent at once), waited (sent after waiting for quota), throttled (the server answered with a throttle), failed (no answer), refused (not sent: the wait would pass the deadline), open (not sent: the tenant's circuit breaker is open); and by the request's priority class in the tenant's line (interactive, default, batch).", "result", "priority")
	c.wait = desc("wait_seconds", "Time each RoundTrip waited for the tenant's quota, by the request's priority class (interactive, default, batch).", "priority")
	c.changes = desc("limit_changes_total", "Changes of the tenant's limits: new rate-limit header values, a throttle's cut, a pause.")
	c.pauses = desc("pauses_total", "Pauses of the tenant: a server retry hint, or Remaining 0 until the reset.")
	c.pace = desc("pace_requests_per_second", "The rate the tenant is paced at, as of its last limits change; 0 means not paced.")
	c.limit = desc("quota_limit", "Requests the tenant may send per window; 0 if no limit is known.")
	c.window = desc("quota_window_seconds", "The window of tollgate_quota_limit.")
	c.remaining = desc("quota_remaining", "Requests left in the current window, as the server last said.")
	c.sources = desc("limit_source", "1 for where the tenant's limit comes from (none, rule, headers, learned), else 0.", "source")
	c.retries = desc("retries_total", "Retries made by retry.Do, by the failed attempt's class.", "class")
	c.giveups = desc("giveups_total", "Calls retry.Do gave up on, by reason.", "reason")
	c.transitions = desc("breaker_transitions_total", "Changes of the tenant's circuit breaker, by the state changed to: closed, half-open, open.", "to")
	c.breakerState = desc("breaker_state", "1 for the state of the tenant's circuit breaker (closed, half-open, open) as of its last change, else 0; only once it has changed.", "state")
	c.storeUpDesc = prometheus.NewDesc(prometheus.BuildFQName(ns, "", "store_up"), "1 while the Transport's Store answers, 0 while its tenants go on alone at a share of their quota; only once the store has failed.", nil, cfg.ConstLabels)
	c.storeOutagesDesc = prometheus.NewDesc(prometheus.BuildFQName(ns, "", "store_outages_total"), "Times the Transport's Store stopped answering.", nil, cfg.ConstLabels)
	c.other = c.newTenant(OtherTenant, false)
	m := make(map[quota.Key]*tenant)
	c.tenants.Store(&m)
	if c.max < 0 {
		c.full.Store(true)
	}
	return c
}

func sortedBuckets(b []float64) []float64 {
	if b == nil {
		return DefaultBuckets
	}
	out := make([]float64, 0, len(b))
	for _, v := range b {
		if !math.IsNaN(v) && !math.IsInf(v, +1) {
			out = append(out, v)
		}
	}
	sort.Float64s(out)
	j := 0
	for i, v := range out {
		if i == 0 || v != out[j-1] {
			out[j] = v
			j++
		}
	}
	return out[:j]
}

func (c *Collector) newTenant(label string, gauge bool) *tenant {
	t := &tenant{label: label, gauge: gauge}
	t.remaining.Store(-1)
	for i := range t.wait {
		t.wait[i].init(c.buckets)
	}
	t.classes[adaptive.Default.Index()].Store(true)
	return t
}

// tenant returns the values of k's label, adding k if there is room.
func (c *Collector) tenant(k quota.Key) *tenant {
	if t, ok := (*c.tenants.Load())[k]; ok {
		return t
	}
	if c.full.Load() {
		return c.other
	}
	return c.add(k)
}

func (c *Collector) add(k quota.Key) *tenant {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.tenants.Load()
	if t, ok := old[k]; ok {
		return t
	}
	if len(old) >= c.max {
		c.full.Store(true)
		return c.other
	}
	m := make(map[quota.Key]*tenant, len(old)+1)
	maps.Copy(m, old)
	t := c.newTenant(k.String(), true)
	m[k] = t
	c.tenants.Store(&m)
	return t
}

// Request counts a RoundTrip. It implements transport.Observer.
func (c *Collector) Request(ev transport.RequestEvent) {
	t := c.tenant(ev.Key)
	p := ev.Priority.Index()
	if !t.classes[p].Load() {
		t.classes[p].Store(true)
	}
	if r := int(ev.Result); r > 0 && r < numResults {
		t.requests[p][r].Add(1)
	}
	t.wait[p].observe(ev.Wait)
	if t.gauge && ev.Answer.Has(quota.FieldRemaining) {
		t.remaining.Store(ev.Answer.Remaining)
	}
}

// Limits records a change of a tenant's limits. It implements
// transport.Observer.
func (c *Collector) Limits(ev transport.LimitsEvent) {
	t := c.tenant(ev.Key)
	t.changes.Add(1)
	if ev.After.PauseUntil.After(ev.Before.PauseUntil) {
		t.pauses.Add(1)
	}
	if !t.gauge {
		return
	}
	t.mu.Lock()
	t.seen, t.snap = true, ev.After
	t.mu.Unlock()
}

// Retry counts a retry. It implements retry.Observer.
func (c *Collector) Retry(ev retry.RetryEvent) {
	for i, cl := range retryClasses {
		if cl == ev.Class {
			c.tenant(ev.Key).retries[i].Add(1)
			return
		}
	}
}

// GiveUp counts a give-up. It implements retry.Observer.
func (c *Collector) GiveUp(ev retry.GiveUpEvent) {
	name := ev.ReasonName()
	for i, r := range giveUpReasons {
		if r == name {
			c.tenant(ev.Key).giveups[i].Add(1)
			return
		}
	}
}

// Breaker counts a change of a tenant's circuit breaker and records its new
// state. It implements transport.BreakerObserver.
func (c *Collector) Breaker(ev transport.BreakerEvent) {
	s := int(ev.To)
	if s >= len(breakerStates) {
		return
	}
	t := c.tenant(ev.Key)
	t.transitions[s].Add(1)
	t.breaker.Store(uint32(s) + 1)
}

// Store records that the Transport's Store stopped answering or answers
// again. It implements transport.StoreObserver.
func (c *Collector) Store(ev transport.StoreEvent) {
	c.storeSeen.Store(true)
	c.storeDown.Store(!ev.Up)
	if !ev.Up {
		c.storeOutages.Add(1)
	}
}

// Describe sends the descriptors of every metric the Collector exports. It
// implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.requests, c.wait, c.changes, c.pauses,
		c.pace, c.limit, c.window, c.remaining, c.sources,
		c.retries, c.giveups,
		c.transitions, c.breakerState,
		c.storeUpDesc, c.storeOutagesDesc,
	} {
		ch <- d
	}
}

// Collect sends the current values. It implements prometheus.Collector.
// Tenants come in no particular order; the registry sorts them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range *c.tenants.Load() {
		c.collect(ch, t)
	}
	if c.full.Load() {
		c.collect(ch, c.other)
	}
	if c.storeSeen.Load() {
		up := 1.0
		if c.storeDown.Load() {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(c.storeUpDesc, prometheus.GaugeValue, up)
		ch <- prometheus.MustNewConstMetric(c.storeOutagesDesc, prometheus.CounterValue, float64(c.storeOutages.Load()))
	}
}

func (c *Collector) collect(ch chan<- prometheus.Metric, t *tenant) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{t.label}, labels...)...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{t.label}, labels...)...)
	}
	for i, p := range priorities {
		if !t.classes[i].Load() {
			continue
		}
		for r := transport.ResultAllowed; int(r) < numResults; r++ {
			counter(c.requests, t.requests[i][r].Load(), r.String(), p.String())
		}
		count, sum, buckets := t.wait[i].snapshot()
		ch <- prometheus.MustNewConstHistogram(c.wait, count, sum, buckets, t.label, p.String())
	}
	counter(c.changes, t.changes.Load())
	counter(c.pauses, t.pauses.Load())
	for i, cl := range retryClasses {
		counter(c.retries, t.retries[i].Load(), cl.String())
	}
	for i, r := range giveUpReasons {
		counter(c.giveups, t.giveups[i].Load(), r)
	}
	// The breaker's series only once it has changed: a tenant with no
	// breaker has none.
	bs := t.breaker.Load()
	if bs != 0 {
		for i, s := range breakerStates {
			counter(c.transitions, t.transitions[i].Load(), s.String())
		}
	}
	if !t.gauge {
		return
	}
	if bs != 0 {
		for i, s := range breakerStates {
			v := 0.0
			if uint32(i)+1 == bs {
				v = 1
			}
			gauge(c.breakerState, v, s.String())
		}
	}
	t.mu.Lock()
	seen, sn := t.seen, t.snap
	t.mu.Unlock()
	rem := t.remaining.Load()
	if rem >= 0 {
		gauge(c.remaining, float64(rem))
	}
	if !seen {
		return
	}
	gauge(c.pace, sn.Rate)
	gauge(c.limit, float64(sn.Limit))
	gauge(c.window, sn.Window.Seconds())
	for _, s := range sources {
		v := 0.0
		if s == sn.Source {
			v = 1
		}
		gauge(c.sources, v, s.String())
	}
}

// histogram is a lock-free histogram of durations in seconds, read into a
// const histogram at scrape time.
type histogram struct {
	upper  []float64       // bucket upper bounds, seconds
	zero   int             // the bucket of a zero wait
	counts []atomic.Uint64 // per bucket (not cumulative); the last is +Inf
	sum    atomic.Uint64   // float64 bits, seconds
}

func (h *histogram) init(upper []float64) {
	h.upper = upper
	h.zero = sort.SearchFloat64s(upper, 0)
	h.counts = make([]atomic.Uint64, len(upper)+1)
}

func (h *histogram) observe(d time.Duration) {
	if d <= 0 {
		h.counts[h.zero].Add(1) // the common case: no wait
		return
	}
	v := d.Seconds()
	h.counts[sort.SearchFloat64s(h.upper, v)].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// snapshot returns the count, the sum and the cumulative bucket counts.
func (h *histogram) snapshot() (uint64, float64, map[float64]uint64) {
	buckets := make(map[float64]uint64, len(h.upper))
	var n uint64
	for i, ub := range h.upper {
		n += h.counts[i].Load()
		buckets[ub] = n
	}
	n += h.counts[len(h.upper)].Load()
	return n, math.Float64frombits(h.sum.Load()), buckets
}
