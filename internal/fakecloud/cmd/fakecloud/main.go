// Command fakecloud serves the fake Alibaba Cloud OpenAPI gateway of
// package fakecloud until interrupted.
//
//	go run ./internal/fakecloud/cmd/fakecloud -listen 127.0.0.1:8080 -quota DescribeInstances=20/1s
//
// -quota is repeatable: "[account/]API=LIMIT/WINDOW[:POLICY][,burst=N][,unseen=N][,align=first][,offset=D]",
// API "*" being the account total, POLICY fixed, sliding, bucket or
// concurrency. It prints its URL, then serves; GET
// /_fakecloud/stats returns the counters and PUT
// /_fakecloud/quota?api=DescribeInstances&limit=10&window=1s changes a
// quota live. SIGINT or SIGTERM shut it down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "fakecloud:", err)
		os.Exit(1)
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// run parses args, listens, prints the URL to stdout and serves until ctx
// is done.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fakecloud", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var quotas, accounts listFlag
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on (port 0 picks one)")
	fs.Var(&quotas, "quota", "quota `[account/]API=LIMIT/WINDOW[:POLICY][,burst=N][,unseen=N][,align=first][,offset=D]`, API * is the account total (repeatable)")
	fs.Var(&accounts, "account", "`AccessKeyId=account` ownership (repeatable; by default a key is its own account)")
	policy := fs.String("policy", "fixed", "policy of quotas that name none: fixed, sliding, bucket or concurrency")
	headers := fs.String("headers", "none", "rate-limit header families: none, alibaba, retry-after, x-ratelimit, ietf, ietf-structured, all (comma-separated)")
	always := fs.Bool("headers-always", false, "send rate-limit headers on every answer, not only on throttles")
	retryDate := fs.Bool("retry-after-date", false, "send Retry-After as an HTTP-date")
	status := fs.Int("throttle-status", 400, "HTTP status of throttle answers (400, 429, 503)")
	code := fs.String("throttle-code", "Throttling.User", "Code of throttle answers (Throttling.User, Throttling.Api, Throttling)")
	latency := fs.Duration("latency", 0, "added latency when injected")
	jitter := fs.Duration("latency-jitter", 0, "uniform jitter added to -latency")
	latencyRate := fs.Float64("latency-rate", 0, "probability of added latency")
	unavailRate := fs.Float64("unavailable-rate", 0, "probability of a 503 ServiceUnavailable answer")
	dropRate := fs.Float64("drop-rate", 0, "probability of closing the connection mid-response")
	malformedRate := fs.Float64("malformed-rate", 0, "probability of malformed rate-limit headers")
	slowRate := fs.Float64("slow-body-rate", 0, "probability of a slow, chunked body")
	shedRate := fs.Float64("shed-rate", 0, "probability of answering an admitted request as a throttle (load shedding)")
	shedEvery := fs.Int("shed-every", 0, "answer every Nth admitted request as a throttle (0: none)")
	shedRetry := fs.Duration("shed-retry-after", 0, "Retry-After on shed answers (0: none)")
	seed := fs.Uint64("seed", 1, "seed of the fault random source")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	cfg := fakecloud.Config{
		ThrottleStatus:       *status,
		ThrottleCode:         *code,
		HeadersOnEveryAnswer: *always,
		RetryAfterDate:       *retryDate,
		Seed:                 *seed,
		Accounts:             map[string]string{},
		Faults: fakecloud.Faults{
			LatencyRate: *latencyRate, Latency: *latency, LatencyJitter: *jitter,
			UnavailableRate:      *unavailRate,
			DropRate:             *dropRate,
			MalformedHeadersRate: *malformedRate,
			SlowBodyRate:         *slowRate,
			ShedRate:             *shedRate,
			ShedEvery:            *shedEvery,
			ShedRetryAfter:       *shedRetry,
		},
	}
	defPolicy, err := fakecloud.ParsePolicy(*policy)
	if err != nil {
		return err
	}
	if cfg.Headers, err = fakecloud.ParseHeaderMode(*headers); err != nil {
		return err
	}
	for _, s := range quotas {
		q, err := fakecloud.ParseQuota(s)
		if err != nil {
			return err
		}
		if _, rest, _ := strings.Cut(s, "="); !strings.Contains(rest, ":") {
			q.Policy = defPolicy
		}
		cfg.Quotas = append(cfg.Quotas, q)
	}
	for _, s := range accounts {
		ak, acct, ok := strings.Cut(s, "=")
		if !ok || ak == "" || acct == "" {
			return fmt.Errorf("-account %q: want AccessKeyId=account", s)
		}
		cfg.Accounts[ak] = acct
	}

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	c := fakecloud.New(cfg)
	fmt.Fprintf(stdout, "fakecloud listening on http://%s\n", l.Addr())
	for _, q := range c.Quotas() {
		fmt.Fprintf(stdout, "  quota %s\n", q)
	}
	start := time.Now()
	err = c.Serve(ctx, l)
	st := c.Stats().Total
	fmt.Fprintf(stdout, "fakecloud stopped after %s: %d requests, %d admitted, %d throttled\n",
		time.Since(start).Round(time.Millisecond), st.Requests, st.Admitted, st.Throttled)
	return err
}
