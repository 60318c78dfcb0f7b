package breaker

import (
	"context"
	"errors"

	"github.com/tollgate-go/tollgate/quota"
)

// Outcome is what a request's answer says of the service's health.
type Outcome uint8

// The outcomes of a request.
const (
	Success Outcome = iota // the service answered, with anything but a failure or a throttle
	Failure                // a 5xx answer, a transient error code, or no answer
	Ignored                // says nothing of the service's health: a throttle, or a caller that gave up
)

// String returns the outcome's name, e.g. "failure".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "Outcome(?)"
}

// Judge returns the outcome of an answer as the quota parser read it. A
// throttle is quota, the limiter's business, and never a failure, whatever
// its status (Alibaba Cloud throttles with 400, 429 and 503 alike). A
// transient answer (ServiceUnavailable, 502, 503, 504, the Parser's
// TransientCodes) and any other 5xx are failures; the rest, 4xx included,
// are successes: the service answered.
func Judge(o quota.Observation) Outcome {
	switch {
	case o.Throttled:
		return Ignored
	case o.Transient, o.Status >= 500:
		return Failure
	}
	return Success
}

// JudgeError returns the outcome of a request that got no answer, given the
// error of the RoundTripper it was sent through and the request's context.
// A request whose context was cancelled is ignored: its caller gave up, the
// service may be fine. Any other error is a failure, a context deadline
// included: the service did not answer in time.
func JudgeError(ctx context.Context, err error) Outcome {
	if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
		return Ignored
	}
	return Failure
}
