package transport_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// The credentials of the scan's signed requests.
const (
	scanAKID      = "LTAI5tSCANSECRETKEYID"
	scanSignature = "U0NBTlNJR05BVFVSRQ%3D%3D"
	scanToken     = "CAISscanSECURITYtoken"
)

var scanSecrets = []string{scanAKID, scanSignature, scanToken}

// resetEvery fails every nth request sent through it as a broken
// connection would, and passes the others to next.
type resetEvery struct {
	next http.RoundTripper
	n    int64
	sent atomic.Int64
}

func (r *resetEvery) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.sent.Add(1)%r.n == 0 {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return r.next.RoundTrip(req)
}

// statusError is an answer of status 400 or more, as a caller of
// http.Client would turn it into an error for retry.Do.
type statusError int

func (e statusError) Error() string   { return "status " + strconv.Itoa(int(e)) }
func (e statusError) HttpStatus() int { return int(e) }

// TestErrorsRedacted runs calls through retry.Do, http.Client and a
// Transport against the fake gateway with broken connections, 503s, dropped
// answers and refusals (a wait past the deadline), and checks that no text
// an error type of tollgate prints, nor any log record of the Transport or
// of retry, holds the AccessKeyId, Signature or SecurityToken. net/http's
// *url.Error quotes them, and tollgate cannot change that; what wraps it
// must not repeat them.
func TestErrorsRedacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := new(bytes.Buffer)
		logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cloud := fakecloud.New(fakecloud.Config{
			Faults: fakecloud.Faults{UnavailableRate: 0.3, DropRate: 0.2},
			Seed:   1,
		})
		var rules quota.Rules
		rules.Set(quota.Key{Product: "ecs"}, quota.Every(5, time.Second))
		client := &http.Client{Transport: transport.New(&resetEvery{next: cloud.RoundTripper(), n: 4},
			transport.Config{Rules: &rules, Logger: logger})}
		policy := &retry.Policy{MaxAttempts: 3, Logger: logger}
		op := func(ctx context.Context) error {
			req, err := fakecloud.NewRequest(ctx, "http://ecs.cn-hangzhou.aliyuncs.com", scanAKID, "DescribeInstances")
			if err != nil {
				t.Fatal(err)
			}
			q := req.URL.Query()
			q.Set("SecurityToken", scanToken)
			req.URL.RawQuery = q.Encode() + "&Signature=" + scanSignature
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode >= 400 {
				return statusError(resp.StatusCode)
			}
			return nil
		}
		var giveUps, waits, urlErrs int
		for i := range 40 {
			timeout := time.Minute
			if i%3 == 2 {
				timeout = 50 * time.Millisecond // refused: the quota's wait is longer
			}
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			err := retry.Do(ctx, policy, op)
			cancel()
			if err == nil {
				continue
			}
			var g *retry.GiveUpError
			if errors.As(err, &g) {
				giveUps++
			}
			var w *adaptive.WaitError
			if errors.As(err, &w) {
				waits++
			}
			var u *url.Error
			if errors.As(err, &u) {
				urlErrs++
			}
			walk(err, func(e error) {
				if !tollgateType(e) {
					return
				}
				for _, secret := range scanSecrets {
					if strings.Contains(e.Error(), secret) {
						t.Errorf("%T prints a credential: %q", e, e.Error())
					}
				}
			})
		}
		if giveUps == 0 || waits == 0 || urlErrs == 0 {
			t.Errorf("%d give-ups, %d refusals, %d url errors: the scan wants each", giveUps, waits, urlErrs)
		}
		for _, secret := range scanSecrets {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the logs hold a credential:\n%s", logs)
			}
		}
	})
}

// walk calls f for err and every error it wraps.
func walk(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	}
}

// tollgateType reports whether err's type is one tollgate defines, outside
// tests.
func tollgateType(err error) bool {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := t.PkgPath()
	return strings.HasPrefix(p, "github.com/tollgate-go/tollgate/") && !strings.HasSuffix(p, "_test")
}
