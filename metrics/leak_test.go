package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// Every credential of the leak test holds this marker, so one search finds
// any of them, whole or in part, plain or percent-encoded.
const leakMarker = "LEAKCHECK"

var (
	leakAKIDs = []string{"LTAI5tLEAKCHECKalpha01", "LTAI5tLEAKCHECKbravo02"}
	leakSig   = "SIGLEAKCHECKq9Zx+/="
	leakToken = "CAISLEAKCHECKsecuritytoken"
)

// leakRequest is an RPC request for akid signed with the leak test's
// signature and security token.
func leakRequest(t *testing.T, ctx context.Context, akid string) *http.Request {
	t.Helper()
	req, err := fakecloud.NewRequest(ctx, endpoint, akid, "DescribeInstances")
	if err != nil {
		t.Fatal(err)
	}
	q := req.URL.Query()
	q.Set("Signature", leakSig)
	q.Set("SecurityToken", leakToken)
	req.URL.RawQuery = q.Encode()
	return req
}

func leakSend(t *testing.T, ctx context.Context, rt http.RoundTripper, akid string) error {
	t.Helper()
	resp, err := rt.RoundTrip(leakRequest(t, ctx, akid))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

// failNext fails as net/http does, with a *url.Error quoting the URL.
type failNext struct{}

func (failNext) RoundTrip(req *http.Request) (*http.Response, error) {
	return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: errors.New("read: connection reset by peer")}
}

// sdkLeakError is a throttle error whose text quotes the signed URL and an
// AccessKeyId, as SDK errors may.
type sdkLeakError struct{ url, akid string }

func (e *sdkLeakError) Error() string {
	return `SDK.ServerError: ErrorCode: Throttling.User, URL: ` + e.url +
		`, Message: Request was denied due to user flow control. AccessKeyId=` + e.akid + `, {"SecurityToken":"` + leakToken + `"}`
}
func (e *sdkLeakError) ErrorCode() string { return "Throttling.User" }

// TestLeakScan sends requests with distinctive AccessKeyIds, signatures and
// security tokens through a Transport with both the Collector and a Debug
// logger, covering throttles, pauses, quota changes from headers,
// refusals, failures, retries and give-ups, then scans every log line and
// the whole /metrics exposition for those credentials.
func TestLeakScan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logBuf bytes.Buffer
		logs := slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := New(Config{})
		cfg := transport.Config{Observer: c, Logger: logs}

		// Throttles with a retry hint, a pause, refusals.
		throttling := fakecloud.New(fakecloud.Config{
			Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.SlidingWindow, Limit: 2, Window: time.Minute}},
			Headers: fakecloud.HeadersRetryAfter | fakecloud.HeadersAlibaba,
		})
		tr := transport.New(throttling.RoundTripper(), cfg)
		for _, akid := range leakAKIDs {
			for range 3 {
				if err := leakSend(t, t.Context(), tr, akid); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			if err := leakSend(t, ctx, tr, akid); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("during the pause: %v, want context.DeadlineExceeded", err)
			}
			cancel()
			ctx, cancel = context.WithCancel(t.Context())
			cancel()
			leakSend(t, ctx, tr, akid)
		}

		// Quota changes from every header family.
		headers := fakecloud.New(fakecloud.Config{
			Quotas:               []fakecloud.Quota{{API: "DescribeInstances", Limit: 5, Window: time.Second}},
			Headers:              fakecloud.HeadersAll,
			HeadersOnEveryAnswer: true,
		})
		if n := drive(t, transport.New(headers.RoundTripper(), cfg), leakAKIDs, "DescribeInstances", 4, 2*time.Second); n != 0 {
			t.Errorf("%d requests failed", n)
		}

		// Failures of the next RoundTripper.
		failing := transport.New(failNext{}, cfg)
		for _, akid := range leakAKIDs {
			if err := leakSend(t, t.Context(), failing, akid); err == nil {
				t.Fatal("no error from the failing next")
			}
		}

		// Retries and a give-up on an error that quotes the credentials.
		p := &retry.Policy{Observer: c, Logger: logs, MaxAttempts: 3, NoBudget: true, Rand: func() float64 { return 0 }}
		for _, akid := range leakAKIDs {
			err := retry.Do(t.Context(), p, func(ctx context.Context) error {
				req := leakRequest(t, ctx, akid)
				return &sdkLeakError{url: req.URL.String(), akid: akid}
			})
			if !errors.Is(err, retry.ErrAttemptsExhausted) {
				t.Errorf("Do = %v, want attempts exhausted", err)
			}
		}

		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		exposition := rec.Body.String()
		logText := logBuf.String()

		secrets := append([]string{leakMarker, leakSig, url.QueryEscape(leakSig), leakToken}, leakAKIDs...)
		for _, s := range secrets {
			for what, text := range map[string]string{"log": logText, "/metrics": exposition} {
				if i := strings.Index(text, s); i >= 0 {
					t.Errorf("%s holds %q: …%s…", what, s, text[max(0, i-200):min(len(text), i+100)])
				}
			}
		}

		// The scan saw what it should: every kind of record and metric.
		for _, msg := range []string{
			"tollgate: throttle answer", "tollgate: throttled", "tollgate: quota changed", "tollgate: request refused",
			"tollgate: request failed", "tollgate: retry", "tollgate: gave up", "REDACTED",
		} {
			if !strings.Contains(logText, msg) {
				t.Errorf("the log has no %q: the scan does not cover it", msg)
			}
		}
		for _, m := range []string{
			`result="throttled"`, `result="refused"`, `result="failed"`, "tollgate_quota_remaining", "tollgate_retries_total",
			`tollgate_giveups_total{reason="attempts",tenant="acs"} 2`, "tenant=\"acs:ecs:cn-hangzhou:ak-",
		} {
			if !strings.Contains(exposition, m) {
				t.Errorf("/metrics has no %s: the scan does not cover it", m)
			}
		}
		if t.Failed() {
			t.Logf("log:\n%s", logText)
		}
	})
}
