package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/aliyun"
	"github.com/tollgate-go/tollgate/aliyun/v1sdk"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/metrics"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/transport"
)

// options are the demo's settings, from the flags.
type options struct {
	duration  time.Duration
	workers   int
	processes int           // tollgate's Transports, as separate processes
	quota     int           // per second, on the fake gateway
	step      bool          // the quota steps to half and back during a run
	settle    time.Duration // how long a run is given after each change of the quota
	headers   fakecloud.HeaderMode
	compare   bool
	redis     string      // the address of the Redis the processes share a store on; empty: none
	breaker   bool        // give tollgate's run a circuit breaker
	faults    []faultSpec // faults of the fake gateway over each run
	endpoint  string      // a real endpoint; empty means the fake gateway
	region    string
	metrics   string
	akid      string
	secret    string
	progress  bool               // redraw the progress line in place (a terminal)
	memory    bool               // reach the fake gateway in memory, not on loopback (tests)
	seed      uint64             // the fake gateway's latency jitter (tests)
	observer  *metrics.Collector // with -metrics; nil: none
}

// defaultQuota is the fake gateway's quota per second, halved for the
// middle third of a run (with -step). At 20/s halved to 10/s, a run's settled parts fall
// short (93-94% of the quota): at 10/s the Limiter holds two seconds between
// probes, to keep their throttles under 5%, so it may find the quota raised
// back only about three seconds later, and a third of 15 s leaves it one
// settled second after that.
const defaultQuota = 40

// The credentials the demo uses against the fake gateway.
const (
	fakeAKID   = "LTAI5tDEMOxACCESSxKEY"
	fakeSecret = "demo-secret"
)

// mode is what a run drives: the plain SDK, or the SDK through tollgate,
// with or without a circuit breaker, and with or without a store.
type mode struct {
	tollgate, breaker, store bool
}

// name returns the run's name in the report and progress lines: "plain
// SDK", "tollgate", or, where -faults set off the breaker's runs,
// "tollgate+breaker"; with -processes N above 1, tollgate's followed by
// " ×N", and with a store by " +redis".
func (m mode) name(o options) string {
	if !m.tollgate {
		return "plain SDK"
	}
	s := "tollgate"
	if m.breaker && len(o.faults) > 0 {
		s += "+breaker"
	}
	if o.processes > 1 {
		s += fmt.Sprintf(" ×%d", o.processes)
	}
	if m.store {
		s += " +redis"
	}
	return s
}

// nameWidth returns the width of the longest name among the runs, in
// characters.
func (o options) nameWidth() int {
	w := 0
	for _, m := range o.modes() {
		w = max(w, utf8.RuneCountInString(m.name(o)))
	}
	return w
}

// modes returns the runs to make: tollgate (with a breaker if -breaker,
// with the store if -redis); with -compare, the plain SDK first; and with
// -compare, -faults and -breaker, tollgate without the breaker between
// them, so that the breaker's effect shows against the same faults. With
// -compare and -redis, tollgate without the store and then with it, no
// plain SDK: the point is the store's effect.
func (o options) modes() []mode {
	tg := mode{tollgate: true, breaker: o.breaker, store: o.redis != ""}
	switch {
	case !o.compare:
		return []mode{tg}
	case tg.store:
		return []mode{{tollgate: true, breaker: o.breaker}, tg}
	case o.breaker && len(o.faults) > 0:
		return []mode{{}, {tollgate: true}, tg}
	}
	return []mode{{}, tg}
}

