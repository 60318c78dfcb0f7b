package retry

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/tollgate-go/tollgate/quota"
)

// Adapters for github.com/hashicorp/go-retryablehttp. They are safe only for
// requests that are not signed per attempt: retryablehttp resends the same
// request, which a signed cloud API (Alibaba Cloud's, with its one-time
// signature nonce) refuses. For SDK calls use Do.
var (
	_ retryablehttp.CheckRetry = (*Policy)(nil).CheckRetry
	_ retryablehttp.Backoff    = (*Policy)(nil).Backoff
)

// CheckRetry is a retryablehttp.CheckRetry: set client.CheckRetry =
// p.CheckRetry. It retries what Classify calls a throttle or a transient
// failure, Alibaba Cloud's 400 throttles (Throttling.User, …) included, and
// leaves the response body unread.
//
// It stops with an error, which retryablehttp returns wrapped (%w) in its own,
// when ctx is done (ctx.Err()), when the server's retry hint, capped at
// MaxHint, would end at or past ctx's deadline (context.DeadlineExceeded), when the
// Transport refused to send the request (ClassRefused: ErrRefused, wrapping
// the refusal; Backoff cannot see the wait it needed, so it is not
// retried), and when the tenant's budget has no retry left
// (ErrBudgetExhausted). It stops without an error, handing back the
// response or error as it is, on permanent failures. MaxAttempts and MaxElapsed do not apply: retryablehttp's RetryMax
// counts attempts. Each attempt counts as a call in the budget, so the share
// of retries is a little above the Ratio of logical calls (at most Ratio/(1-Ratio)).
//
// Only use it for requests that are not signed per attempt.
func (p *Policy) CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if cerr := ctx.Err(); cerr != nil {
		return false, cerr
	}
	now := time.Now()
	key, _ := quota.KeyFrom(ctx)
	b := p.budget()
	if b != nil {
		b.Deposit(key, now)
	}
	o := p.Classify(resp, err, now)
	if o.Class == ClassRefused {
		return false, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if !o.Class.Retryable() {
		return false, nil
	}
	if hint := min(o.Hint, p.maxHint()); hint > 0 {
		if dl, ok := ctx.Deadline(); ok && !now.Add(hint).Before(dl) {
			return false, fmt.Errorf("retry: the server asked to wait %v, past the deadline: %w", hint, context.DeadlineExceeded)
		}
	}
	if b != nil && !b.Withdraw(key, now) {
		return false, ErrBudgetExhausted
	}
	return true, nil
}

// Backoff is a retryablehttp.Backoff: set client.Backoff = p.Backoff. It
// returns p.Delay for retry attemptNum+1: full-jitter exponential backoff
// with the server's retry hint (from the response headers) as a floor, the
// hint capped at MaxHint, where retryablehttp's own DefaultBackoff sleeps an
// uncapped Retry-After. The min and max that retryablehttp passes
// (RetryWaitMin, RetryWaitMax) are ignored: p's delays apply.
//
// retryablehttp drains the body before calling Backoff, so Backoff reads the
// headers only; a retried status from 400 to 499 other than 408 is taken for
// a throttle, since CheckRetry retries those only when they are.
//
// Only use it for requests that are not signed per attempt.
func (p *Policy) Backoff(_, _ time.Duration, attemptNum int, resp *http.Response) time.Duration {
	o := Outcome{Class: ClassTransient}
	if resp != nil {
		now := time.Now()
		obs := p.parser().ParseParts(resp.StatusCode, resp.Header, nil, now)
		if obs.Throttled || (resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout) {
			o.Class = ClassThrottle
		}
		o.Hint = hintOf(&obs, now)
	}
	return p.Delay(o, attemptNum+1)
}
