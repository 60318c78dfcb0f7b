package retry

import (
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tollgate-go/tollgate/internal/redact"
)

// Reasons for giving up. A *GiveUpError carries one of them, or the context's
// error, as its Reason; errors.Is finds it through the *GiveUpError.
var (
	// ErrPermanent: the last attempt failed in a way that retrying cannot fix.
	ErrPermanent = errors.New("retry: permanent failure")
	// ErrAttemptsExhausted: the policy's MaxAttempts were made.
	ErrAttemptsExhausted = errors.New("retry: attempts exhausted")
	// ErrElapsedExhausted: the next wait would end past the policy's MaxElapsed.
	ErrElapsedExhausted = errors.New("retry: elapsed time limit reached")
	// ErrBudgetExhausted: the tenant's retry budget has no retry left.
	ErrBudgetExhausted = errors.New("retry: retry budget exhausted")
	// ErrRefused: the last attempt was not sent, because its wait for quota
	// (a *adaptive.WaitError, as transport.Transport returns) would have
	// passed its deadline, and the call's context has no time for that
	// wait either. Unlike a give-up for the deadline, the server never saw
	// the attempt: the deadline is short for the tenant's quota. Call
	// again with a longer deadline, or after GiveUpError.Wait. The
	// *GiveUpError matches context.DeadlineExceeded too, through the
	// refusal.
	ErrRefused = errors.New("retry: not sent: the wait for quota would pass the deadline")
)

// GiveUpError is returned by Do and DoValue when they stop without success.
// errors.Is and errors.As see through it to both Reason and Last, so
// errors.Is(err, ErrBudgetExhausted), errors.Is(err, context.Canceled) and
// errors.As(err, &sdkErr) all work on what Do returns.
type GiveUpError struct {
	Attempts int           // attempts made (calls of the operation)
	Elapsed  time.Duration // from the first attempt to giving up
	// Wait is the wait that was refused, when Reason is ErrElapsedExhausted
	// or context.DeadlineExceeded: how long the next attempt would have had to wait; or,
	// when Reason is ErrRefused, the wait for quota the last attempt needed.
	Wait time.Duration
	Last error // the last attempt's error; nil if no attempt was made
	// Reason is one of the Err* sentinels above, or a context error:
	// context.DeadlineExceeded when the deadline passed, or when the next
	// wait would end at or past it (Do does not begin a wait it cannot
	// finish), and context.Canceled.
	Reason error
}

// Error describes the reason and the last attempt's error, with URL queries
// and the values of AccessKeyId, Signature, SecurityToken and other
// credentials replaced by "REDACTED": the last error is often net/http's
// *url.Error, which quotes the whole signed URL. Unwrap still returns the
// errors themselves, whose texts are not redacted.
func (e *GiveUpError) Error() string {
	s := fmt.Sprintf("%v after %d attempt(s) in %v", e.Reason, e.Attempts, e.Elapsed)
	if e.Wait > 0 {
		s += fmt.Sprintf(" (next wait %v)", e.Wait)
	}
	if e.Last != nil {
		s += ": " + e.Last.Error()
	}
	return redact.String(s)
}

// Unwrap returns the last attempt's error and the reason.
func (e *GiveUpError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Last != nil {
		errs = append(errs, e.Last)
	}
	if e.Reason != nil {
		errs = append(errs, e.Reason)
	}
	return errs
}

// Permanent wraps err so that Do stops retrying and returns it (as the Last
// error of a *GiveUpError with Reason ErrPermanent). It returns nil for a nil
// err. The wrapper is backoff/v4's *backoff.PermanentError, so an operation
// may equally return backoff.Permanent(err).
func Permanent(err error) error {
	return backoff.Permanent(err)
}

// unwrapPermanent strips a *backoff.PermanentError found at the top of err.
func unwrapPermanent(err error) error {
	var pe *backoff.PermanentError
	if errors.As(err, &pe) && pe == err {
		return pe.Err
	}
	return err
}