// demo runs the plain SDK (with -compare) and then the SDK through tollgate
// (see options.modes), and prints a report of each.
func demo(ctx context.Context, o options, out io.Writer) error {
	var results []*result
	for _, m := range o.modes() {
		r, err := runOnce(ctx, o, m, out)
		if err != nil {
			return err
		}
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	printReport(out, o, results)
	return nil
}

// gateway is what one run calls: the fake gateway, or a real endpoint.
type gateway struct {
	cloud  *fakecloud.Cloud // nil for a real endpoint
	domain string
	scheme string
	next   http.RoundTripper // nil: the SDK's own transport
	close  func()
}

func startGateway(o options) (*gateway, error) {
	if o.endpoint != "" {
		return &gateway{domain: o.endpoint, scheme: "https", close: func() {}}, nil
	}
	q := func(n int) []fakecloud.Quota {
		return []fakecloud.Quota{{API: "DescribeInstances", Limit: n, Window: time.Second}}
	}
	ps := o.phases()
	var steps []fakecloud.Phase
	for _, p := range ps[1:] {
		steps = append(steps, fakecloud.Phase{At: p.from, Quotas: q(p.quota)})
	}
	cfg := fakecloud.Config{
		Quotas:               q(ps[0].quota),
		Phases:               steps,
		Headers:              o.headers,
		HeadersOnEveryAnswer: o.headers != fakecloud.HeadersNone,
		Faults:               o.faultsAt(0),
		Seed:                 o.seed,
	}
	if o.memory {
		cloud := fakecloud.New(cfg)
		return &gateway{cloud: cloud, domain: "ecs." + o.region + ".aliyuncs.com", scheme: "http", next: cloud.RoundTripper(), close: func() {}}, nil
	}
	srv, err := fakecloud.Start(cfg)
	if err != nil {
		return nil, err
	}
	return &gateway{cloud: srv.Cloud, domain: srv.Addr(), scheme: "http", close: srv.Close}, nil
}

// quotaAt returns the fake gateway's quota per second at offset d of a run.
func (o options) quotaAt(d time.Duration) int {
	for _, p := range o.phases() {
		if d < p.to {
			return p.quota
		}
	}
	return o.quota
}

// quotaTotal returns how many calls the fake gateway's quota allows in a
// whole run.
func (o options) quotaTotal() float64 {
	var n float64
	for _, p := range o.phases() {
		n += float64(p.quota) * (p.to - p.from).Seconds()
	}
	return n
}

// result is what one run saw.
type result struct {
	mode
	name       string
	calls      int64 // calls finished
	ok         int64
	failed     int64
	throttles  int64   // throttle answers the SDK received
	requests   int64   // requests the SDK sent
	requestsBy []int64 // of which through each process's Transport (the plain SDK's: one)
	processes  int     // tollgate's Transports; 0 for the plain SDK
	latencies  []time.Duration
	replays    int64 // SignatureNonceUsed answers
	goodput    float64
	settled    settled
	firstErr   error  // the first failed call's error
	storm      storm  // while -faults were on
	open       int64  // failed calls whose last attempt the open breaker refused
	cut        int64  // calls the breaker refused whose next attempt would have come after the run
	opened     int64  // times the breaker opened (from closed)
	probes     int64  // probes the half-open breaker let through
	reopened   int64  // of which failed, opening it again
	redisCalls uint64 // commands the stores sent to Redis
	outages    int64  // times a store stopped answering
}

// defaultSettle is how long after the start and after each change of the
// quota a run is given to settle (-settle): transport's end-to-end bounds
// (≥ 95% of the quota, ≤ 5% throttled, without headers) hold from then on.
const defaultSettle = 2 * time.Second

// settled is what the fake gateway admitted and throttled over the settled
// parts of a run: each phase of the quota from -settle after it began.
type settled struct {
	admitted, throttled int64
	allowed             float64 // what the quota allowed in those parts
	coldStart           int64   // throttled before the first phase settled (or the run ended)
}

func (s settled) goodput() float64 { return float64(s.admitted) / max(s.allowed, 1) }

func (s settled) throttledShare() float64 {
	return float64(s.throttled) / float64(max(s.admitted+s.throttled, 1))
}

// phase is a part of a run with one quota per second.
type phase struct {
	from, to time.Duration
	quota    int
}

// phases returns the run's phases of the quota: with -step full, half,
// full; without, one at -quota throughout.
func (o options) phases() []phase {
	if !o.step {
		return []phase{{0, o.duration, o.quota}}
	}
	third := o.duration / 3
	return []phase{{0, third, o.quota}, {third, 2 * third, o.quota / 2}, {2 * third, o.duration, o.quota}}
}

// measureSettled samples the fake gateway's counters at the start and end
// of each settled part of a run begun at start, sleeping until each moment,
// and returns their sum, with the throttles of the cold start: those
// counted by the time the first phase settled. It returns early when ctx
// ends.
func measureSettled(ctx context.Context, o options, cloud *fakecloud.Cloud, start time.Time) settled {
	var s settled
	for i, p := range o.phases() {
		from, to := p.from+o.settle, p.to-time.Millisecond
		if i == 0 {
			reached := sleepUntil(ctx, start.Add(from))
			s.coldStart = cloud.Stats().Total.Throttled
			if !reached {
				return s
			}
		}
		if to <= from {
			continue
		}
		if !sleepUntil(ctx, start.Add(from)) {
			return s
		}
		a := cloud.Stats().Total
		if !sleepUntil(ctx, start.Add(to)) {
			return s
		}
		b := cloud.Stats().Total
		s.admitted += b.Admitted - a.Admitted
		s.throttled += b.Throttled - a.Throttled
		s.allowed += float64(p.quota) * (to - from).Seconds()
	}
	return s
}

// runOnce runs the workers against a fresh gateway for o.duration, as m
// says.
func runOnce(ctx context.Context, o options, m mode, out io.Writer) (*result, error) {
	// Start on a whole second, so the run's seconds are the fake gateway's
	// windows.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	gw, err := startGateway(o)
	if err != nil {
		return nil, err
	}
	defer gw.close()

	akid, secret := fakeAKID, fakeSecret
	if o.endpoint != "" {
		akid, secret = o.akid, o.secret
	}
	// One SDK client per worker: the v1 SDK's Client is not safe for
	// concurrent use. Through tollgate the clients of a process share its
	// Transport, and so the account's limiter.
	clients := make([]*ecs.Client, o.workers)
	for i := range clients {
		conf := sdk.NewConfig()
		if gw.next != nil {
			conf.Transport = gw.next
		}
		if clients[i], err = ecs.NewClientWithOptions(o.region, conf, credentials.NewAccessKeyCredential(akid, secret)); err != nil {
			return nil, err
		}
	}
	// Each run is a fresh set of client processes: their own Transports
	// and retry budgets.
	var f *fleet
	procs := 1 // the plain SDK's
	if m.tollgate {
		if f, err = newFleet(ctx, o, m, clients); err != nil {
			return nil, err
		}
		defer f.close()
		procs = o.processes
	}

	r := &result{mode: m, name: m.name(o)}
	var ok, failed, open, cut, throttles atomic.Int64
	requests := make([]atomic.Int64, procs) // by process
	var mu sync.Mutex                       // guards r.latencies
	describe := func(client *ecs.Client, p int) (*ecs.DescribeInstancesResponse, error) {
		req := ecs.CreateDescribeInstancesRequest()
		req.Scheme, req.Domain = gw.scheme, gw.domain
		requests[p].Add(1)
		resp, err := client.DescribeInstances(req)
		var e *aliyun.Error
		if errors.As(aliyun.WrapError(err), &e) && quota.IsThrottleCode(e.Code) {
			throttles.Add(1)
		}
		return resp, err
	}

	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, client := range clients {
		p := i % procs // as newFleet routes it
		wg.Go(func() {
			for runCtx.Err() == nil {
				t0 := time.Now()
				var err error
				if m.tollgate {
					_, err = v1sdk.Call(runCtx, &client.Client, f.policies[p], func(context.Context) (*ecs.DescribeInstancesResponse, error) { return describe(client, p) })
				} else {
					_, err = describe(client, p)
				}
				if err != nil && (runCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) { // a refused wait matches it too
					if runCtx.Err() == nil && errors.Is(err, transport.ErrCircuitOpen) {
						cut.Add(1) // the breaker's wait outlasts the run
					}
					return // cut short by the end of the run
				}
				mu.Lock()
				r.latencies = append(r.latencies, time.Since(t0))
				mu.Unlock()
				if err != nil {
					if failed.Add(1) == 1 {
						r.firstErr = err
					}
					if errors.Is(err, transport.ErrCircuitOpen) {
						open.Add(1)
					}
				} else {
					ok.Add(1)
				}
			}
		})
	}
	settledc := make(chan settled, 1)
	stormc := make(chan storm, 1)
	if gw.cloud != nil {
		go func() { settledc <- measureSettled(runCtx, o, gw.cloud, start) }()
		go func() { stormc <- applyFaults(runCtx, o, gw.cloud, start) }()
	}
	progress(runCtx, o, out, r.name, f, gw, start, &ok, &throttles)
	var admitted int64 // by the fake gateway, by the end of the run
	if gw.cloud != nil {
		admitted = gw.cloud.Stats().Total.Admitted
		r.settled = <-settledc
		r.storm = <-stormc
	}
	wg.Wait()

	r.ok, r.failed, r.throttles = ok.Load(), failed.Load(), throttles.Load()
	for i := range requests {
		r.requestsBy = append(r.requestsBy, requests[i].Load())
		r.requests += r.requestsBy[i]
	}
	r.open, r.cut = open.Load(), cut.Load()
	if f != nil {
		r.processes = len(f.transports)
		if w := f.watch; w != nil {
			r.opened, r.probes, r.reopened, r.outages = w.opened.Load(), w.probes.Load(), w.reopened.Load(), w.outages.Load()
		}
		r.redisCalls = f.redisCalls()
	}
	r.calls = r.ok + r.failed
	if gw.cloud != nil {
		r.replays = gw.cloud.Stats().Total.Replays
		r.goodput = float64(admitted) / o.quotaTotal()
	}
	slices.Sort(r.latencies)
	return r, nil
}

// progress prints a line a second until ctx ends: the run's name, elapsed
// time, successes per second, throttles so far, the first process's
// limiter rate (and the breaker's state when it is not closed, and "store
// down" while any process finds its store down) against the quota, and the
// -faults that are on. f is nil for the plain SDK.
func progress(ctx context.Context, o options, out io.Writer, name string, f *fleet, gw *gateway, start time.Time, ok, throttles *atomic.Int64) {
	name = fmt.Sprintf("%-*s", max(9, o.nameWidth()), name)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := int64(0)
	for {
		select {
		case <-ctx.Done():
			if o.progress {
				fmt.Fprintln(out)
			}
			return
		case <-tick.C:
		}
		elapsed := time.Since(start).Round(time.Second)
		n := ok.Load()
		line := fmt.Sprintf("%s %3ds  ok/s %5.1f  throttled %4d", name, int(elapsed.Seconds()), float64(n-last), throttles.Load())
		last = n
		if f != nil {
			line += "  limiter " + limiterRate(f.transports[0])
			if f.storeDown() {
				line += "  store down"
			}
		}
		if gw.cloud != nil {
			line += fmt.Sprintf("  quota %d/s", o.quotaAt(elapsed-time.Second/2))
			if f := o.faulting(elapsed - time.Second/2); f != "" {
				line += "  faults " + f
			}
		}
		if o.progress {
			fmt.Fprintf(out, "\r%-90s", line)
		} else {
			fmt.Fprintln(out, line)
		}
	}
}

// limiterRate describes what the limiter of the tenant tollgate tracks
// does, e.g. "20/1s, 20/s (learned)", or "slow start" and "measuring"
// while the learner finds the quota; followed by its circuit breaker's
// state when that is not closed, e.g. "  breaker open".
func limiterRate(tr *transport.Transport) string {
	s := "slow start"
	tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool {
		snap := l.Snapshot()
		switch {
		case snap.Source == adaptive.SourceLearned && snap.Phase == adaptive.PhaseMeasuring:
			s = fmt.Sprintf("measuring, %d per window", snap.LearnedLimit)
		case snap.Source == adaptive.SourceLearned:
			s = fmt.Sprintf("%d/%v, %.1f/s (learned)", snap.LearnedLimit, snap.LearnedWindow, snap.Rate)
		case snap.Rate > 0:
			s = fmt.Sprintf("%.1f/s (%s)", snap.Rate, snap.Source)
		}
		if snap.Breaker != breaker.StateClosed {
			s += "  breaker " + snap.Breaker.String()
		}
		return false
	})
	return s
}

