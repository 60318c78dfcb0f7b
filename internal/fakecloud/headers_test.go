package fakecloud

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// t0 is aligned to 10 s windows.
var t0 = time.Unix(1_700_000_000, 0)

func epoch(s int64) string { return strconv.FormatInt(1_700_000_000+s, 10) }

func httpDate(s int64) string { return time.Unix(1_700_000_000+s, 0).UTC().Format(http.TimeFormat) }

type headerStep struct {
	at     time.Duration
	status int
	want   map[string]string // "" = absent
}

// runHeaderSteps sends one request at each step's offset from t0 and checks
// the headers.
func runHeaderSteps(t *testing.T, cfg Config, steps []headerStep) {
	t.Helper()
	var clk clock
	clk.Set(t0)
	cfg.Now = clk.Now
	c := New(cfg)
	rt := c.RoundTripper()
	for _, s := range steps {
		clk.Set(t0.Add(s.at))
		req := rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK", "Timestamp": isoTime(t0.Add(s.at))})
		a := send(t, rt, req)
		if a.status != s.status {
			t.Errorf("at %v: status %d, want %d", s.at, a.status, s.status)
		}
		if a.header.Get("x-acs-request-id") == "" {
			t.Errorf("at %v: no x-acs-request-id", s.at)
		}
		if ct := a.header.Get("Content-Type"); ct != "application/json;charset=utf-8" {
			t.Errorf("at %v: Content-Type %q", s.at, ct)
		}
		for k, v := range s.want {
			if got := a.header.Get(k); got != v {
				t.Errorf("at %v: %s = %q, want %q", s.at, k, got, v)
			}
		}
	}
}

// fixedSteps is a 3/10 s fixed window seen at 2.5 s, 4 s, 4.2 s, 9.0001 s
// (throttled) and 10 s (a new window), with what each family must say.
func fixedSteps(h func(rem int, reset time.Duration, resetAt int64, retry time.Duration) map[string]string) []headerStep {
	return []headerStep{
		{2500 * time.Millisecond, 200, h(2, 7500*time.Millisecond, 10, 0)},
		{4 * time.Second, 200, h(1, 6*time.Second, 10, 0)},
		{4200 * time.Millisecond, 200, h(0, 5800*time.Millisecond, 10, 0)},
		{9000100 * time.Microsecond, 400, h(0, 999900*time.Microsecond, 10, 999900*time.Microsecond)},
		{10 * time.Second, 200, h(2, 10*time.Second, 20, 0)},
	}
}

