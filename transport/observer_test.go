package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/logtest"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
)

// obsEndpoint is the base URL of the observer and log tests' requests.
const obsEndpoint = "http://ecs.aliyuncs.com"

// eventRecorder is an Observer that keeps what it is told.
type eventRecorder struct {
	mu     sync.Mutex
	reqs   []RequestEvent
	limits []LimitsEvent
}

func (r *eventRecorder) Request(ev RequestEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, ev)
}

func (r *eventRecorder) Limits(ev LimitsEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits = append(r.limits, ev)
}

func (r *eventRecorder) last(t *testing.T) RequestEvent {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("no Request event")
	}
	return r.reqs[len(r.reqs)-1]
}

// send makes one RPC request for akid through rt with ctx and returns the
// answer's status, or 0 and the error.
func send(t *testing.T, ctx context.Context, rt http.RoundTripper, akid string) (int, error) {
	t.Helper()
	req, err := fakecloud.NewRequest(ctx, obsEndpoint, akid, "DescribeInstances")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// failingNext is a next RoundTripper that fails as net/http does: a
// *url.Error quoting the full URL, credentials included.
type failingNext struct{}

func (failingNext) RoundTrip(req *http.Request) (*http.Response, error) {
	return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: errors.New("read: connection reset by peer")}
}

// okNext answers 200 at once, with no rate-limit header.
type okNext struct{}

func (okNext) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// TestObserverResults walks one tenant through each Result: allowed, a
// throttle with a retry hint (and the Limits event of its pause), a refusal
// during the pause, a wait for a rule's pace, and a failure.
func TestObserverResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.SlidingWindow, Limit: 2, Window: time.Minute}},
			Headers: fakecloud.HeadersRetryAfter,
		})
		var rec eventRecorder
		tr := New(cloud.RoundTripper(), Config{Observer: &rec})
		const akid = "AKIDobserver"
		for i := range 2 {
			if st, err := send(t, t.Context(), tr, akid); st != 200 || err != nil {
				t.Fatalf("request %d: %d, %v", i, st, err)
			}
			if ev := rec.last(t); ev.Result != ResultAllowed || ev.Wait != 0 || ev.Answer.Status != 200 {
				t.Errorf("request %d: event %+v, want allowed with no wait", i, ev)
			}
		}
		if st, _ := send(t, t.Context(), tr, akid); st != 400 {
			t.Fatalf("third request: status %d, want the throttle", st)
		}
		ev := rec.last(t)
		if ev.Result != ResultThrottled || ev.Answer.Code != "Throttling.User" || ev.Answer.RetryAfter != time.Minute {
			t.Errorf("throttle: event %+v", ev)
		}
		key := ev.Key
		if len(rec.limits) == 0 {
			t.Fatal("no Limits event for the throttle's pause")
		}
		le := rec.limits[len(rec.limits)-1]
		if le.Key != key || !le.Answer.Throttled || !le.After.PauseUntil.After(le.Before.PauseUntil) {
			t.Errorf("Limits event %+v, want the throttle's pause", le)
		}
		// Retry-After in whole seconds is rounded up by the server: the
		// pause lasts until the earliest moment the wait may end.
		if want := time.Now().Add(time.Minute - time.Second); !le.After.PauseUntil.Equal(want) {
			t.Errorf("pause until %v, want %v", le.After.PauseUntil, want)
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := send(t, ctx, tr, akid)
		cancel()
		ev = rec.last(t)
		var we *adaptive.WaitError
		if !errors.Is(err, context.DeadlineExceeded) || ev.Result != ResultRefused || !errors.As(ev.Err, &we) || we.Reason != "pause" {
			t.Errorf("during the pause: err %v, event %+v; want refused for the pause", err, ev)
		}

		// A rule paces another tenant at 1/s: its second request waits.
		var rules quota.Rules
		rules.Set(quota.Key{Product: "ecs"}, quota.Every(1, time.Second))
		paced := New(okNext{}, Config{Observer: &rec, Rules: &rules})
		for i, want := range []Result{ResultAllowed, ResultWaited} {
			if _, err := send(t, t.Context(), paced, "AKIDpaced"); err != nil {
				t.Fatal(err)
			}
			if ev := rec.last(t); ev.Result != want || (want == ResultWaited) != (ev.Wait > 0) {
				t.Errorf("paced request %d: event %+v, want %v", i, ev, want)
			}
		}

		failing := New(failingNext{}, Config{Observer: &rec})
		_, err = send(t, t.Context(), failing, akid)
		ev = rec.last(t)
		var ue *url.Error
		if err == nil || ev.Result != ResultFailed || !errors.As(ev.Err, &ue) || ev.Answer.Status != 0 {
			t.Errorf("failing next: err %v, event %+v; want failed with the *url.Error", err, ev)
		}
	})
}

// TestObserverAllowedNotWaited checks, on the real clock, that a request
// admitted at once counts as allowed: the few hundred nanoseconds an
// immediate Wait takes are no wait.
func TestObserverAllowedNotWaited(t *testing.T) {
	var rec eventRecorder
	tr := New(okNext{}, Config{Observer: &rec})
	for range 10 {
		if _, err := send(t, t.Context(), tr, "AKIDrealclock"); err != nil {
			t.Fatal(err)
		}
		if ev := rec.last(t); ev.Result != ResultAllowed {
			t.Fatalf("unlimited tenant: event %+v (waited %v), want allowed", ev, ev.Wait)
		}
	}
}

// TestObserverPriority: each Request event carries the class its
// request's context set, Default where it set none.
func TestObserverPriority(t *testing.T) {
	var rec eventRecorder
	tr := New(okNext{}, Config{Observer: &rec})
	for _, p := range []Priority{Batch, Interactive, Default} {
		ctx := t.Context()
		if p != Default {
			ctx = WithPriority(ctx, p)
		}
		if _, err := send(t, ctx, tr, "AKIDclass"); err != nil {
			t.Fatal(err)
		}
		if ev := rec.last(t); ev.Priority != p {
			t.Fatalf("event's class %v, want %v", ev.Priority, p)
		}
	}
}

// TestObserverJoined checks that Observer and Logger both hear of events,
// and that a Transport with neither observes nothing.
func TestObserverJoined(t *testing.T) {
	var none Transport
	none.init()
	if none.observer != nil {
		t.Errorf("zero Config: observer %T, want none", none.observer)
	}
	logOnly := New(nil, Config{Logger: discardLogger()})
	logOnly.init()
	if _, ok := logOnly.observer.(*logObserver); !ok {
		t.Errorf("Logger only: observer %T, want *logObserver", logOnly.observer)
	}

	var rec eventRecorder
	logs, buf := debugLogger()
	tr := New(failingNext{}, Config{Observer: &rec, Logger: logs})
	if _, err := send(t, t.Context(), tr, "AKIDjoined"); err == nil {
		t.Fatal("no error from the failing next")
	}
	if len(rec.reqs) != 1 || rec.reqs[0].Result != ResultFailed {
		t.Errorf("observer got %+v, want one failed request", rec.reqs)
	}
	if recs := logtest.Records(t, buf); len(recs) != 1 || recs[0]["msg"] != msgFailed {
		t.Errorf("logger got %v, want one %q record", recs, msgFailed)
	}
}

func TestResultString(t *testing.T) {
	for r, want := range map[Result]string{
		ResultAllowed: "allowed", ResultWaited: "waited", ResultThrottled: "throttled",
		ResultFailed: "failed", ResultRefused: "refused", 0: "unknown",
	} {
		if got := r.String(); got != want {
			t.Errorf("Result(%d).String() = %q, want %q", r, got, want)
		}
	}
}
