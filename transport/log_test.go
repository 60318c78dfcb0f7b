package transport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/logtest"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

func debugLogger() (*slog.Logger, *bytes.Buffer) {
	buf := new(bytes.Buffer)
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// find returns the records with message msg.
func find(recs []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func TestLogHappyPathSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, buf := debugLogger()
		cloud := fakecloud.New(fakecloud.Config{}) // no quota
		tr := New(cloud.RoundTripper(), Config{Logger: logs})
		for range 100 {
			if st, err := send(t, t.Context(), tr, "AKIDhappy"); st != 200 || err != nil {
				t.Fatalf("%d, %v", st, err)
			}
		}
		if buf.Len() != 0 {
			t.Errorf("the happy path logged:\n%s", buf)
		}
	})
}

// TestLogThrottlePauseRefusal throttles a tenant with a retry hint, then
// asks for a request the pause cannot let through in time, and checks the
// records and their levels.
func TestLogThrottlePauseRefusal(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		t.Run(level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				buf := new(bytes.Buffer)
				logs := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: level}))
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.SlidingWindow, Limit: 2, Window: time.Minute}},
					Headers: fakecloud.HeadersRetryAfter,
				})
				tr := New(cloud.RoundTripper(), Config{Logger: logs})
				const akid = "AKIDlogthrottle"
				for range 3 {
					send(t, t.Context(), tr, akid)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				if _, err := send(t, ctx, tr, akid); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("during the pause: %v, want context.DeadlineExceeded", err)
				}
				cancel()
				ctx, cancel = context.WithCancel(t.Context())
				cancel()
				send(t, ctx, tr, akid) // cancelled: Debug only

				recs := logtest.Records(t, buf)
				tenant := "acs:ecs:cn-hangzhou:" + tr.keyFn(mustRequest(t, akid)).Account + ":DescribeInstances"
				for _, r := range recs {
					if r["tenant"] != tenant {
						t.Errorf("record %v: tenant %v, want %s", r, r["tenant"], tenant)
					}
				}

				answers := find(recs, msgThrottle)
				throttled := find(recs, msgThrottled)
				refused := find(recs, msgRefused)
				wantAnswers, wantRefused := 1, 2
				if level > slog.LevelDebug {
					wantAnswers, wantRefused = 0, 1
				}
				if len(answers) != wantAnswers || len(throttled) != 1 || len(refused) != wantRefused {
					t.Fatalf("records %v: want %d %q, one %q, %d %q", recs, wantAnswers, msgThrottle, msgThrottled, wantRefused, msgRefused)
				}
				if len(recs) != wantAnswers+1+wantRefused {
					t.Errorf("%d records, want %d: %v", len(recs), wantAnswers+1+wantRefused, recs)
				}
				if level == slog.LevelDebug {
					a := answers[0]
					if a["level"] != "DEBUG" || a["status"] != 400.0 || a["code"] != "Throttling.User" || a["retry_after"] != float64(time.Minute) {
						t.Errorf("throttle answer record %v", a)
					}
					if c := refused[1]; c["level"] != "DEBUG" || c["error"] != "context canceled" {
						t.Errorf("cancelled request record %v", c)
					}
				}
				th := throttled[0]
				if th["level"] != "INFO" || th["code"] != "Throttling.User" || th["status"] != 400.0 || th["throttled"] != true ||
					th["pause"] != float64(time.Minute-time.Second) || th["pause_until"] == nil || th["source"] == nil || th["prev_source"] == nil {
					t.Errorf("throttled record %v", th)
				}
				rf := refused[0]
				if rf["level"] != "WARN" || rf["reason"] != "pause" || rf["left"] == nil || rf["would_wait"] == nil ||
					!strings.Contains(rf["error"].(string), "would wait") {
					t.Errorf("refused record %v", rf)
				}
			})
		})
	}
}

