// Package retry decides whether, when and how often to try a failed cloud API
// call again, so that a retrying client stays inside its server's quota.
//
// Do and DoValue call an operation again until it succeeds, fails
// permanently, or runs out of attempts, elapsed time, context or retry
// budget. The wait before each retry is an exponential backoff with full
// jitter (1 s base for throttles, 100 ms for other transient failures, at most
// 20 s), with the server's own retry hint (Retry-After, x-acs-retry-after,
// Alibaba's TimeLeft, a reset time) as a floor under it. A hint is capped
// (1 min by default) and never a reason to sleep past the policy's elapsed
// limit or the context's deadline: when it would, Do gives up at once.
//
// An attempt that transport.Transport did not send, because its wait for
// quota would pass the deadline (an *adaptive.WaitError), is a refusal
// (ClassRefused), not a failure: Do gives up at once with ErrRefused unless
// the context leaves time for that wait (op set a shorter deadline of its
// own), in which case it retries after it. The caller should then give the
// call a longer deadline, or call again no sooner than GiveUpError.Wait.
//
// An attempt that the Transport's limiter sent as its tenant's probe, a
// test of whether the quota refilled that it expected the server might
// throttle, is the limiter's cost, not the call's: a throttle of one is
// backed off, and spends the retry budget, as any other, but is not
// counted among MaxAttempts. Where a window is long and the callers few,
// the probes of a cold start's search for the refill would otherwise use
// up their attempts between them.
//
// The operation given to Do must make a new request each time it is called,
// for example by calling the SDK operation again, which signs the request
// afresh. Never retry a signed API call by resending the same *http.Request:
// Alibaba Cloud refuses a reused signature nonce (SignatureNonceUsed), and
// other clouds reject stale timestamps.
//
// Classify tells throttles, transient failures, refusals and permanent
// failures apart, from an *http.Response (through quota.Parse, which reads
// the body's error code and hands the body back intact) or from an error.
// Errors are read through small interfaces (ErrorCoder, StatusCoder,
// RetryAfterer, HeaderCarrier), so SDK errors such as Alibaba Cloud's
// *errors.ServerError are understood without this package importing any
// SDK.
//
// A Budget caps retries per tenant (quota.KeyFrom) at a share of the calls
// made, so that a failing service sees little extra load.
//
// Policy.Observer and Policy.Logger report what Do decides: each retry
// (tenant, attempt, wait, class, error) and each give-up (reason, attempts,
// elapsed). Package github.com/tollgate-go/tollgate/metrics turns them into
// Prometheus counters; the Logger writes a Debug record per retry and a Warn
// record per give-up, with URL queries and credential values removed from
// error texts. Both cost nothing when nil.
//
// Policy.CheckRetry and Policy.Backoff adapt a Policy to
// github.com/hashicorp/go-retryablehttp, for plain HTTP requests that are not
// signed per attempt.
package retry
