package quota

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestIETFTrio(t *testing.T) {
	const (
		i   = SignalIETF
		lrr = FieldLimit | FieldRemaining | FieldReset
	)
	tests := []struct {
		name string
		h    http.Header
		want want
	}{
		{"trio", header("RateLimit-Limit", "100", "RateLimit-Remaining", "50", "RateLimit-Reset", "30"),
			want{known: lrr, limit: 100, remaining: 50, reset: 30 * time.Second, sources: i}},
		{"limit with window", header("RateLimit-Limit", "100, 100;w=60"),
			want{known: FieldLimit | FieldWindow, limit: 100, window: time.Minute, sources: i}},
		{"reset capped", header("RateLimit-Reset", "86400"),
			want{known: FieldReset, reset: time.Minute, sources: i}},
		{"reset is always a delta", header("RateLimit-Reset", "1733130030"),
			want{known: FieldReset, reset: time.Minute, sources: i}},
		{"reset overflow", header("RateLimit-Reset", "9223372036"),
			want{sources: i, malformed: i}},
		{"reset negative", header("RateLimit-Reset", "-1"),
			want{sources: i, malformed: i}},
		{"remaining NaN", header("RateLimit-Remaining", "NaN", "RateLimit-Limit", "10"),
			want{known: FieldLimit, limit: 10, sources: i, malformed: i}},
		{"lower-case", http.Header{"ratelimit-remaining": {"3"}},
			want{known: FieldRemaining, remaining: 3, sources: i}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, parseHeader(t, tt.h), tt.want)
		})
	}
}

