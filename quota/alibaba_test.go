package quota

import (
	"net/http"
	"testing"
	"time"
)

func TestAlibabaHeaders(t *testing.T) {
	const (
		lr  = FieldLimit | FieldRemaining
		lrr = FieldLimit | FieldRemaining | FieldReset
		ali = SignalAlibaba
	)
	tests := []struct {
		name string
		h    http.Header
		want want
	}{
		{"full", header("x-ratelimit-user-api", "Limit:20,Remain:0,TimeLeft:2000,Reset:1733130030"),
			want{known: lrr, limit: 20, remaining: 0, reset: 2 * time.Second, sources: ali}},
		{"any order, spaces", header("X-Ratelimit-User-Api", " TimeLeft : 2500 , Remain:5 ,Limit: 20 "),
			want{known: lrr, limit: 20, remaining: 5, reset: 2500 * time.Millisecond, sources: ali}},
		{"lower-case map key", http.Header{"x-ratelimit-user": {"Limit:20,Remain:3"}},
			want{known: lr, limit: 20, remaining: 3, sources: ali}},
		{"field names in any case", header("x-ratelimit-user", "LIMIT:20,remain:3,timeleft:100"),
			want{known: lrr, limit: 20, remaining: 3, reset: 100 * time.Millisecond, sources: ali}},
		{"Reset epoch seconds when no TimeLeft", header("x-ratelimit-user", "Limit:20,Remain:0,Reset:1733130030"),
			want{known: lrr, limit: 20, reset: 30 * time.Second, sources: ali}},
		{"Reset in the past", header("x-ratelimit-user", "Limit:20,Remain:0,Reset:1733120000"),
			want{known: lrr, limit: 20, reset: 0, sources: ali}},
		{"Reset far ahead capped", header("x-ratelimit-user", "Limit:20,Remain:0,Reset:1833130000"),
			want{known: lrr, limit: 20, reset: time.Minute, sources: ali}},
		{"TimeLeft capped", header("x-ratelimit-user", "Remain:0,TimeLeft:3600000"),
			want{known: FieldRemaining | FieldReset, reset: time.Minute, sources: ali}},
		{"TimeLeft fraction", header("x-ratelimit-user", "TimeLeft:1.5"),
			want{known: FieldReset, reset: 1500 * time.Microsecond, sources: ali}},
		{"equals sign tolerated", header("x-ratelimit-user", "Limit=20"),
			want{known: FieldLimit, limit: 20, sources: ali}},
		{"unknown fields skipped", header("x-ratelimit-user", "Limit:20,Burst:5,Foo:bar"),
			want{known: FieldLimit, limit: 20, sources: ali}},
		{"repeated field, same value", header("x-ratelimit-user", "Limit:20,Limit:20"),
			want{known: FieldLimit, limit: 20, sources: ali}},
		{"repeated field, conflict", header("x-ratelimit-user", "Limit:20,Limit:30,Remain:4"),
			want{known: FieldRemaining, remaining: 4, sources: ali, malformed: ali}},
		{"conflict across lines", header("x-ratelimit-user", "Limit:20", "x-ratelimit-user", "Limit:30"),
			want{sources: ali, malformed: ali}},
		{"bad value keeps the others", header("x-ratelimit-user", "Limit:abc,Remain:4"),
			want{known: FieldRemaining, remaining: 4, sources: ali, malformed: ali}},
		{"negative", header("x-ratelimit-user", "Limit:20,Remain:-1"),
			want{known: FieldLimit, limit: 20, sources: ali, malformed: ali}},
		{"exponent", header("x-ratelimit-user", "TimeLeft:1e400"),
			want{sources: ali, malformed: ali}},
		{"fractional count", header("x-ratelimit-user", "Limit:2.5"),
			want{sources: ali, malformed: ali}},
		{"huge count clamped", header("x-ratelimit-user", "Limit:9999999999999999"),
			want{known: FieldLimit, limit: MaxCount, sources: ali}},
		{"overflowing count", header("x-ratelimit-user", "Limit:99999999999999999999"),
			want{sources: ali, malformed: ali}},
		{"overflowing TimeLeft", header("x-ratelimit-user", "TimeLeft:9223372036855"),
			want{sources: ali, malformed: ali}},
		{"bad TimeLeft falls back to nothing", header("x-ratelimit-user", "TimeLeft:x,Reset:1733130005"),
			want{known: FieldReset, reset: 5 * time.Second, sources: ali, malformed: ali}},
		{"garbage", header("x-ratelimit-user", "garbage"),
			want{sources: ali, malformed: ali}},
		{"empty", header("x-ratelimit-user", ""),
			want{sources: ali}},
		{"the tighter of two quotas, as a pair", header(
			"x-ratelimit-user-api", "Limit:20,Remain:0,TimeLeft:500",
			"x-ratelimit-user", "Limit:1000,Remain:900,TimeLeft:50000"),
			want{known: lrr, limit: 20, remaining: 0, reset: 500 * time.Millisecond, sources: ali}},
		{"account quota tighter", header(
			"x-ratelimit-user-api", "Limit:20,Remain:19,TimeLeft:500",
			"x-ratelimit-user", "Limit:1000,Remain:2,TimeLeft:50000"),
			want{known: lrr, limit: 20, remaining: 2, reset: 50 * time.Second, sources: ali}},
		{"with x-acs-retry-after", header("x-ratelimit-user-api", "Limit:20,Remain:0", "x-acs-retry-after", "800"),
			want{known: lr | FieldRetryAfter, limit: 20, retryAfter: 800 * time.Millisecond, sources: ali}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, parseHeader(t, tt.h), tt.want)
		})
	}
}

func FuzzAlibabaHeader(f *testing.F) {
	for _, s := range []string{
		"Limit:20,Remain:0,TimeLeft:2000,Reset:1733130000",
		" TimeLeft : 2500 , Remain:5 ,Limit: 20 ",
		"Limit:20,Limit:30", "TimeLeft:1e400", "Remain:-1", "Limit=20", "garbage", ",,:,",
	} {
		f.Add(s, "Limit:1000,Remain:900,TimeLeft:50000")
	}
	f.Fuzz(func(t *testing.T, api, user string) {
		h := http.Header{"X-Ratelimit-User-Api": {api}, "X-Ratelimit-User": {user, api}}
		o := new(Parser).ParseParts(http.StatusBadRequest, h, nil, now)
		invariants(t, o, now, 0)
		if o.Signals != SignalAlibaba {
			t.Fatalf("Signals = %b", o.Signals)
		}
	})
}
