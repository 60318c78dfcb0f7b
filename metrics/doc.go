// Package metrics exports what tollgate decides as Prometheus metrics.
//
// A Collector is at once a prometheus.Collector, a transport.Observer (and
// transport.BreakerObserver and transport.StoreObserver) and a
// retry.Observer: register it, and hand it
// to the Transport and the retry Policy.
//
//	c := metrics.New(metrics.Config{})
//	prometheus.MustRegister(c)
//	rt := transport.New(nil, transport.Config{Observer: c})
//	policy := &retry.Policy{Observer: c}
//	http.Handle("/metrics", promhttp.Handler())
//
// # Metrics
//
// With the default namespace "tollgate":
//
//	tollgate_requests_total{tenant,result,priority} counter: RoundTrips by result: allowed, waited, throttled, failed, refused, open
//	tollgate_wait_seconds{tenant,priority}          histogram: time each RoundTrip waited for quota (0 for most)
//	tollgate_limit_changes_total{tenant}            counter: changes of the tenant's limits (a cut, new headers, a pause)
//	tollgate_pauses_total{tenant}                   counter: pauses (the server's retry hint, or Remaining 0 until the reset)
//	tollgate_pace_requests_per_second{tenant}       gauge: the rate the tenant is paced at; 0 means not paced
//	tollgate_quota_limit{tenant}                    gauge: requests allowed per window, 0 if none is known
//	tollgate_quota_window_seconds{tenant}           gauge: that window
//	tollgate_quota_remaining{tenant}                gauge: the server's last Remaining (only once the server said one)
//	tollgate_limit_source{tenant,source}            gauge: 1 for where the limit came from (none, rule, headers, learned), else 0
//	tollgate_retries_total{tenant,class}            counter: retries retry.Do made, by class: throttle, transient, refused
//	tollgate_giveups_total{tenant,reason}           counter: calls retry.Do gave up on, by reason: permanent, attempts, elapsed, deadline, refused, budget, canceled, other
//	tollgate_breaker_transitions_total{tenant,to}   counter: changes of the tenant's circuit breaker, by the state changed to: closed, half-open, open
//	tollgate_breaker_state{tenant,state}            gauge: 1 for the state of the tenant's circuit breaker (closed, half-open, open), else 0
//	tollgate_store_up                               gauge: 1 while the Transport's Store answers, 0 while its tenants go on alone
//	tollgate_store_outages_total                    counter: times the Store stopped answering
//
// The gauges follow the events: the pace as of the tenant's last reported
// change (the learned rate's slow regrowth between cuts is reported in 10%
// steps), Remaining as of the last answer that carried it, the breaker's
// state as of its last change (an open breaker whose OpenFor has passed
// reads open until a request comes to probe it).
//
// The priority label is the request's class in its tenant's line
// (transport.WithPriority): interactive, default or batch. A tenant's
// series of the default class are there from its first request, those of
// another class from the first request of that class: a service that sets
// no class has one series per result, as before classes came. (It is not
// called class: tollgate_retries_total's class is the failed attempt's.)
// How long the classes wait, against each other, is in the histogram; how
// many are in line now is in the tenant's adaptive.Snapshot (Classes).
//
// The breaker series (with transport.Config.Breaker) appear for a tenant
// when its breaker first opens: a tenant with no breaker, or whose breaker
// has always been closed, has none. Result "open" counts the RoundTrips the
// breaker refused unsent; those it let through, its probes included, count
// by their answer as any other.
//
// The store series (with transport.Config.Store) appear when the store
// first fails: a Collector cannot tell a store that always answered from
// none. They have no tenant label: one store serves every tenant.
//
// # Tenants
//
// The tenant label is the tenant's quota.Key in its String form, e.g.
// acs:ecs:cn-hangzhou:ak-3f2a9c0d1e4b5a67:DescribeInstances. With
// transport's default key function an AccessKeyId never appears there: an
// account named in transport.Config.Accounts appears as that account id,
// any other AccessKeyId only as the "ak-" hash the key already uses, keyed
// by transport.Config.Salt (random per process unless set, so set it for
// labels that stay the same across restarts and replicas). A
// custom transport.KeyFunc or quota.WithKey that puts an AccessKeyId into a
// key would put it into the label too: don't.
//
// Labels are bounded: the first Config.MaxTenants tenants seen get a label
// of their own, all later ones share tenant="other" (counters and the
// histogram only; "other" has no gauges, which would mix tenants). A
// retry.Do without a key in its context counts under tenant="acs", the root
// key. Series are never dropped while the Collector lives: a tenant the
// Transport has evicted keeps its last values, its breaker state included
// (if it comes back, its new breaker starts closed and shows at its first
// change).
//
// # Cost
//
// Each event costs a lock-free map lookup and a few atomic additions, some
// tens of nanoseconds with no allocation; the metric values are built only
// when Prometheus scrapes. A Transport with an Observer also takes its
// observed path, which reads the clock and the tenant's limits around each
// request. BenchmarkRoundTrip in transport/bench_test.go measures both
// against a Transport with no Observer.
package metrics
