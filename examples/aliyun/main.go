// Command aliyun shows tollgate keeping a real Alibaba Cloud SDK client
// inside its quota.
//
// With no flags it starts the fake gateway (internal/fakecloud) on
// loopback with a quota of 40 DescribeInstances per second that steps down to
// 20/s and back up during the run, then drives a v1 SDK ECS client through
// tollgate with 16 workers for 15 s, printing a progress line each second and
// a report at the end:
//
//	go run ./examples/aliyun
//	go run ./examples/aliyun -compare          # the plain SDK first, side by side
//	go run ./examples/aliyun -headers alibaba  # the fake sends rate-limit headers
//
// tollgate's run has a per-tenant circuit breaker (transport.Config.Breaker,
// at its defaults) unless -breaker=false. -faults makes the fake gateway
// fail for a part of each run: a comma-separated list of KIND=RATE@FROM-TO,
// KIND 503 (ServiceUnavailable before admission) or drop (the connection
// closed mid-answer), RATE from 0 to 1, FROM and TO offsets into the run
// (TO left out: to the end). The report then counts the requests the fake
// gateway saw while a fault was on, and what the breaker did. With
// -compare and -faults, three runs go side by side: the plain SDK, tollgate
// without the breaker and tollgate with it (-breaker=false leaves the last
// out):
//
//	go run ./examples/aliyun -faults 503=0.8@5s-10s -compare
//
// -processes N builds N Transports, as N processes of a fleet would, each
// with its own Config and retry budget, the workers split among them
// round-robin; they share a Salt (random per run), so they agree on the
// tenant. -redis ADDR gives each its own redisquota.Store on the Redis at
// ADDR, under keys unique to the run, so that they spend the quota as
// one; Redis must answer a PING within a second. The store shares only a
// pace every process derives alike: with the gateway's rate-limit headers
// (-headers), not one learned from throttles. With -compare and -redis
// the processes run without the store and then with it, and the report
// adds the Redis calls per request and the store's outages. -step=false
// holds the quota at -quota for the whole run, and -settle sets how long
// after the start and after each change of the quota a run is given
// before its settled figures count (2s by default); the report counts the
// throttles before then as the cold start:
//
//	go run ./examples/aliyun -processes 4 -workers 32 -quota 50 -step=false -duration 20s -settle 3s -redis 127.0.0.1:6379 -compare
//
// With -endpoint it runs against a real account instead, with credentials
// from ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET:
//
//	go run ./examples/aliyun -endpoint ecs.cn-hangzhou.aliyuncs.com -region cn-hangzhou
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/metrics"
)

func main() {
	redis.SetLogger(quietRedis{}) // see quietRedis
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "aliyun:", err)
		os.Exit(1)
	}
}

// run parses the flags and runs the demo, writing to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("aliyun", flag.ContinueOnError)
	fs.SetOutput(out)
	var o options
	fs.DurationVar(&o.duration, "duration", 15*time.Second, "how long each run lasts")
	fs.IntVar(&o.workers, "workers", 16, "concurrent callers")
	fs.IntVar(&o.processes, "processes", 1, "tollgate's Transports, each built as a process of its own would build it, the workers split among them round-robin")
	fs.IntVar(&o.quota, "quota", defaultQuota, "the fake gateway's DescribeInstances quota per second")
	fs.BoolVar(&o.step, "step", true, "step the fake gateway's quota to half for the middle third of each run (false: -quota throughout)")
	fs.DurationVar(&o.settle, "settle", defaultSettle, "how long after the start and after each change of the quota a run is given before its settled figures count")
	headers := fs.String("headers", "none", "rate-limit headers the fake gateway sends: none, alibaba, retry-after, x-ratelimit, ietf, ietf-structured, all")
	fs.BoolVar(&o.compare, "compare", false, "run the plain SDK (no tollgate) first, then tollgate, and compare (with -faults: tollgate without and with the breaker; with -redis: tollgate without and with the store, no plain SDK)")
	fs.StringVar(&o.redis, "redis", "", "share the quota among the processes through a redisquota.Store on the Redis at this address, e.g. 127.0.0.1:6379 (default: no store)")
	fs.BoolVar(&o.breaker, "breaker", true, "give tollgate a circuit breaker per tenant (transport.Config.Breaker)")
	faults := fs.String("faults", "", "faults of the fake gateway in each run, as KIND=RATE@FROM-TO,... with KIND 503 or drop, e.g. 503=0.8@5s-10s (no TO: to the end)")
	fs.StringVar(&o.endpoint, "endpoint", "", "a real ECS endpoint, e.g. ecs.cn-hangzhou.aliyuncs.com (default: the fake gateway)")
	fs.StringVar(&o.region, "region", "cn-hangzhou", "the region to call")
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at this address while running, e.g. 127.0.0.1:9090")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	mode, err := fakecloud.ParseHeaderMode(*headers)
	if err != nil {
		return err
	}
	o.headers = mode
	if o.workers < 1 || o.duration <= 0 || o.quota < 2 {
		return fmt.Errorf("need -workers ≥ 1, -duration > 0 and -quota ≥ 2")
	}
	if o.processes < 1 || o.processes > o.workers {
		return fmt.Errorf("-processes %d: want 1 to -workers (%d), as each process needs a worker", o.processes, o.workers)
	}
	if o.settle < 0 {
		return fmt.Errorf("-settle %v: want a duration ≥ 0", o.settle)
	}
	if o.faults, err = parseFaults(*faults); err != nil {
		return err
	}
	for _, f := range o.faults {
		if f.from >= o.duration {
			return fmt.Errorf("-faults %v: FROM is not within -duration %v", f, o.duration)
		}
	}
	if len(o.faults) > 0 && o.endpoint != "" {
		return fmt.Errorf("-faults needs the fake gateway: it cannot go with -endpoint")
	}
	if o.endpoint != "" {
		o.akid = os.Getenv("ALIBABA_CLOUD_ACCESS_KEY_ID")
		o.secret = os.Getenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
		if o.akid == "" || o.secret == "" {
			return fmt.Errorf("-endpoint needs ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET")
		}
	}
	if o.redis != "" {
		if err := pingRedis(ctx, o.redis); err != nil {
			return err
		}
	}
	o.progress = isTerminal(out)
	if o.metrics != "" {
		stop, err := serveMetrics(&o, out)
		if err != nil {
			return err
		}
		defer stop()
	}
	return demo(ctx, o, out)
}

// serveMetrics serves tollgate's Prometheus metrics at o.metrics while the
// demo runs, and returns a function that stops serving.
func serveMetrics(o *options, out io.Writer) (stop func(), err error) {
	o.observer = metrics.New(metrics.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(o.observer)
	l, err := net.Listen("tcp", o.metrics)
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	fmt.Fprintf(out, "metrics at http://%s/metrics\n", l.Addr())
	return func() { srv.Close() }, nil
}

// isTerminal reports whether w is a terminal, where the progress line
// redraws itself in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
