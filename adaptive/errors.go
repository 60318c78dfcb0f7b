package adaptive

import (
	"context"
	"fmt"
	"time"
)

// WaitError is the error Wait returns when admission would come after the
// context's deadline: Wait fails at once rather than sleep for nothing. It
// says how long the wait would have been, and why. It matches
// context.DeadlineExceeded (errors.Is), the one deadline error of tollgate:
// the caller's deadline is too short for the quota, whether it has passed
// yet or not.
type WaitError struct {
	Wait   time.Duration // how long the wait would have been (a lower bound when Reason is "pause")
	Left   time.Duration // how long there was until the deadline
	Reason string        // what held the request back: "rate", "window", "pause" or "round trip"
}

// Error says how long the wait would have been, and why. Its text holds
// durations and one of the fixed reasons only, nothing of the request, so
// unlike the errors that quote a URL it needs no redacting.
func (e *WaitError) Error() string {
	if e.Reason == reasonRoundTrip {
		return fmt.Sprintf("adaptive: %v left before the context deadline, less than a round trip (%v): the answer would come too late",
			e.Left.Round(time.Microsecond), e.Wait.Round(time.Microsecond))
	}
	return fmt.Sprintf("adaptive: would wait %v for the %s limit, past the context deadline (%v left)",
		e.Wait.Round(time.Microsecond), e.Reason, e.Left.Round(time.Microsecond))
}

// Is reports whether target is context.DeadlineExceeded.
func (e *WaitError) Is(target error) bool { return target == context.DeadlineExceeded }