func TestIETFFields(t *testing.T) {
	const (
		sf  = SignalIETFFields
		lw  = FieldLimit | FieldWindow
		all = FieldLimit | FieldWindow | FieldRemaining | FieldReset
		rr  = FieldRemaining | FieldReset
	)
	tests := []struct {
		name   string
		policy []string
		rl     []string
		want   want
	}{
		{"one policy", []string{`"p";q=100;w=60`}, []string{`"p";r=50;t=30`},
			want{known: all, limit: 100, window: time.Minute, remaining: 50, reset: 30 * time.Second, quotaID: "p", sources: sf}},
		{"token names", []string{`default;q=10;w=1`}, []string{`default;r=0;t=1`},
			want{known: all, limit: 10, window: time.Second, reset: time.Second, quotaID: "default", sources: sf}},
		{"policy only", []string{`"p";q=100;w=60`}, nil,
			want{known: lw, limit: 100, window: time.Minute, quotaID: "p", sources: sf}},
		{"ratelimit only", nil, []string{`"p";r=5`},
			want{known: FieldRemaining, remaining: 5, quotaID: "p", sources: sf}},
		{"the policy within the horizon paces", []string{`"burst";q=100;w=1, "daily";q=1000;w=86400`}, nil,
			want{known: lw, limit: 100, window: time.Second, quotaID: "burst", sources: sf}},
		{"a policy beyond the horizon alone does not pace", []string{`"daily";q=1000;w=86400`}, nil,
			want{quotaID: "daily", sources: sf}},
		{"the draft's example: the burst budget binds until the daily one is spent",
			[]string{`"burst";q=100;w=1, "daily";q=1000;w=86400`}, []string{`"burst";r=99;t=1, "daily";r=999;t=86399`},
			want{known: all, limit: 100, window: time.Second, remaining: 99, reset: time.Second, quotaID: "burst", sources: sf}},
		{"a spent daily budget binds",
			[]string{`"burst";q=100;w=1, "daily";q=1000;w=86400`}, []string{`"burst";r=99;t=1, "daily";r=0;t=86399`},
			want{known: all, limit: 100, window: time.Second, remaining: 0, reset: time.Minute, quotaID: "daily", sources: sf}},
		{"policies across lines", []string{`"burst";q=100;w=1`, `"minute";q=50;w=60`}, nil,
			want{known: lw, limit: 50, window: time.Minute, quotaID: "minute", sources: sf}},
		{"lowest spendable rate wins, as a pair", nil, []string{`"burst";r=0;t=1, "daily";r=999;t=3600`},
			want{known: rr, remaining: 0, reset: time.Second, quotaID: "burst", sources: sf}},
		{"lowest spendable rate wins, other order", nil, []string{`"a";r=10;t=1`, `"b";r=20;t=30`},
			want{known: rr, remaining: 20, reset: 30 * time.Second, quotaID: "b", sources: sf}},
		{"budget that resets now restricts nothing", nil, []string{`"a";r=0;t=0, "b";r=20;t=30`},
			want{known: rr, remaining: 20, reset: 30 * time.Second, quotaID: "b", sources: sf}},
		{"budget name names the quota", []string{`"lim";q=100;w=60`}, []string{`"bud";r=50;t=30`},
			want{known: all, limit: 100, window: time.Minute, remaining: 50, reset: 30 * time.Second, quotaID: "bud", sources: sf}},
		{"older draft numeric items", []string{`100;w=60, 1000;w=3600`}, nil,
			want{known: lw, limit: 100, window: time.Minute, sources: sf}},
		{"no window", []string{`"p";q=100`}, nil,
			want{known: FieldLimit, limit: 100, quotaID: "p", sources: sf}},
		{"other parameters ignored", []string{`"p";q=100;w=60;qu="requests";pk=:cHsx:;x;y=?1`}, nil,
			want{known: lw, limit: 100, window: time.Minute, quotaID: "p", sources: sf}},
		{"white space where the RFC allows it", []string{"  \"p\"; q=100;w=60 ,\t\"x\";  q=1000;w=60 \t"}, nil,
			want{known: lw, limit: 100, window: time.Minute, quotaID: "p", sources: sf}},
		{"space before ';' fails the field", []string{`"p" ;q=100;w=60`}, nil,
			want{sources: sf, malformed: sf}},
		{"leading tab fails the field", []string{"\t\"p\";q=100;w=60"}, nil,
			want{sources: sf, malformed: sf}},
		{"trailing comma fails the field", []string{`"p";q=100;w=60,`}, nil,
			want{sources: sf, malformed: sf}},
		{"empty member fails the field", []string{`"a";q=100;w=60,,"b";q=1;w=60`}, nil,
			want{sources: sf, malformed: sf}},
		{"lines joined with a comma: a comma at a line's end makes an empty member", []string{`"a";q=100;w=60,`, `"b";q=1;w=60`}, nil,
			want{sources: sf, malformed: sf}},
		{"upper-case keys fail the field", []string{`"p";Q=100;W=60`}, nil,
			want{sources: sf, malformed: sf}},
		{"escape other than \\\" and \\\\ fails the field", []string{`"p\q";q=10;w=1`}, nil,
			want{sources: sf, malformed: sf}},
		{"key given twice keeps its last value", []string{`"p";q=1;w=60;q=10`}, nil,
			want{known: lw, limit: 10, window: time.Minute, quotaID: "p", sources: sf}},
		{"negative zero is zero", nil, []string{`"p";r=-0;t=1`},
			want{known: rr, remaining: 0, reset: time.Second, quotaID: "p", sources: sf}},
		{"bare t is a boolean, not a reset", nil, []string{`"p";r=5;t`},
			want{sources: sf, malformed: sf}},
		{"policy in bytes is not a request rate", []string{`"bytes";q=1000;w=1;qu="content-bytes", "req";q=10;w=1;qu="requests"`}, []string{`"bytes";r=0;t=1, "req";r=5;t=1`},
			want{known: all, limit: 10, window: time.Second, remaining: 5, reset: time.Second, quotaID: "req", sources: sf}},
		{"budgets of many policies in bytes are all suspect", []string{`"a";q=1;qu="content-bytes", "b";q=1;qu="content-bytes", "c";q=1;qu="content-bytes", "d";q=1;qu="content-bytes", "e";q=1;qu="content-bytes", "req";q=10;w=1`}, []string{`"req";r=5;t=1`},
			want{known: lw, limit: 10, window: time.Second, quotaID: "req", sources: sf}},
		{"budget of a policy not listed counts requests", []string{`"bytes";q=1000;w=1;qu="content-bytes"`}, []string{`"other";r=5;t=1`},
			want{known: rr, remaining: 5, reset: time.Second, quotaID: "other", sources: sf}},
		{"unit that is not a string", []string{`"p";q=10;w=1;qu=requests`}, nil,
			want{sources: sf, malformed: sf}},
		{"draft-07 dictionary is not a list", nil, []string{`limit=100, remaining=50, reset=30`},
			want{sources: sf, malformed: sf}},
		{"escaped name with comma", []string{`"a\"b,c";q=7;w=1`}, nil,
			want{known: lw, limit: 7, window: time.Second, quotaID: `a"b,c`, sources: sf}},
		{"reset capped", nil, []string{`"p";r=0;t=3600`},
			want{known: rr, remaining: 0, reset: time.Minute, quotaID: "p", sources: sf}},
		{"reset beyond the horizon, some left", nil, []string{`"p";r=1;t=3600`},
			want{known: FieldRemaining, remaining: 1, quotaID: "p", sources: sf}},
		{"decimal reset is not a count", nil, []string{`"p";r=1;t=1.5, "q";r=2;t=2`},
			want{known: rr, remaining: 2, reset: 2 * time.Second, quotaID: "q", sources: sf, malformed: sf}},
		{"decimal with four fraction digits fails the field", nil, []string{`"p";r=1;t=1.1234`},
			want{sources: sf, malformed: sf}},
		{"bad member skipped", []string{`"a";q=-1;w=1, "b";q=10;w=1`}, nil,
			want{known: lw, limit: 10, window: time.Second, quotaID: "b", sources: sf, malformed: sf}},
		{"garbage member fails the field", []string{`@@@, "b";q=10;w=1`}, nil,
			want{sources: sf, malformed: sf}},
		{"boolean member skipped", []string{`?1;q=5, "b";q=10;w=1`}, nil,
			want{known: lw, limit: 10, window: time.Second, quotaID: "b", sources: sf, malformed: sf}},
		{"budget named by a number skipped", nil, []string{`7;r=0;t=1, "b";r=5;t=1`},
			want{known: rr, remaining: 5, reset: time.Second, quotaID: "b", sources: sf, malformed: sf}},
		{"inner list skipped", []string{`("a" "b");q=1, "b";q=10`}, nil,
			want{known: FieldLimit, limit: 10, quotaID: "b", sources: sf, malformed: sf}},
		{"unterminated string", []string{`"abc;q=1`}, nil,
			want{sources: sf, malformed: sf}},
		{"string quota", []string{`"p";q="100"`}, nil,
			want{sources: sf, malformed: sf}},
		{"fractional quota", []string{`"p";q=1.5`}, nil,
			want{sources: sf, malformed: sf}},
		{"no quota", []string{`"p";w=60`}, nil,
			want{sources: sf, malformed: sf}},
		{"exponent", nil, []string{`"p";r=1e400`},
			want{sources: sf, malformed: sf}},
		{"huge quota clamped", []string{`"p";q=99999999999999`}, nil,
			want{known: FieldLimit, limit: MaxCount, quotaID: "p", sources: sf}},
		{"quota over 15 digits fails the field", []string{`"p";q=9999999999999999`}, nil,
			want{sources: sf, malformed: sf}},
		{"overflowing reset", nil, []string{`"p";r=1;t=9223372036`},
			want{sources: sf, malformed: sf}},
		{"empty fields", []string{``}, []string{`  `},
			want{sources: sf}},
		{"a comma alone fails the field", nil, []string{` , `},
			want{sources: sf, malformed: sf}},
		{"trailing junk", []string{`"p";q=1 junk`}, nil,
			want{sources: sf, malformed: sf}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.policy != nil {
				h["Ratelimit-Policy"] = tt.policy
			}
			if tt.rl != nil {
				h["Ratelimit"] = tt.rl
			}
			check(t, parseHeader(t, h), tt.want)
		})
	}
}

