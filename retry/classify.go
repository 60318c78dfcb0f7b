package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

// Class says what an attempt's outcome calls for.
type Class uint8

// The classes of outcome.
const (
	ClassSuccess   Class = iota // no error; nothing to retry
	ClassThrottle               // refused for quota reasons; retry after the throttle backoff or the hint
	ClassTransient              // failed, a resend is safe and may succeed; retry after the backoff
	ClassPermanent              // retrying cannot help, or a resend might not be safe
	ClassRefused                // not sent: its wait for quota would pass its deadline; retry after the hint (that wait) if there is time
)

// String returns the class's name, e.g. "throttle".
func (c Class) String() string {
	switch c {
	case ClassSuccess:
		return "success"
	case ClassThrottle:
		return "throttle"
	case ClassTransient:
		return "transient"
	case ClassPermanent:
		return "permanent"
	case ClassRefused:
		return "refused"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Retryable reports whether the class calls for another attempt. For
// ClassRefused that is so only if the call's deadline leaves time for the
// hint: Do gives up at once with ErrRefused when it does not.
func (c Class) Retryable() bool {
	return c == ClassThrottle || c == ClassTransient || c == ClassRefused
}

// Outcome is the verdict on one attempt: its class, and the server's hint of
// how long to wait before the next attempt (0 if none). The hint is a floor
// under the backoff; the Policy caps it at MaxHint.
type Outcome struct {
	Class Class
	Hint  time.Duration
}

// ErrorCoder is implemented by errors that carry a cloud API error code, such
// as "Throttling.User" (Alibaba Cloud's *errors.ServerError does).
type ErrorCoder interface {
	ErrorCode() string
}

// StatusCoder is implemented by errors that carry the HTTP status of the
// answer they stand for (Alibaba Cloud's *errors.ServerError does; the method
// is spelled as that SDK spells it).
type StatusCoder interface {
	HttpStatus() int
}

// RetryAfterer is implemented by errors that carry the server's retry hint:
// how long to wait, from when the error was returned, before trying again.
// Glue packages (such as tollgate's aliyun) wrap SDK errors in a type that
// implements it.
type RetryAfterer interface {
	RetryAfter() time.Duration
}

// HeaderCarrier is implemented by errors that carry the headers of the answer
// they stand for. Classify reads the retry hint from them with
// quota.(*Parser).ParseParts.
type HeaderCarrier interface {
	Header() http.Header
}

// Classify classifies an attempt's outcome by the default rules, as the zero
// Policy does; see Policy.Classify.
func Classify(resp *http.Response, err error, now time.Time) Outcome {
	var p Policy
	return p.Classify(resp, err, now)
}

// Classify classifies an attempt's outcome, given either the response it got
// (err nil) or its error. The Policy's Classifier is consulted first. The
// default rules, in order:
//
//   - no error and a status below 400: success;
//   - a *adaptive.WaitError, as transport.Transport returns when a request's
//     wait for quota would pass its deadline (errors.Is(err,
//     context.DeadlineExceeded)): refused, with the wait it needed as the
//     hint. The request was not sent;
//   - a *breaker.OpenError, as transport.Transport returns when the
//     tenant's circuit breaker is open (errors.Is(err,
//     transport.ErrCircuitOpen)): transient, with the time until the
//     breaker lets a request through as the hint. The request was not
//     sent, so a resend is safe; the retry counts against the budget as
//     any other;
//   - context.Canceled, context.DeadlineExceeded, and errors wrapped by
//     Permanent: permanent;
//   - error codes that no retry fixes: permanent. These are
//     SignatureNonceUsed, InvalidTimeStamp.Expired, InvalidAccessKeyId.*,
//     SignatureDoesNotMatch, Forbidden*, InvalidParameter* and
//     MissingParameter*;
//   - throttle codes (Throttling, Throttling.*, Rejected.Throttling,
//     ThrottlingException, TooManyRequests, RequestLimitExceeded) and
//     status 429: throttle, and so is a 403 that the Parser calls a throttle
//     (quota exhausted, or a retry hint);
//   - ServiceUnavailable and status 503: transient (the Parser's
//     ThrottleCodes and TransientCodes count too);
//   - status 500, 502 and 504: transient if a resend is safe (below),
//     else permanent. Other statuses from 400 up: permanent;
//   - an error carrying a retry hint and nothing else: throttle;
//   - network errors: transient if the request was never sent (a dial or DNS
//     error) or a resend is safe, else permanent;
//   - any other error: permanent.
//
// A resend is safe when the Policy says the operation is Idempotent, or when
// the request's method is idempotent (GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE) or it has an Idempotency-Key header. The method is read from the
// response's Request or from a *url.Error's Op.
//
// For a response, Classify uses quota.Parse, which peeks at the body and
// restores it: the body is still unread afterwards. Classify is safe for
// concurrent use.
func (p *Policy) Classify(resp *http.Response, err error, now time.Time) Outcome {
	if p != nil && p.Classifier != nil {
		if o, ok := p.Classifier(resp, err); ok {
			return o
		}
	}
	if err != nil {
		return p.classifyError(err, now)
	}
	if resp == nil {
		return Outcome{Class: ClassSuccess}
	}
	return p.classifyResponse(resp, now)
}

func (p *Policy) classifyResponse(resp *http.Response, now time.Time) Outcome {
	if resp.StatusCode < 400 {
		return Outcome{Class: ClassSuccess}
	}
	obs := p.parser().Parse(resp, now)
	hint := hintOf(&obs, now)
	safe := p.idempotent() || requestIdempotent(resp.Request)
	c := p.classifyCode(obs.Code)
	switch {
	case c != 0: // the code decides
	case obs.Throttled:
		c = ClassThrottle
	default:
		// The parser calls 502 and 504 transient too; they are retried
		// only where a resend is safe, since the request may have been
		// processed.
		c = classifyStatus(resp.StatusCode, safe)
	}
	if !c.Retryable() {
		return Outcome{Class: ClassPermanent}
	}
	return Outcome{Class: c, Hint: hint}
}

func (p *Policy) classifyError(err error, now time.Time) Outcome {
	// Before the context's errors: a refusal is not one of them, and it
	// comes while the context is still alive.
	var we *adaptive.WaitError
	if errors.As(err, &we) {
		return Outcome{Class: ClassRefused, Hint: we.Wait}
	}
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		return Outcome{Class: ClassTransient, Hint: oe.Wait}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Outcome{Class: ClassPermanent}
	}
	var pe *backoff.PermanentError
	if errors.As(err, &pe) {
		return Outcome{Class: ClassPermanent}
	}

	var (
		code   string
		status int
		hint   time.Duration
		ec     ErrorCoder
		sc     StatusCoder
		ra     RetryAfterer
		hc     HeaderCarrier
	)
	if errors.As(err, &ec) {
		code = ec.ErrorCode()
	}
	if errors.As(err, &sc) {
		status = sc.HttpStatus()
	}
	if errors.As(err, &ra) {
		hint = max(hint, ra.RetryAfter())
	}
	if errors.As(err, &hc) {
		if h := hc.Header(); h != nil {
			obs := p.parser().ParseParts(status, h, nil, now)
			hint = max(hint, hintOf(&obs, now))
		}
	}

	var urlErr *url.Error
	hasURLErr := errors.As(err, &urlErr)
	safe := p.idempotent() || (hasURLErr && methodIdempotent(urlErr.Op))

	c := p.classifyCode(code)
	if c == 0 && status != 0 {
		c = classifyStatus(status, safe)
	}
	if c == 0 && hint > 0 {
		c = ClassThrottle
	}
	if c == 0 && isNetworkError(err) {
		if safe || notSent(err) {
			c = ClassTransient
		} else {
			c = ClassPermanent
		}
	}
	if !c.Retryable() {
		return Outcome{Class: ClassPermanent}
	}
	return Outcome{Class: c, Hint: hint}
}

// classifyCode classifies a cloud error code; 0 means the code says nothing.
// Throttle and transient codes are those of quota.IsThrottleCode and
// quota.IsTransientCode, the Parser's extra codes, and a few other clouds'.
func (p *Policy) classifyCode(code string) Class {
	switch {
	case code == "":
		return 0
	case code == "SignatureNonceUsed",
		code == "InvalidTimeStamp.Expired",
		code == "SignatureDoesNotMatch",
		code == "InvalidAccessKeyId",
		strings.HasPrefix(code, "InvalidAccessKeyId."),
		strings.HasPrefix(code, "Forbidden"),
		strings.HasPrefix(code, "InvalidParameter"),
		strings.HasPrefix(code, "MissingParameter"):
		return ClassPermanent
	case quota.IsThrottleCode(code),
		code == "ThrottlingException",
		code == "TooManyRequests",
		code == "RequestLimitExceeded",
		foldIn(code, p.parser().ThrottleCodes):
		return ClassThrottle
	case quota.IsTransientCode(code),
		foldIn(code, p.parser().TransientCodes):
		return ClassTransient
	}
	return 0
}

func foldIn(s string, list []string) bool {
	for _, v := range list {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}

// classifyStatus classifies an HTTP status alone; 0 means below 400.
func classifyStatus(status int, safe bool) Class {
	switch {
	case status < 400:
		return 0
	case status == http.StatusTooManyRequests:
		return ClassThrottle
	case status == http.StatusServiceUnavailable:
		return ClassTransient
	case status == http.StatusInternalServerError,
		status == http.StatusBadGateway,
		status == http.StatusGatewayTimeout:
		if safe {
			return ClassTransient
		}
	}
	return ClassPermanent
}

// hintOf returns how long from now the observation of a failed attempt
// asks to wait, or 0: its retry hint whatever its status (a failure retried
// is what the hint is for, even where the code that makes it a throttle is
// not in o), else what RetryAt says.
func hintOf(o *quota.Observation, now time.Time) time.Duration {
	t := o.RetryAt()
	if o.Has(quota.FieldRetryAfter) {
		t = o.At.Add(o.RetryAfter)
	}
	if t.IsZero() {
		return 0
	}
	return max(0, t.Sub(now))
}

// isNetworkError reports whether err is a failure to reach the server or to
// read its answer, as opposed to a refusal.
func isNetworkError(err error) bool {
	inner := err
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		// *url.Error is itself a net.Error; look at what it wraps.
		inner = urlErr.Err
	}
	var ne net.Error
	if errors.As(inner, &ne) {
		return true
	}
	if errors.Is(inner, io.ErrUnexpectedEOF) {
		return true
	}
	return urlErr != nil && errors.Is(inner, io.EOF)
}

// notSent reports whether err shows that the request never left: it failed
// to resolve or to connect.
func notSent(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

func requestIdempotent(r *http.Request) bool {
	if r == nil {
		return false
	}
	if methodIdempotent(r.Method) {
		return true
	}
	_, ok := r.Header["Idempotency-Key"]
	return ok
}

// methodIdempotent reports whether an HTTP method is idempotent (RFC 9110
// 9.2.2). *url.Error spells methods in title case ("Get"); an empty method
// means GET.
func methodIdempotent(m string) bool {
	switch strings.ToUpper(m) {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}