// TestLogQuotaChanged checks the Info record of limits first read from
// rate-limit headers, and that the answers that follow with unchanged
// limits log nothing at Info.
func TestLogQuotaChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		buf := new(bytes.Buffer)
		logs := slog.New(slog.NewJSONHandler(buf, nil)) // Info
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:               []fakecloud.Quota{{API: "DescribeInstances", Limit: 20, Window: time.Second}},
			Headers:              fakecloud.HeadersXRateLimit,
			HeadersOnEveryAnswer: true,
		})
		tr := New(cloud.RoundTripper(), Config{Logger: logs})
		for range 30 {
			send(t, t.Context(), tr, "AKIDquota")
		}
		recs := logtest.Records(t, buf)
		q := find(recs, msgQuota)
		if len(q) == 0 {
			t.Fatalf("no %q record: %v", msgQuota, recs)
		}
		r := q[0]
		if r["level"] != "INFO" || r["source"] != "headers" || r["prev_source"] != "none" || r["limit"] != 20.0 || r["prev_limit"] != 0.0 ||
			r["window"] != float64(time.Second) || r["status"] != 200.0 {
			t.Errorf("quota record %v", r)
		}
		if len(recs) > 3 {
			t.Errorf("%d Info records for 30 requests within a steady quota: %v", len(recs), recs)
		}
	})
}

// TestLogFailedRedacted checks that the *url.Error of a failing next
// RoundTripper is logged without its URL's query.
func TestLogFailedRedacted(t *testing.T) {
	logs, buf := debugLogger()
	tr := New(failingNext{}, Config{Logger: logs})
	const akid = "LTAI5tLOGREDACTCHECK"
	if _, err := send(t, t.Context(), tr, akid); err == nil || !strings.Contains(err.Error(), akid) {
		t.Fatalf("err = %v, want the raw *url.Error (the caller's own)", err)
	}
	recs := logtest.Records(t, buf)
	if len(recs) != 1 || recs[0]["msg"] != msgFailed || recs[0]["level"] != "DEBUG" {
		t.Fatalf("records %v, want one Debug %q", recs, msgFailed)
	}
	if got, want := recs[0]["error"], `Post "`+obsEndpoint+`/?REDACTED": read: connection reset by peer`; got != want {
		t.Errorf("error attribute %q, want %q", got, want)
	}
	for _, s := range []string{akid, "Signature=fakecloud", "SignatureNonce"} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("log holds %q: %s", s, buf)
		}
	}
}

func TestRedactError(t *testing.T) {
	err := &url.Error{Op: "Get", URL: "https://ecs.aliyuncs.com/?AccessKeyId=LTAIx&Signature=abc%3D", Err: errors.New("EOF")}
	if got, want := RedactError(err), `Get "https://ecs.aliyuncs.com/?REDACTED": EOF`; got != want {
		t.Errorf("RedactError = %q, want %q", got, want)
	}
	if got := RedactError(errors.New("Specified AccessKeyId=LTAIx is not found")); strings.Contains(got, "LTAIx") {
		t.Errorf("RedactError kept the AccessKeyId: %q", got)
	}
	if got := RedactError(nil); got != "" {
		t.Errorf("RedactError(nil) = %q", got)
	}
}

func TestLogNilLogger(t *testing.T) {
	if o := newLogObserver(nil); o != nil {
		t.Errorf("newLogObserver(nil) = %v, want nil", o)
	}
}

func mustRequest(t *testing.T, akid string) *http.Request {
	t.Helper()
	req, err := fakecloud.NewRequest(context.Background(), obsEndpoint, akid, "DescribeInstances")
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestLogInFlightCap: the cap on requests in flight the learner finds is
// logged at Info, with the cap: as a change of the quota, or as the
// throttle's summary when a throttle's answer found it.
//
// The learner names the cap within the first 5 s in all but about one
// run in 500 (2 of 900 runs with -race, and 2 more in a longer run):
// there it first takes the load's rhythm for a window of about 100 ms
// and measures that. This test is about the log, not how soon the cap
// is found, so the load goes on in 5 s rounds, up to six, until a record
// shows it.
func TestLogInFlightCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		buf := new(bytes.Buffer)
		logs := slog.New(slog.NewJSONHandler(buf, nil)) // Info
		cloud := fakecloud.New(fakecloud.Config{
			Quotas: []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.Concurrency, Limit: 8}},
			Faults: latency,
		})
		tr := New(cloud.RoundTripper(), Config{Logger: logs})
		var found bool
		var recs []map[string]any
		for round := 0; round < 6 && !found; round++ {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			var l load
			l.Run(ctx, t, tr, "AKIDcap", workers).Wait()
			cancel()
			recs = logtest.Records(t, buf)
			for _, r := range recs {
				if r["in_flight_limit"] == 8.0 && r["prev_in_flight_limit"] == 0.0 {
					found = r["level"] == "INFO" && (r["msg"] == msgQuota || r["msg"] == msgThrottled)
				}
			}
		}
		if !found {
			t.Errorf("no Info record with in_flight_limit 8 (prev 0) in %d after 30 s", len(recs))
		}
	})
}
