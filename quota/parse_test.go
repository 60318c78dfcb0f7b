package quota

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMergeFamilies(t *testing.T) {
	const (
		x   = SignalXRateLimit
		i   = SignalIETF
		sf  = SignalIETFFields
		ali = SignalAlibaba
		ra  = SignalRetryAfter
	)
	tests := []struct {
		name string
		h    http.Header
		want want
	}{
		{"smallest limit and remaining, latest reset",
			header("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "10",
				"RateLimit-Limit", "50", "RateLimit-Remaining", "7", "RateLimit-Reset", "20"),
			want{known: FieldLimit | FieldRemaining | FieldReset, limit: 50, remaining: 5, reset: 20 * time.Second, sources: x | i}},
		{"smaller limit borrows the other's window",
			header("X-RateLimit-Limit", "100", "RateLimit-Policy", `"p";q=1000;w=60`),
			want{known: FieldLimit | FieldWindow, limit: 100, window: time.Minute, quotaID: "p", sources: x | sf}},
		{"a window beyond the horizon is not borrowed",
			header("X-RateLimit-Limit", "100", "RateLimit-Policy", `"p";q=1000;w=3600`),
			want{known: FieldLimit, limit: 100, quotaID: "p", sources: x | sf}},
		{"lower rate wins when both have windows",
			header("X-RateLimit-Limit", "100;w=1", "RateLimit-Policy", `"p";q=1000;w=60`),
			want{known: FieldLimit | FieldWindow, limit: 1000, window: time.Minute, quotaID: "p", sources: x | sf}},
		{"a window within the horizon paces before a longer one",
			header("X-RateLimit-Limit", "100;w=1", "RateLimit-Policy", `"p";q=1000;w=3600`),
			want{known: FieldLimit | FieldWindow, limit: 100, window: time.Second, quotaID: "p", sources: x | sf}},
		{"a budget left that resets beyond the horizon is not spread",
			header("X-RateLimit-Remaining", "999", "X-RateLimit-Reset", "86400"),
			want{known: FieldRemaining, remaining: 999, sources: x}},
		{"a spent budget that resets beyond the horizon pauses, capped",
			header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "86400"),
			want{known: FieldRemaining | FieldReset, remaining: 0, reset: time.Minute, sources: x}},
		{"the per-API budget binds before the daily per-user one",
			header("x-ratelimit-user-api", "Limit:20,Remain:19,TimeLeft:500", "x-ratelimit-user", "Limit:100000,Remain:9,TimeLeft:86400000"),
			want{known: FieldLimit | FieldRemaining | FieldReset, limit: 20, remaining: 19, reset: 500 * time.Millisecond, sources: ali}},
		{"X-RateLimit-Quota-ID names the quota",
			header("X-RateLimit-Quota-ID", "xid", "RateLimit", `"p";r=1`),
			want{known: FieldRemaining, remaining: 1, quotaID: "xid", sources: x | sf}},
		{"retry hint kept beside the reset",
			header("Retry-After", "2", "x-ratelimit-user-api", "Limit:20,Remain:0,TimeLeft:9000"),
			want{known: FieldLimit | FieldRemaining | FieldReset | FieldRetryAfter, limit: 20, reset: 9 * time.Second,
				retryAfter: 2 * time.Second, sources: ra | ali}},
		{"a malformed family does not hide the others",
			header("Retry-After", "soon", "X-RateLimit-Remaining", "-1", "RateLimit-Remaining", "3"),
			want{known: FieldRemaining, remaining: 3, sources: ra | x | i, malformed: ra | x}},
		{"unrelated headers", header("Content-Type", "application/json", "Date", "Mon, 02 Dec 2024 09:00:00 GMT",
			"X-Acs-Request-Id", "6C3B5E6A", "Ratelimit-Whatever", "1", "X-Ratelimit-Used", "4", "R", "x", "X", "y"),
			want{}},
		{"empty header lists", http.Header{"Retry-After": {}, "X-Ratelimit-Limit": nil}, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, parseHeader(t, tt.h), tt.want)
		})
	}
}

