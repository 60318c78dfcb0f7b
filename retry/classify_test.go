package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

func TestClassifyErrors(t *testing.T) {
	dialErr := &url.Error{Op: "Post", URL: "https://ecs.aliyuncs.com/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	dnsErr := &url.Error{Op: "Post", URL: "https://ecs.aliyuncs.com/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "ecs.aliyuncs.com", IsNotFound: true}}}
	reset := func(op string) error {
		return &url.Error{Op: op, URL: "https://ecs.aliyuncs.com/", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	}
	eof := func(op string) error {
		return &url.Error{Op: op, URL: "https://ecs.aliyuncs.com/", Err: io.ErrUnexpectedEOF}
	}
	tests := []struct {
		name string
		p    *Policy
		err  error
		want Outcome
	}{
		{"Throttling.User 400", nil, errThrottle, Outcome{Class: ClassThrottle}},
		{"Throttling", nil, &sdkError{"Throttling", 400}, Outcome{Class: ClassThrottle}},
		{"ThrottlingException", nil, &sdkError{"ThrottlingException", 400}, Outcome{Class: ClassThrottle}},
		{"header hint", nil, &headerError{errThrottle, http.Header{"X-Acs-Retry-After": {"2500"}}}, Outcome{Class: ClassThrottle, Hint: 2500 * time.Millisecond}},
		{"Throttling.Api", nil, &sdkError{"Throttling.Api", 400}, Outcome{Class: ClassThrottle}},
		{"Rejected.Throttling", nil, &sdkError{"Rejected.Throttling", 400}, Outcome{Class: ClassThrottle}},
		{"wrapped throttle", nil, fmt.Errorf("describe: %w", errThrottle), Outcome{Class: ClassThrottle}},
		{"429 no code", nil, &sdkError{"", 429}, Outcome{Class: ClassThrottle}},
		{"ServiceUnavailable", nil, errTransient, Outcome{Class: ClassTransient}},
		{"503 no code", nil, &sdkError{"", 503}, Outcome{Class: ClassTransient}},
		{"500 unknown", nil, &sdkError{"InternalError", 500}, Outcome{Class: ClassPermanent}},
		{"500 idempotent", &Policy{Idempotent: true}, &sdkError{"InternalError", 500}, Outcome{Class: ClassTransient}},
		{"SignatureNonceUsed", nil, &sdkError{"SignatureNonceUsed", 400}, Outcome{Class: ClassPermanent}},
		{"hint", nil, &hintError{errThrottle, 2 * time.Second}, Outcome{Class: ClassThrottle, Hint: 2 * time.Second}},
		{"hint alone", nil, &hintError{errors.New("x"), time.Second}, Outcome{Class: ClassThrottle, Hint: time.Second}},
		{"hint on permanent dropped", nil, &hintError{&sdkError{"Forbidden", 403}, time.Second}, Outcome{Class: ClassPermanent}},
		{"canceled", nil, fmt.Errorf("op: %w", context.Canceled), Outcome{Class: ClassPermanent}},
		{"deadline", &Policy{Idempotent: true}, context.DeadlineExceeded, Outcome{Class: ClassPermanent}},
		{"Permanent", nil, Permanent(errTransient), Outcome{Class: ClassPermanent}},
		{"plain", nil, errors.New("x"), Outcome{Class: ClassPermanent}},
		{"dial error POST", nil, dialErr, Outcome{Class: ClassTransient}},
		{"circuit open POST", nil, &url.Error{Op: "Post", URL: "https://ecs.aliyuncs.com/", Err: &breaker.OpenError{Wait: 3 * time.Second}}, Outcome{Class: ClassTransient, Hint: 3 * time.Second}},
		{"circuit probing", nil, fmt.Errorf("describe: %w", &breaker.OpenError{Wait: time.Second, Probing: true}), Outcome{Class: ClassTransient, Hint: time.Second}},
		{"dns error POST", nil, dnsErr, Outcome{Class: ClassTransient}},
		{"reset POST", nil, reset("Post"), Outcome{Class: ClassPermanent}},
		{"reset GET", nil, reset("Get"), Outcome{Class: ClassTransient}},
		{"reset PUT", nil, reset("Put"), Outcome{Class: ClassTransient}},
		{"reset POST idempotent", &Policy{Idempotent: true}, reset("Post"), Outcome{Class: ClassTransient}},
		{"unexpected EOF POST", nil, eof("Post"), Outcome{Class: ClassPermanent}},
		{"unexpected EOF GET", nil, eof("Get"), Outcome{Class: ClassTransient}},
		{"url.Error not network", nil, &url.Error{Op: "Get", URL: "x", Err: errors.New("unsupported protocol scheme")}, Outcome{Class: ClassPermanent}},
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Classify(nil, tt.err, now); got != tt.want {
				t.Errorf("Classify(%v) = %+v, want %+v", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyResponses(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		p      *Policy
		resp   *http.Response
		want   Outcome
		parser bool // needs the full quota parser
	}{
		{"200", nil, newResponse("POST", 200, nil, `{}`), Outcome{Class: ClassSuccess}, false},
		{"nil", nil, nil, Outcome{Class: ClassSuccess}, false},
		{"429", nil, newResponse("POST", 429, nil, ""), Outcome{Class: ClassThrottle}, false},
		{"503", nil, newResponse("POST", 503, nil, ""), Outcome{Class: ClassTransient}, false},
		{"500 GET", nil, newResponse("GET", 500, nil, ""), Outcome{Class: ClassTransient}, false},
		{"500 POST", nil, newResponse("POST", 500, nil, ""), Outcome{Class: ClassPermanent}, false},
		{"500 POST idempotent policy", &Policy{Idempotent: true}, newResponse("POST", 500, nil, ""), Outcome{Class: ClassTransient}, false},
		{"502 POST Idempotency-Key", nil, func() *http.Response {
			r := newResponse("POST", 502, nil, "")
			r.Request.Header.Set("Idempotency-Key", "k1")
			return r
		}(), Outcome{Class: ClassTransient}, false},
		{"502 POST", nil, newResponse("POST", 502, nil, ""), Outcome{Class: ClassPermanent}, false},
		{"504 GET", nil, newResponse("GET", 504, nil, ""), Outcome{Class: ClassTransient}, false},
		{"503 POST ServiceUnavailable", nil, newResponse("POST", 503, nil, `{"Code":"ServiceUnavailable"}`), Outcome{Class: ClassTransient}, false},
		{"403 Forbidden.RAM", nil, newResponse("POST", 403, nil, `{"Code":"Forbidden.RAM"}`), Outcome{Class: ClassPermanent}, false},
		{"400 extra throttle code", &Policy{Parser: &quota.Parser{ThrottleCodes: []string{"Quota.Exceeded"}}}, newResponse("POST", 400, nil, `{"Code":"Quota.Exceeded"}`), Outcome{Class: ClassThrottle}, true},
		{"400 ThrottlingException", nil, newResponse("POST", 400, nil, `{"Code":"ThrottlingException"}`), Outcome{Class: ClassThrottle}, true},
		{"403 Retry-After", nil, newResponse("GET", 403, http.Header{"Retry-After": {"9"}}, ""), Outcome{Class: ClassThrottle, Hint: 9 * time.Second}, true},
		{"403 plain", nil, newResponse("GET", 403, nil, ""), Outcome{Class: ClassPermanent}, false},
		{"400 no code", nil, newResponse("POST", 400, nil, ""), Outcome{Class: ClassPermanent}, false},
		{"400 Throttling.User", nil, newResponse("POST", 400, nil, throttleBody), Outcome{Class: ClassThrottle}, true},
		{"400 SignatureNonceUsed", nil, newResponse("POST", 400, nil, `{"Code":"SignatureNonceUsed","Message":"nonce used"}`), Outcome{Class: ClassPermanent}, false},
		{"429 Retry-After 7", nil, newResponse("GET", 429, http.Header{"Retry-After": {"7"}}, ""), Outcome{Class: ClassThrottle, Hint: 7 * time.Second}, true},
		{"400 x-acs-retry-after", nil, newResponse("POST", 400, http.Header{"X-Acs-Retry-After": {"1500"}}, throttleBody), Outcome{Class: ClassThrottle, Hint: 1500 * time.Millisecond}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.parser {
				needParser(t)
			}
			var body string
			if tt.resp != nil {
				b, _ := io.ReadAll(tt.resp.Body)
				body = string(b)
				tt.resp.Body = io.NopCloser(bytes.NewReader(b))
			}
			if got := tt.p.Classify(tt.resp, nil, now); got != tt.want {
				t.Errorf("Classify = %+v, want %+v", got, tt.want)
			}
			if tt.resp != nil {
				b, err := io.ReadAll(tt.resp.Body)
				if err != nil || string(b) != body {
					t.Errorf("body after Classify = %q, %v; want %q intact", b, err, body)
				}
			}
		})
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{ClassSuccess: "success", ClassThrottle: "throttle", ClassTransient: "transient", ClassPermanent: "permanent", 9: "Class(9)"} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q, want %q", c, got, want)
		}
	}
}

// TestDoWaitsOutOpenBreaker: Do retries an open breaker's refusal no sooner
// than its Wait, and the retry draws on the budget: with none left, it
// gives up.
func TestDoWaitsOutOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := &url.Error{Op: "Post", URL: "https://ecs.aliyuncs.com/", Err: &breaker.OpenError{Wait: 3 * time.Second}}
		var at []time.Duration
		start := time.Now()
		err := Do(t.Context(), &Policy{NoBudget: true}, func(context.Context) error {
			at = append(at, time.Since(start))
			if len(at) < 3 {
				return open
			}
			return nil
		})
		if err != nil || len(at) != 3 || at[1] < 3*time.Second || at[2]-at[1] < 3*time.Second {
			t.Fatalf("Do = %v after attempts at %v; want success, each retry ≥ 3s after the last", err, at)
		}

		none := NewBudget(BudgetConfig{Ratio: -1, MinPerSecond: -1})
		err = Do(t.Context(), &Policy{Budget: none}, func(context.Context) error { return open })
		if !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("Do with no budget = %v, want ErrBudgetExhausted holding the refusal", err)
		}
	})
}
