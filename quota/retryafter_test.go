package quota

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		v    string
		max  time.Duration
		want time.Duration
		ok   bool
	}{
		{"seconds", "30", 0, 30 * time.Second, true},
		{"zero", "0", 0, 0, true},
		{"white space", " \t5 ", 0, 5 * time.Second, true},
		{"fraction", "1.5", 0, 1500 * time.Millisecond, true},
		{"capped at default", "3600", 0, time.Minute, true},
		{"capped at max", "3600", 5 * time.Minute, 5 * time.Minute, true},
		{"below max", "120", 5 * time.Minute, 2 * time.Minute, true},
		{"largest that fits a duration", "9223372035", 0, time.Minute, true},
		{"IMF-fixdate", "Mon, 02 Dec 2024 09:00:30 GMT", 0, 30 * time.Second, true},
		{"RFC 850", "Monday, 02-Dec-24 09:00:30 GMT", 0, 30 * time.Second, true},
		{"asctime", "Mon Dec  2 09:00:30 2024", 0, 30 * time.Second, true},
		{"date now", "Mon, 02 Dec 2024 09:00:00 GMT", 0, 0, true},
		{"past date", "Fri, 31 Dec 1999 23:59:00 GMT", 0, 0, true},
		{"far-future date", "Fri, 31 Dec 9999 23:59:59 GMT", 0, time.Minute, true},
		{"empty", "", 0, 0, false},
		{"blank", "   ", 0, 0, false},
		{"negative", "-5", 0, 0, false},
		{"plus sign", "+5", 0, 0, false},
		{"exponent", "1e400", 0, 0, false},
		{"small exponent", "1e3", 0, 0, false},
		{"NaN", "NaN", 0, 0, false},
		{"Inf", "Inf", 0, 0, false},
		{"hex", "0x10", 0, 0, false},
		{"two numbers", "5 6", 0, 0, false},
		{"list", "5, 6", 0, 0, false},
		{"trailing dot", "5.", 0, 0, false},
		{"leading dot", ".5", 0, 0, false},
		{"overflows a duration", "9223372036", 0, 0, false},
		{"overflows int64", "99999999999999999999999999", 0, 0, false},
		{"word", "soon", 0, 0, false},
		{"bad date", "Mon, 32 Dec 2024 09:00:30 GMT", 0, 0, false},
		{"date with zone offset", "Mon, 02 Dec 2024 09:00:30 +0100", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRetryAfter(tt.v, now, tt.max)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v, ok=%v", tt.v, got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		})
	}
}

