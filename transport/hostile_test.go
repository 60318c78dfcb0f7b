package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
)

// answer is one scripted answer of a hostile server.
type answer struct {
	status int
	header []string // name, value, name, value, ...
	body   string
}

// hostile is a row of TestHostileAnswers: what a server answered (once,
// then plain 200s) and what tollgate must make of it.
type hostile struct {
	name    string
	answers []answer
	class   retry.Class   // retry.Classify of the first answer
	within  time.Duration // the next hostileNext requests are all answered within this long after the last answer
	atLeast time.Duration // and no sooner: a pause that must hold
}

// hostileNext is how many requests follow a row's answers.
const hostileNext = 5

// hostileRows: add a row to try another answer. Plain means the answer
// says nothing that should slow the tenant: the requests after it go within
// a second.
var hostileRows = []hostile{
	{name: "a limit over a year's window", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{200, []string{"X-RateLimit-Limit", "1;w=31622400"}, ""}}},
	{name: "a limit without a window after one over a year", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{
			{200, []string{"X-RateLimit-Limit", "1;w=31622400"}, ""},
			{200, []string{"X-RateLimit-Limit", "100"}, ""},
		}},
	{name: "the IETF draft's burst and daily policies", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{200, []string{
			"RateLimit-Policy", `"burst";q=100;w=1, "daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=99;t=1, "daily";r=999;t=86399`}, ""}}},
	{name: "a spent daily budget pauses, capped", class: retry.ClassSuccess, within: 62 * time.Second, atLeast: 55 * time.Second,
		answers: []answer{{200, []string{
			"RateLimit-Policy", `"burst";q=100;w=1, "daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=99;t=1, "daily";r=0;t=86399`}, ""}}},
	{name: "a limit of one a minute paces, bounded", class: retry.ClassSuccess, within: 5 * time.Minute, atLeast: 3 * time.Minute,
		answers: []answer{{200, []string{"X-RateLimit-Limit", "1;w=60"}, ""}}},
	{name: "Retry-After on a 202", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{202, []string{"Retry-After", "30"}, ""}}},
	{name: "Retry-After on a 200", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{200, []string{"Retry-After", "30"}, ""}}},
	{name: "Retry-After on a 429 holds", class: retry.ClassThrottle, within: 32 * time.Second, atLeast: 28 * time.Second,
		answers: []answer{{429, []string{"Retry-After", "30"}, ""}}},
	{name: "a Retry-After of three years is capped", class: retry.ClassThrottle, within: 62 * time.Second, atLeast: 55 * time.Second,
		answers: []answer{{429, []string{"Retry-After", "99999999"}, ""}}},
	{name: "a Retry-After past int64 is ignored", class: retry.ClassThrottle, within: 2 * time.Second,
		answers: []answer{{429, []string{"Retry-After", "999999999999999999999"}, ""}}},
	{name: "a Retry-After date in the year 9999 is capped", class: retry.ClassThrottle, within: 62 * time.Second, atLeast: 55 * time.Second,
		answers: []answer{{429, []string{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"}, ""}}},
	{name: "Remaining 0 with a reset a year off is capped", class: retry.ClassSuccess, within: 62 * time.Second, atLeast: 55 * time.Second,
		answers: []answer{{200, []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "31622400"}, ""}}},
	{name: "a 503 with Retry-After does not pause the tenant", class: retry.ClassTransient, within: time.Second,
		answers: []answer{{503, []string{"Retry-After", "30"}, `{"Code":"ServiceUnavailable"}`}}},
	{name: "Throttling.User", class: retry.ClassThrottle, within: 2 * time.Second,
		answers: []answer{{400, nil, `{"RequestId":"r","Code":"Throttling.User","Message":"Request was denied due to user flow control."}`}}},
	{name: "a truncated body", class: retry.ClassPermanent, within: time.Second,
		answers: []answer{{400, nil, `{"Code": "Throttl`}}},
	{name: "a body of garbage", class: retry.ClassPermanent, within: time.Second,
		answers: []answer{{400, nil, "\x00\xff<Code><Code><<<{{{"}}},
	{name: "numbers past int64", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{200, []string{"X-RateLimit-Limit", "99999999999999999999999", "X-RateLimit-Remaining", "99999999999999999999999"}, ""}}},
	{name: "negative and unreadable values", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{200, []string{"X-RateLimit-Limit", "-5", "X-RateLimit-Remaining", "NaN", "Retry-After", "-1", "RateLimit-Policy", `"p";q=-1;w=0`}, ""}}},
	{name: "a limit of zero", class: retry.ClassSuccess, within: time.Second,
		answers: []answer{{200, []string{"X-RateLimit-Limit", "0", "X-RateLimit-Remaining", "0"}, ""}}},
}