func TestRetryAtPrecedence(t *testing.T) {
	// The retry hint wins over a later reset, as the IETF draft says.
	h := header("Retry-After", "2", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30")
	o := new(Parser).ParseParts(429, h, nil, now)
	if got := o.RetryAt(); !got.Equal(now.Add(2 * time.Second)) {
		t.Errorf("RetryAt = now%+v, want now+2s", got.Sub(now))
	}
	// Without a hint an exhausted quota waits for the reset.
	h = header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30")
	o = new(Parser).ParseParts(200, h, nil, now)
	if o.Throttled {
		t.Errorf("exhausted 200 counted as a throttle")
	}
	if got := o.RetryAt(); !got.Equal(now.Add(30 * time.Second)) {
		t.Errorf("RetryAt = now%+v, want now+30s", got.Sub(now))
	}
}

func TestMaxHint(t *testing.T) {
	p := Parser{MaxHint: 5 * time.Second}
	h := header("Retry-After", "30", "X-RateLimit-Reset", "30", "x-ratelimit-user", "TimeLeft:30000")
	o := p.ParseParts(429, h, nil, now)
	invariants(t, o, now, p.MaxHint)
	if o.RetryAfter != 5*time.Second || !o.ResetAt.Equal(now.Add(5*time.Second)) {
		t.Errorf("RetryAfter %v, ResetAt now%+v; want both capped at 5s", o.RetryAfter, o.ResetAt.Sub(now))
	}
}

// TestResetSaid: a reset further off than MaxHint is capped in ResetAt,
// the pause, and said in full in ResetSaid, a window's end, where it lies
// within the Horizon; beyond it (a budget's reset), ResetSaid is zero,
// spent or not. A 5-minute window's first request hears of the whole
// window: read from a capped reset, the window was a minute, and the
// family's draws of 5 minutes with headers paced at five times their
// quota.
func TestResetSaid(t *testing.T) {
	p := Parser{Horizon: 15 * time.Minute}
	for _, c := range []struct {
		name      string
		h         http.Header
		at, said  time.Duration // from now; said 0 for none
		wantReset bool
	}{
		{"x-ratelimit, within MaxHint", header("X-RateLimit-Limit", "39", "X-RateLimit-Remaining", "30", "X-RateLimit-Reset", "20"), 20 * time.Second, 20 * time.Second, true},
		{"x-ratelimit, beyond MaxHint", header("X-RateLimit-Limit", "39", "X-RateLimit-Remaining", "30", "X-RateLimit-Reset", "300"), time.Minute, 300 * time.Second, true},
		{"alibaba TimeLeft", header("x-ratelimit-user-api", "Limit:101,Remain:50,TimeLeft:290000"), time.Minute, 290 * time.Second, true},
		{"ietf trio", header("RateLimit-Limit", "5", "RateLimit-Remaining", "1", "RateLimit-Reset", "600"), time.Minute, 600 * time.Second, true},
		{"ietf fields", header("RateLimit-Policy", `"p";q=5;w=600`, "RateLimit", `"p";r=1;t=599`), time.Minute, 599 * time.Second, true},
		{"beyond the horizon, left", header("X-RateLimit-Limit", "1000", "X-RateLimit-Remaining", "30", "X-RateLimit-Reset", "3600"), 0, 0, false},
		{"beyond the horizon, spent", header("X-RateLimit-Limit", "1000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3600"), time.Minute, 0, true},
	} {
		o := p.ParseParts(200, c.h, nil, now)
		invariants(t, o, now, p.MaxHint)
		if o.Has(FieldReset) != c.wantReset || c.wantReset && !o.ResetAt.Equal(now.Add(c.at)) {
			t.Errorf("%s: reset known %v at now%+v, want %v at now+%v", c.name, o.Has(FieldReset), o.ResetAt.Sub(now), c.wantReset, c.at)
		}
		var said time.Time
		if c.said > 0 {
			said = now.Add(c.said)
		}
		if !o.ResetSaid.Equal(said) {
			t.Errorf("%s: ResetSaid %v, want %v", c.name, o.ResetSaid, said)
		}
	}
}

// TestParseConcurrent runs one Parser from many goroutines under -race.
func TestParseConcurrent(t *testing.T) {
	p := &Parser{ThrottleCodes: []string{"X"}}
	h := fullHeader()
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				resp := &http.Response{StatusCode: 400, Header: h, Body: io.NopCloser(strings.NewReader(aliThrottle))}
				if o := p.Parse(resp, now); !o.Throttled || o.Limit != 20 || o.Remaining != 0 {
					t.Errorf("got %+v", o)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

func FuzzParseParts(f *testing.F) {
	f.Add(429, "Retry-After", "30", "x-ratelimit-user-api", "Limit:20,Remain:0,TimeLeft:2000", []byte(aliThrottle), int64(0))
	f.Add(200, "X-RateLimit-Reset", "1733130030000", "RateLimit", `"p";r=0;t=1`, []byte(nil), int64(time.Second))
	f.Add(503, "RateLimit-Policy", `"p";q=1;w=1`, "X-RateLimit-Limit", "100, 100;w=60", []byte(`{"Code":"ServiceUnavailable"}`), int64(-1))
	f.Add(403, "X-RateLimit-Remaining", "0", "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", []byte("<Code>x</Code>"), int64(1<<62))
	// The hostile answers of transport's TestHostileAnswers.
	f.Add(200, "X-RateLimit-Limit", "1;w=31622400", "X-RateLimit-Limit", "100", []byte(nil), int64(0))
	f.Add(200, "RateLimit-Policy", `"burst";q=100;w=1, "daily";q=1000;w=86400`, "RateLimit", `"burst";r=99;t=1, "daily";r=0;t=86399`, []byte(nil), int64(0))
	f.Add(202, "Retry-After", "30", "Retry-After", "99999999", []byte(nil), int64(0))
	f.Add(429, "Retry-After", "999999999999999999999", "X-RateLimit-Reset", "31622400", []byte(nil), int64(0))
	f.Add(400, "X-RateLimit-Limit", "99999999999999999999999", "X-RateLimit-Remaining", "NaN", []byte(`{"Code": "Throttl`), int64(0))
	f.Add(400, "X-RateLimit-Limit", "-5", "RateLimit-Policy", `"p";q=-1;w=0`, []byte("\x00\xff<Code><Code><<<{{{"), int64(0))
	f.Fuzz(func(t *testing.T, status int, k1, v1, k2, v2 string, body []byte, maxHint int64) {
		p := Parser{MaxHint: time.Duration(maxHint), ThrottleCodes: []string{"X"}}
		h := http.Header{k1: {v1, v2}, k2: {v2}, strings.ToLower(k1): {v2}}
		for _, at := range []time.Time{now, {}, time.Unix(1<<40, 0)} {
			o := p.ParseParts(status, h, body, at)
			invariants(t, o, at, p.MaxHint)
			if o.Status != status {
				t.Fatalf("Status = %d", o.Status)
			}
			if status < 400 && (o.Code != "" || o.Signals&SignalBody != 0) {
				t.Fatalf("body read for status %d", status)
			}
			if o.Throttled && status != 429 && status != 403 && !p.isThrottle(o.Code) {
				t.Fatalf("throttle without cause: %+v", o)
			}
			if o.Has(FieldWindow) && o.Window > DefaultHorizon {
				t.Fatalf("a window beyond the horizon paces: %+v", o)
			}
			if o.ResetSaid.After(at.Add(DefaultHorizon)) {
				t.Fatalf("a reset beyond the horizon said as a window's end: %+v", o)
			}
			if o.HintWaits() && status >= 200 && status < 300 && !o.Throttled {
				t.Fatalf("a success's hint waits: %+v", o)
			}
		}
	})
}

// Header sets for the benchmarks.
func plainHeader() http.Header {
	return header(
		"Content-Type", "application/json;charset=utf-8",
		"Date", "Mon, 02 Dec 2024 09:00:00 GMT",
		"Content-Length", "512",
		"X-Acs-Request-Id", "6C3B5E6A-8F0D-5A5B-9A2E-3C1D2E7B8F90",
	)
}

func fullHeader() http.Header {
	h := plainHeader()
	for k, v := range header(
		"Retry-After", "2",
		"x-acs-retry-after", "1500",
		"x-ratelimit-user-api", "Limit:20,Remain:0,TimeLeft:2000,Reset:1733130002",
		"x-ratelimit-user", "Limit:1000,Remain:900,TimeLeft:50000,Reset:1733130050",
		"X-RateLimit-Limit", "100, 100;w=60",
		"X-RateLimit-Remaining", "42",
		"X-RateLimit-Reset", strconv.FormatInt(now.Unix()+30, 10),
		"X-RateLimit-Quota-ID", "ecs",
		"RateLimit-Limit", "100",
		"RateLimit-Remaining", "42",
		"RateLimit-Reset", "30",
		"RateLimit-Policy", `"burst";q=100;w=1, "daily";q=1000;w=86400`,
		"RateLimit", `"burst";r=50;t=1`,
	) {
		h[k] = v
	}
	return h
}

func benchParse(b *testing.B, status int, h http.Header, body string) {
	b.Run("serial", func(b *testing.B) {
		var p Parser
		resp := &http.Response{StatusCode: status, Header: h}
		b.ReportAllocs()
		for b.Loop() {
			if body != "" {
				resp.Body = io.NopCloser(strings.NewReader(body))
			}
			_ = p.Parse(resp, now)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var p Parser
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			resp := &http.Response{StatusCode: status, Header: h}
			for pb.Next() {
				if body != "" {
					resp.Body = io.NopCloser(strings.NewReader(body))
				}
				_ = p.Parse(resp, now)
			}
		})
	})
}

func BenchmarkParsePlain200(b *testing.B) { benchParse(b, 200, plainHeader(), "") }
func BenchmarkParseFull200(b *testing.B)  { benchParse(b, 200, fullHeader(), "") }
func BenchmarkParseAlibaba200(b *testing.B) {
	h := plainHeader()
	h["X-Ratelimit-User-Api"] = []string{"Limit:20,Remain:7,TimeLeft:2000,Reset:1733130002"}
	h["X-Ratelimit-User"] = []string{"Limit:1000,Remain:900,TimeLeft:50000,Reset:1733130050"}
	benchParse(b, 200, h, "")
}
func BenchmarkParseIETF200(b *testing.B) {
	h := plainHeader()
	h["Ratelimit-Policy"] = []string{`"default";q=100;w=60`}
	h["Ratelimit"] = []string{`"default";r=50;t=30`}
	benchParse(b, 200, h, "")
}
func BenchmarkParseThrottle400(b *testing.B) {
	benchParse(b, 400, plainHeader(), aliThrottle)
}
func BenchmarkParseRetryAfterDate(b *testing.B) {
	benchParse(b, 429, header("Retry-After", "Mon, 02 Dec 2024 09:00:30 GMT"), "")
}

// TestParseAllocs holds the hot path to no allocation: an answer with no
// rate-limit header, and one with the IETF structured fields, parsed as
// RFC 9651 says, policy names and all.
func TestParseAllocs(t *testing.T) {
	ietf := plainHeader()
	ietf["Ratelimit-Policy"] = []string{`"burst";q=100;w=1, "daily";q=1000;w=86400;qu="requests"`}
	ietf["Ratelimit"] = []string{`"burst";r=50;t=1, "daily";r=999;t=3600`}
	for name, h := range map[string]http.Header{"plain": plainHeader(), "ietf fields": ietf, "all": fullHeader()} {
		var p Parser
		resp := &http.Response{StatusCode: http.StatusOK, Header: h}
		if n := testing.AllocsPerRun(100, func() { p.Parse(resp, now) }); n != 0 {
			t.Errorf("%s: %v allocations per Parse, want 0", name, n)
		}
	}
}

// TestHintWaits: a Retry-After asks for a pause on a throttle, a 503 and a
// redirect; on a success it is a polling hint (RFC 9110 §10.2.3) and
// pauses nothing.
func TestHintWaits(t *testing.T) {
	h := header("Retry-After", "30")
	for _, tt := range []struct {
		status int
		waits  bool
	}{{200, false}, {202, false}, {404, false}, {500, false}, {301, true}, {429, true}, {503, true}} {
		o := new(Parser).ParseParts(tt.status, h, nil, now)
		if !o.Has(FieldRetryAfter) {
			t.Fatalf("%d: the hint was not read", tt.status)
		}
		if got := o.HintWaits(); got != tt.waits {
			t.Errorf("%d: HintWaits = %v, want %v", tt.status, got, tt.waits)
		}
		want := time.Time{}
		if tt.waits {
			want = now.Add(30 * time.Second)
		}
		if got := o.RetryAt(); !got.Equal(want) {
			t.Errorf("%d: RetryAt = %v, want %v", tt.status, got, want)
		}
	}
}