func TestHeaderModes(t *testing.T) {
	fixed := []Quota{{API: "A", Limit: 3, Window: 10 * time.Second}}
	for _, tc := range []struct {
		name  string
		mode  HeaderMode
		date  bool
		every bool
		want  func(rem int, reset time.Duration, resetAt int64, retry time.Duration) map[string]string
	}{
		{"none", HeadersNone, false, true, func(int, time.Duration, int64, time.Duration) map[string]string {
			return map[string]string{"x-ratelimit-user-api": "", "Retry-After": "", "X-RateLimit-Limit": "", "RateLimit": "", "RateLimit-Limit": ""}
		}},
		{"alibaba", HeadersAlibaba, false, true, func(rem int, reset time.Duration, at int64, retry time.Duration) map[string]string {
			m := map[string]string{
				"x-ratelimit-user-api": "Limit:3,Remain:" + strconv.Itoa(rem) + ",TimeLeft:" + strconv.FormatInt(ceilDiv(reset, time.Millisecond), 10) + ",Reset:" + epoch(at),
				"x-ratelimit-user":     "",
				"x-acs-retry-after":    "",
				"Retry-After":          "",
			}
			if retry > 0 {
				m["x-acs-retry-after"] = "1000" // 999.9 ms, rounded up
			}
			return m
		}},
		{"retry-after seconds", HeadersRetryAfter, false, true, func(_ int, _ time.Duration, _ int64, retry time.Duration) map[string]string {
			m := map[string]string{"Retry-After": "", "X-RateLimit-Limit": ""}
			if retry > 0 {
				m["Retry-After"] = "1" // 0.9999 s, rounded up
			}
			return m
		}},
		{"retry-after date", HeadersRetryAfter, true, true, func(_ int, _ time.Duration, _ int64, retry time.Duration) map[string]string {
			m := map[string]string{"Retry-After": ""}
			if retry > 0 {
				m["Retry-After"] = httpDate(10) // the window start, never before
			}
			return m
		}},
		{"x-ratelimit", HeadersXRateLimit, false, true, func(rem int, _ time.Duration, at int64, _ time.Duration) map[string]string {
			return map[string]string{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": strconv.Itoa(rem), "X-RateLimit-Reset": epoch(at), "Retry-After": ""}
		}},
		{"ietf", HeadersIETF, false, true, func(rem int, reset time.Duration, _ int64, _ time.Duration) map[string]string {
			return map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": strconv.Itoa(rem), "RateLimit-Reset": strconv.FormatInt(ceilDiv(reset, time.Second), 10)}
		}},
		{"ietf structured", HeadersIETFStructured, false, true, func(rem int, reset time.Duration, _ int64, _ time.Duration) map[string]string {
			return map[string]string{
				"RateLimit-Policy": `"default";q=3;w=10`,
				"RateLimit":        `"default";r=` + strconv.Itoa(rem) + ";t=" + strconv.FormatInt(ceilDiv(reset, time.Second), 10),
			}
		}},
		{"throttles only", HeadersAll, false, false, func(rem int, _ time.Duration, at int64, retry time.Duration) map[string]string {
			if retry == 0 {
				return map[string]string{"x-ratelimit-user-api": "", "X-RateLimit-Remaining": "", "RateLimit": "", "RateLimit-Reset": ""}
			}
			return map[string]string{"x-ratelimit-user-api": "Limit:3,Remain:0,TimeLeft:1000,Reset:" + epoch(at), "Retry-After": "1", "X-RateLimit-Remaining": "0", "RateLimit-Reset": "1"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runHeaderSteps(t, Config{Quotas: fixed, Headers: tc.mode, RetryAfterDate: tc.date, HeadersOnEveryAnswer: tc.every}, fixedSteps(tc.want))
		})
	}
}

// TestHeaderHonestEquivalents: sliding windows and token buckets report the
// time until the next admission is possible.
func TestHeaderHonestEquivalents(t *testing.T) {
	t.Run("sliding", func(t *testing.T) {
		runHeaderSteps(t, Config{
			Quotas:               []Quota{{API: "A", Policy: SlidingWindow, Limit: 3, Window: 10 * time.Second}},
			Headers:              HeadersAll,
			HeadersOnEveryAnswer: true,
		}, []headerStep{
			{1 * time.Second, 200, map[string]string{"RateLimit-Remaining": "2", "RateLimit-Reset": "10"}},
			{2 * time.Second, 200, map[string]string{"RateLimit-Remaining": "1", "RateLimit-Reset": "9", "X-RateLimit-Reset": epoch(11)}},
			{3500 * time.Millisecond, 200, map[string]string{"RateLimit-Remaining": "0", "x-ratelimit-user-api": "Limit:3,Remain:0,TimeLeft:7500,Reset:" + epoch(11)}},
			// The slot admitted at 1 s frees at 11 s: 7 s from 4 s.
			{4 * time.Second, 400, map[string]string{"Retry-After": "7", "x-acs-retry-after": "7000", "RateLimit": `"default";r=0;t=7`}},
			{10999 * time.Millisecond, 400, map[string]string{"Retry-After": "1", "x-acs-retry-after": "1"}},
			{11 * time.Second, 200, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "1"}},
		})
	})
	t.Run("bucket", func(t *testing.T) {
		runHeaderSteps(t, Config{
			Quotas:               []Quota{{API: "A", Policy: TokenBucket, Limit: 2, Window: time.Second, Burst: 3}},
			Headers:              HeadersAll,
			HeadersOnEveryAnswer: true,
		}, []headerStep{
			{0, 200, map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": "2", "x-ratelimit-user-api": "Limit:3,Remain:2,TimeLeft:500,Reset:" + epoch(1)}},
			{0, 200, map[string]string{"RateLimit-Remaining": "1"}},
			{0, 200, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "2"}}, // full in 1.5 s
			{0, 400, map[string]string{"Retry-After": "1", "x-acs-retry-after": "500", "RateLimit-Policy": `"default";q=3;w=1`}},
			{250 * time.Millisecond, 400, map[string]string{"x-acs-retry-after": "250"}},
			{500 * time.Millisecond, 200, map[string]string{"RateLimit-Remaining": "0"}},
		})
	})
	t.Run("account total", func(t *testing.T) {
		runHeaderSteps(t, Config{
			Quotas:               []Quota{{API: "A", Limit: 5, Window: 10 * time.Second}, {Limit: 2, Window: 10 * time.Second}},
			Headers:              HeadersAlibaba | HeadersXRateLimit,
			HeadersOnEveryAnswer: true,
		}, []headerStep{
			{1 * time.Second, 200, map[string]string{
				"x-ratelimit-user-api": "Limit:5,Remain:4,TimeLeft:9000,Reset:" + epoch(10),
				"x-ratelimit-user":     "Limit:2,Remain:1,TimeLeft:9000,Reset:" + epoch(10),
				"X-RateLimit-Limit":    "2", // the binding quota
			}},
			{2 * time.Second, 200, map[string]string{"X-RateLimit-Remaining": "0"}},
			{3 * time.Second, 400, map[string]string{"x-ratelimit-user": "Limit:2,Remain:0,TimeLeft:7000,Reset:" + epoch(10), "x-acs-retry-after": "7000"}},
		})
	})
}

func TestParseHeaderMode(t *testing.T) {
	for in, want := range map[string]HeaderMode{
		"":                     HeadersNone,
		"none":                 HeadersNone,
		"alibaba,retry-after":  HeadersAlibaba | HeadersRetryAfter,
		" IETF , x-ratelimit ": HeadersIETF | HeadersXRateLimit,
		"ietf-structured":      HeadersIETFStructured,
		"all":                  HeadersAll,
	} {
		got, err := ParseHeaderMode(in)
		if err != nil || got != want {
			t.Errorf("ParseHeaderMode(%q) = %v, %v; want %v", in, got, err, want)
		}
		if again, err := ParseHeaderMode(got.String()); err != nil || again != got {
			t.Errorf("round trip %q: %v %v", got.String(), again, err)
		}
	}
	if _, err := ParseHeaderMode("alibaba,bogus"); err == nil {
		t.Error("no error for bogus")
	}
}

// TestThrottleAnswer: status and code are configurable; the body is the
// gateway's.
func TestThrottleAnswer(t *testing.T) {
	for _, tc := range []struct {
		status     int
		code, want string
		wantStatus int
	}{
		{0, "", CodeThrottlingUser, 400},
		{429, CodeThrottlingAPI, CodeThrottlingAPI, 429},
		{503, CodeThrottling, CodeThrottling, 503},
	} {
		c := New(Config{ThrottleStatus: tc.status, ThrottleCode: tc.code, Quotas: []Quota{{Limit: 0}}})
		a := call(t, c.RoundTripper(), "AK", "DescribeInstances")
		if a.status != tc.wantStatus || a.code != tc.want {
			t.Errorf("got %d %s, want %d %s", a.status, a.code, tc.wantStatus, tc.want)
		}
		mustContain(t, string(a.body), `"HostId":"ecs.aliyuncs.com"`)
		mustContain(t, string(a.body), `"Recommend":"https://api.aliyun.com/troubleshoot?q=`+tc.want+`&product=Ecs&requestId=`+a.header.Get("x-acs-request-id")+`"`)
		mustContain(t, string(a.body), `"RequestId":"`+a.header.Get("x-acs-request-id")+`"`)
	}
	a := call(t, New(Config{Quotas: []Quota{{Limit: 0}}}).RoundTripper(), "AK", "A")
	mustContain(t, string(a.body), `"Message":"Request was denied due to user flow control."`)
}