func TestRetryAfterHeaders(t *testing.T) {
	const both = SignalRetryAfter | SignalAlibaba
	tests := []struct {
		name string
		h    http.Header
		want want
	}{
		{"one line", header("Retry-After", "7"),
			want{known: FieldRetryAfter, retryAfter: 7 * time.Second, sources: SignalRetryAfter}},
		{"lines agree", header("Retry-After", "7", "Retry-After", " 7"),
			want{known: FieldRetryAfter, retryAfter: 7 * time.Second, sources: SignalRetryAfter}},
		{"date and seconds agree", header("Retry-After", "7", "Retry-After", "Mon, 02 Dec 2024 09:00:07 GMT"),
			want{known: FieldRetryAfter, retryAfter: 7 * time.Second, sources: SignalRetryAfter}},
		{"lines conflict", header("Retry-After", "7", "Retry-After", "9"),
			want{sources: SignalRetryAfter, malformed: SignalRetryAfter}},
		{"one line unreadable", header("Retry-After", "soon", "Retry-After", "9"),
			want{known: FieldRetryAfter, retryAfter: 9 * time.Second, sources: SignalRetryAfter, malformed: SignalRetryAfter}},
		{"unreadable", header("Retry-After", "1e400"),
			want{sources: SignalRetryAfter, malformed: SignalRetryAfter}},
		{"lower-case name", http.Header{"retry-after": {"3"}},
			want{known: FieldRetryAfter, retryAfter: 3 * time.Second, sources: SignalRetryAfter}},
		{"two spellings conflict", http.Header{"retry-after": {"3"}, "Retry-After": {"4"}},
			want{sources: SignalRetryAfter, malformed: SignalRetryAfter}},
		{"x-acs-retry-after ms", header("x-acs-retry-after", "1500"),
			want{known: FieldRetryAfter, retryAfter: 1500 * time.Millisecond, sources: SignalAlibaba}},
		{"x-acs-retry-after capped", header("x-acs-retry-after", "9999999999"),
			want{known: FieldRetryAfter, retryAfter: time.Minute, sources: SignalAlibaba}},
		{"x-acs-retry-after negative", header("x-acs-retry-after", "-1"),
			want{sources: SignalAlibaba, malformed: SignalAlibaba}},
		{"x-acs-retry-after exponent", header("x-acs-retry-after", "1e3"),
			want{sources: SignalAlibaba, malformed: SignalAlibaba}},
		{"x-acs-retry-after overflows a duration", header("x-acs-retry-after", "9223372036855"),
			want{sources: SignalAlibaba, malformed: SignalAlibaba}},
		{"x-acs-retry-after overflows int64", header("x-acs-retry-after", "99999999999999999999"),
			want{sources: SignalAlibaba, malformed: SignalAlibaba}},
		{"longest hint wins", header("Retry-After", "2", "x-acs-retry-after", "5000"),
			want{known: FieldRetryAfter, retryAfter: 5 * time.Second, sources: both}},
		{"longest hint wins, other order", header("Retry-After", "6", "x-acs-retry-after", "5000"),
			want{known: FieldRetryAfter, retryAfter: 6 * time.Second, sources: both}},
		{"bad one does not hide good one", header("Retry-After", "x", "x-acs-retry-after", "5000"),
			want{known: FieldRetryAfter, retryAfter: 5 * time.Second, sources: both, malformed: SignalRetryAfter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, parseHeader(t, tt.h), tt.want)
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"30", "0", "1.5", "-5", "1e400", "NaN", "9223372036", "Mon, 02 Dec 2024 09:00:30 GMT",
		"Monday, 02-Dec-24 09:00:30 GMT", "Mon Dec  2 09:00:30 2024", "Fri, 31 Dec 9999 23:59:59 GMT", " 7 "} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, maxHint int64) {
		m := time.Duration(maxHint)
		d, err := ParseRetryAfter(v, now, m)
		if m <= 0 {
			m = DefaultMaxHint
		}
		if d < 0 || d > m || (err != nil && d != 0) {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v", v, m, d, err)
		}
		for _, name := range []string{"Retry-After", "X-Acs-Retry-After"} {
			p := Parser{MaxHint: m}
			o := p.ParseParts(http.StatusTooManyRequests, http.Header{name: {v, v}}, nil, now)
			invariants(t, o, now, m)
		}
	})
}

// TestRetrySlack checks the resolution each hint is read with: whole
// seconds and dates are rounded up by the server, milliseconds and
// fractions are not.
func TestRetrySlack(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"whole seconds", header("Retry-After", "1"), time.Second},
		{"date", header("Retry-After", "Mon, 02 Dec 2024 09:00:07 GMT"), time.Second},
		{"fraction", header("Retry-After", "1.5"), 0},
		{"milliseconds", header("x-acs-retry-after", "1500"), 0},
		{"longer whole seconds win with their slack", header("Retry-After", "2", "x-acs-retry-after", "1500"), time.Second},
		{"longer milliseconds win with theirs", header("Retry-After", "1", "x-acs-retry-after", "1500"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parseHeader(t, tt.h)
			if !o.Has(FieldRetryAfter) {
				t.Fatalf("no retry hint in %+v", o)
			}
			if o.RetrySlack != tt.want {
				t.Errorf("RetrySlack = %v, want %v", o.RetrySlack, tt.want)
			}
		})
	}
}
