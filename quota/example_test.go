package quota_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Parse reads a throttled Alibaba Cloud answer: HTTP 400 with the error code
// in the JSON body and the per-API quota in x-ratelimit-user-api. The body is
// handed back intact for the SDK to read.
func ExampleParse() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	body := `{"RequestId":"6C3B5E6A","HostId":"ecs.aliyuncs.com","Code":"Throttling.User","Message":"Request was denied due to user flow control."}`
	resp := &http.Response{
		StatusCode: http.StatusBadRequest,
		Header: http.Header{
			"Content-Type":         {"application/json;charset=utf-8"},
			"X-Ratelimit-User-Api": {"Limit:20,Remain:0,TimeLeft:1500,Reset:1733130002"},
		},
		Body: io.NopCloser(strings.NewReader(body)),
	}

	o := quota.Parse(resp, now)
	fmt.Println("throttled:", o.Throttled, "code:", o.Code)
	fmt.Println("limit:", o.Limit, "remaining:", o.Remaining, "known:", o.Has(quota.FieldLimit|quota.FieldRemaining))
	fmt.Println("retry at: now +", o.RetryAt().Sub(now))
	fmt.Println("sources:", o.Signals == quota.SignalAlibaba|quota.SignalBody, "malformed:", o.Malformed)

	b, _ := io.ReadAll(resp.Body)
	fmt.Println("body intact:", string(b) == body)
	// Output:
	// throttled: true code: Throttling.User
	// limit: 20 remaining: 0 known: true
	// retry at: now + 1.5s
	// sources: true malformed: 0
	// body intact: true
}

// ParseRetryAfter reads both forms of Retry-After and caps the result.
func ExampleParseRetryAfter() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, v := range []string{"30", "Mon, 02 Dec 2024 09:00:10 GMT", "86400", "-1"} {
		d, err := quota.ParseRetryAfter(v, now, time.Minute)
		fmt.Println(d, err)
	}
	// Output:
	// 30s <nil>
	// 10s <nil>
	// 1m0s <nil>
	// 0s quota: malformed rate-limit value: Retry-After "-1"
}

// A Retry-After in whole seconds is the server's wait rounded up: the
// Observation says how coarse it is, so that a limiter may end its pause at
// the earliest moment the wait may end.
func ExampleParse_retryAfter() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, v := range []string{"1", "0.25"} {
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {v}}, Body: http.NoBody}
		o := quota.Parse(resp, now)
		fmt.Println("Retry-After:", v, "wait:", o.RetryAfter, "at most this much too long:", o.RetrySlack)
	}
	// Output:
	// Retry-After: 1 wait: 1s at most this much too long: 1s
	// Retry-After: 0.25 wait: 250ms at most this much too long: 0s
}

// The IETF RateLimit-Policy and RateLimit fields are RFC 9651 lists. Of
// several policies the most restrictive counts; a field the RFC refuses,
// here for its trailing comma, is ignored whole and reported, never half
// read.
func ExampleParse_ietfFields() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, policy := range []string{
		`"burst";q=100;w=1, "minute";q=3000;w=60`,
		`"burst";q=100;w=1, "minute";q=3000;w=60,`,
	} {
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{
			"Ratelimit-Policy": {policy},
			"Ratelimit":        {`"minute";r=2000;t=30`},
		}}
		o := quota.Parse(resp, now)
		if o.Has(quota.FieldLimit) {
			fmt.Print("limit: ", o.Limit, " per ", o.Window, ", ")
		} else {
			fmt.Print("no limit, ")
		}
		fmt.Println("remaining:", o.Remaining, "policy:", o.QuotaID, "malformed:", o.Malformed == quota.SignalIETFFields)
	}
	// Output:
	// limit: 3000 per 1m0s, remaining: 2000 policy: minute malformed: false
	// no limit, remaining: 2000 policy: minute malformed: true
}

// ParseDeferred is Parse for a RoundTripper that must not wait for an error
// body: the Observation, error code included, comes once the caller has
// read the body, which it gets whole.
func ExampleParser_ParseDeferred() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	body := `{"RequestId":"6C3B5E6A","Code":"Throttling.User","Message":"Request was denied due to user flow control."}`
	resp := &http.Response{
		StatusCode: http.StatusBadRequest,
		Header:     http.Header{"Content-Type": {"application/json;charset=utf-8"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}

	var p quota.Parser
	p.ParseDeferred(resp, now, func(o quota.Observation) {
		fmt.Println("observed: throttled:", o.Throttled, "code:", o.Code)
	})
	fmt.Println("returned")
	b, _ := io.ReadAll(resp.Body) // as the SDK would
	resp.Body.Close()
	fmt.Println("body intact:", string(b) == body)
	// Output:
	// returned
	// observed: throttled: true code: Throttling.User
	// body intact: true
}

// A quota whose window is longer than the parser's Horizon (15 min by
// default) is a budget, not a pace: of the IETF draft's two policies the
// per-second one paces, and the daily one stops the tenant only once it is
// spent, until its reset capped at MaxHint (1 min).
func ExampleParser_horizon() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	var p quota.Parser
	for _, budget := range []string{`"burst";r=99;t=1, "daily";r=999;t=86399`, `"burst";r=99;t=1, "daily";r=0;t=86399`} {
		h := http.Header{
			"Ratelimit-Policy": {`"burst";q=100;w=1, "daily";q=1000;w=86400`},
			"Ratelimit":        {budget},
		}
		o := p.ParseParts(http.StatusOK, h, nil, now)
		pause := "no pause"
		if at := o.RetryAt(); !at.IsZero() {
			pause = fmt.Sprint("pause until now + ", at.Sub(now))
		}
		fmt.Printf("pace %d per %v; %s: %d left, %s\n", o.Limit, o.Window, o.QuotaID, o.Remaining, pause)
	}
	// Output:
	// pace 100 per 1s; burst: 99 left, no pause
	// pace 100 per 1s; daily: 0 left, pause until now + 1m0s
}

// A reset further off than MaxHint (1 min by default) is capped in
// ResetAt, which is how long a client may pause, and kept as said in
// ResetSaid, which is when the window ends: X-RateLimit's trio says no
// window, so the reset tells it (39 per 5 minutes), and what is left is
// spread until then.
func ExampleObservation_resetSaid() {
	now := time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)
	h := http.Header{
		"X-Ratelimit-Limit":     {"39"},
		"X-Ratelimit-Remaining": {"38"},
		"X-Ratelimit-Reset":     {"300"},
	}
	o := new(quota.Parser).ParseParts(http.StatusOK, h, nil, now)
	fmt.Printf("limit %d, %d left\n", o.Limit, o.Remaining)
	fmt.Println("pause at most until now +", o.ResetAt.Sub(now))
	fmt.Println("the window ends at now +", o.ResetSaid.Sub(now))
	// Output:
	// limit 39, 38 left
	// pause at most until now + 1m0s
	// the window ends at now + 5m0s
}