func (r *result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, int(p*float64(len(r.latencies))))]
}

// printReport prints the runs side by side.
func printReport(out io.Writer, o options, results []*result) {
	target := "the fake gateway"
	if o.endpoint != "" {
		target = o.endpoint
	}
	fmt.Fprintf(out, "\n%d workers for %v against %s", o.workers, o.duration, target)
	if o.endpoint == "" {
		fmt.Fprintf(out, ", DescribeInstances quota %d/s", o.quota)
		if ps := o.phases(); len(ps) > 1 {
			fmt.Fprintf(out, " (%d/s from %v to %v)", ps[1].quota, ps[1].from, ps[1].to)
		}
	}
	fmt.Fprintln(out)
	if len(o.faults) > 0 {
		fs := make([]string, len(o.faults))
		for i, f := range o.faults {
			fs[i] = f.String()
		}
		fmt.Fprintf(out, "faults %s\n", strings.Join(fs, ","))
	}
	if o.endpoint == "" {
		after := "the start and after each change of the quota"
		if !o.step {
			after = "the start"
		}
		defer fmt.Fprintf(out, "\nsettled: from %v after %s, as the fake gateway\ncounted requests (the SDK's retries included); cold-start throttles: those it counted\nin the first %v\n", o.settle, after, o.settle)
	}
	if len(o.faults) > 0 {
		defer fmt.Fprint(out, "\nduring faults: while a fault of -faults was on, as the fake gateway counted requests;\n"+
			"failed: answered 503 or dropped. refused by breaker: failed calls whose last attempt\n"+
			"the breaker refused; cut short: calls it refused that would have tried again only after\n"+
			"the end of the run (their worker stopped). probes (failed): the half-open breaker's\n"+
			"probes, and how many failed, opening it again\n")
	}
	width := max(18, o.nameWidth()+2)
	row := func(label string, f func(*result) string) {
		fmt.Fprintf(out, "  %-22s", label)
		for _, r := range results {
			fmt.Fprintf(out, "%*s", width, f(r))
		}
		fmt.Fprintln(out)
	}
	row("", func(r *result) string { return r.name })
	if o.processes > 1 {
		row("processes", func(r *result) string {
			if r.processes == 0 {
				return "-"
			}
			return fmt.Sprint(r.processes)
		})
	}
	row("calls", func(r *result) string { return fmt.Sprint(r.calls) })
	row("ok", func(r *result) string { return fmt.Sprint(r.ok) })
	row("failed", func(r *result) string { return fmt.Sprint(r.failed) })
	row("throttles received", func(r *result) string {
		return fmt.Sprintf("%d (%.1f%%)", r.throttles, 100*float64(r.throttles)/float64(max(1, r.requests)))
	})
	if o.endpoint == "" {
		row("goodput (of quota)", func(r *result) string { return fmt.Sprintf("%.1f%%", 100*r.goodput) })
		row("settled goodput", func(r *result) string { return fmt.Sprintf("%.1f%%", 100*r.settled.goodput()) })
		row("settled throttled", func(r *result) string { return fmt.Sprintf("%.1f%%", 100*r.settled.throttledShare()) })
		row("cold-start throttles", func(r *result) string { return fmt.Sprint(r.settled.coldStart) })
		row("nonces reused", func(r *result) string { return fmt.Sprint(r.replays) })
	}
	if len(o.faults) > 0 {
		withBreaker := func(f func(*result) string) func(*result) string {
			return func(r *result) string {
				if !r.breaker {
					return "-"
				}
				return f(r)
			}
		}
		row("requests during faults", func(r *result) string { return fmt.Sprint(r.storm.requests) })
		row("  failed", func(r *result) string {
			return fmt.Sprintf("%d (%.1f%%)", r.storm.failed, 100*float64(r.storm.failed)/float64(max(1, r.storm.requests)))
		})
		row("refused by breaker", withBreaker(func(r *result) string { return fmt.Sprint(r.open) }))
		row("  cut short", withBreaker(func(r *result) string { return fmt.Sprint(r.cut) }))
		row("breaker opened", withBreaker(func(r *result) string { return fmt.Sprint(r.opened) }))
		row("probes (failed)", withBreaker(func(r *result) string { return fmt.Sprintf("%d (%d)", r.probes, r.reopened) }))
	}
	if o.redis != "" {
		withStore := func(f func(*result) string) func(*result) string {
			return func(r *result) string {
				if !r.store {
					return "-"
				}
				return f(r)
			}
		}
		row("redis calls/request", withStore(func(r *result) string {
			return fmt.Sprintf("%.2f", float64(r.redisCalls)/float64(max(1, r.requests)))
		}))
		row("store outages", withStore(func(r *result) string { return fmt.Sprint(r.outages) }))
	}
	row("latency p50", func(r *result) string { return r.percentile(0.50).Round(time.Millisecond).String() })
	row("latency p99", func(r *result) string { return r.percentile(0.99).Round(time.Millisecond).String() })
	for _, r := range results {
		if r.firstErr != nil {
			fmt.Fprintf(out, "\nfirst failed call (%s): %v\n", r.name, aliyun.WrapError(r.firstErr))
		}
	}
}