// TestHostileAnswers: no answer, however odd, stalls a tenant past what it
// asks within the caps (MaxHint and MaxPause, 1 min each), and each is
// classified as a retry would take it.
func TestHostileAnswers(t *testing.T) {
	for _, row := range hostileRows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				next := &scripted{answers: row.answers}
				client := &http.Client{Transport: New(next, Config{})}
				for i := range row.answers {
					resp, err := get(context.Background(), client)
					if err != nil {
						t.Fatalf("answer %d: %v", i, err)
					}
					if i == 0 {
						if c := retry.Classify(resp, nil, time.Now()).Class; c != row.class {
							t.Errorf("classified %v, want %v", c, row.class)
						}
					}
					readAll(t, resp, row.answers[i].body)
				}
				start := time.Now()
				for i := range hostileNext {
					ctx, cancel := context.WithTimeout(context.Background(), row.within+time.Second)
					resp, err := get(ctx, client)
					cancel()
					if err != nil {
						t.Fatalf("request %d after the answer, at %v: %v", i+1, time.Since(start), err)
					}
					readAll(t, resp, "")
				}
				took := time.Since(start)
				if took > row.within || took < row.atLeast {
					t.Errorf("the %d requests after the answer took %v, want %v to %v", hostileNext, took, row.atLeast, row.within)
				}
			})
		})
	}
}

// TestSlowErrorBody: RoundTrip returns an error answer as soon as its
// headers come, however slow its body; the limiter learns its code when the
// caller has read it (the Observer is told then), and the caller reads
// every byte.
func TestSlowErrorBody(t *testing.T) {
	const body = `{"RequestId":"r","Code":"Throttling.User","Message":"Request was denied due to user flow control."}`
	for _, closeUnread := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			pr, pw := io.Pipe()
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 400, Header: http.Header{}, Body: pr, Request: req}, nil
			})
			var results resultLog
			tr := New(next, Config{Observer: &results})
			k := quota.Key{Product: "ecs", Account: "a"}
			req, _ := http.NewRequestWithContext(quota.WithKey(context.Background(), k), "GET", "http://ecs.example/", nil)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 0 {
				t.Errorf("RoundTrip took %v with the body stalled", d)
			}
			lim := tr.Limiter(k)
			if s := lim.Snapshot(); s.InFlight != 1 {
				t.Errorf("in flight %d while the body is unread, want 1", s.InFlight)
			}
			if len(results) != 0 {
				t.Errorf("the Observer was told %v before the body was read", results)
			}
			if closeUnread {
				resp.Body.Close()
				if s := lim.Snapshot(); s.InFlight != 0 || len(results) != 1 || results[0] == ResultThrottled {
					t.Errorf("closed unread: in flight %d, told %v; want 0 and one answer not known as a throttle", s.InFlight, results)
				}
				return
			}
			go func() {
				for i := range len(body) { // drip
					time.Sleep(10 * time.Millisecond)
					pw.Write([]byte{body[i]})
				}
				pw.Close()
			}()
			readAll(t, resp, body)
			if s := lim.Snapshot(); s.InFlight != 0 || len(results) != 1 || results[0] != ResultThrottled {
				t.Errorf("read: in flight %d, told %v; want 0 and one throttle", s.InFlight, results)
			}
		})
	}
}

// resultLog is an Observer that keeps the Result of each request.
type resultLog []Result

func (r *resultLog) Request(ev RequestEvent) { *r = append(*r, ev.Result) }
func (r *resultLog) Limits(LimitsEvent)      {}

// scripted answers with its answers in order, then plain 200s.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	n       int
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	a := answer{status: 200}
	if s.n < len(s.answers) {
		a = s.answers[s.n]
	}
	s.n++
	s.mu.Unlock()
	h := http.Header{}
	for i := 0; i+1 < len(a.header); i += 2 {
		h.Add(a.header[i], a.header[i+1])
	}
	return &http.Response{StatusCode: a.status, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(a.body)), ContentLength: int64(len(a.body))}, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func get(ctx context.Context, c *http.Client) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://api.example/", nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// readAll reads and closes resp's body and checks it is want.
func readAll(t *testing.T, resp *http.Response, want string) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("reading the body: %v", err)
	}
	if string(b) != want {
		t.Errorf("body %q, want %q", b, want)
	}
}