func FuzzIETFTrio(f *testing.F) {
	f.Add("100, 100;w=60", "50", "30")
	f.Add("x", "-1", "1e400")
	f.Add("100;w=0", "5, 6", "9223372036")
	f.Fuzz(func(t *testing.T, limit, remaining, reset string) {
		h := http.Header{"Ratelimit-Limit": {limit}, "Ratelimit-Remaining": {remaining}, "Ratelimit-Reset": {reset}}
		o := new(Parser).ParseParts(http.StatusOK, h, nil, now)
		invariants(t, o, now, 0)
	})
}

func FuzzIETFFields(f *testing.F) {
	f.Add(`"p";q=100;w=60`, `"p";r=50;t=30`)
	f.Add(`"burst";q=100;w=1, "daily";q=1000;w=86400`, `"burst";r=0;t=1, "daily";r=999;t=3600`)
	f.Add(`100;w=60, ("a" "b");q=1`, `"a\"b,c";r=1;t=1.5`)
	f.Add(`"p";q=100;w=60;qu="requests";pk=:cHsx:;x;y=?1`, `@@@,,;`)
	for _, c := range loadSuite(f) {
		if skipHeaderTypes[c.HeaderType] == "" {
			v := strings.Join(c.Raw, ", ")
			f.Add(v, v)
		}
	}
	f.Fuzz(func(t *testing.T, policy, rl string) {
		h := http.Header{"Ratelimit-Policy": {policy, rl}, "Ratelimit": {rl, policy}}
		o := new(Parser).ParseParts(http.StatusOK, h, nil, now)
		invariants(t, o, now, 0)
	})
}
