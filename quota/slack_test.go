package quota

import (
	"testing"
	"time"
)

// TestResetSlack checks that a reset given in whole seconds is reported as
// possibly a second late, and one given in milliseconds as exact.
func TestResetSlack(t *testing.T) {
	tests := []struct {
		name  string
		kv    []string
		slack time.Duration
	}{
		{"ietf delta seconds", []string{"RateLimit-Remaining", "5", "RateLimit-Reset", "1"}, time.Second},
		{"ietf fractional", []string{"RateLimit-Remaining", "5", "RateLimit-Reset", "0.25"}, time.Millisecond},
		{"ietf structured", []string{"RateLimit", `"p";r=5;t=1`}, time.Second},
		{"x-ratelimit epoch seconds", []string{"X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "1733130001"}, time.Second},
		{"x-ratelimit epoch ms", []string{"X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "1733130000500"}, time.Millisecond},
		{"alibaba TimeLeft", []string{"x-ratelimit-user-api", "Limit:20,Remain:5,TimeLeft:300"}, time.Millisecond},
		{"alibaba Reset", []string{"x-ratelimit-user-api", "Limit:20,Remain:5,Reset:1733130001"}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := new(Parser).ParseParts(200, header(tt.kv...), nil, now)
			if !o.Has(FieldReset) {
				t.Fatalf("no reset read from %v", tt.kv)
			}
			if o.ResetSlack != tt.slack {
				t.Errorf("ResetSlack = %v, want %v", o.ResetSlack, tt.slack)
			}
		})
	}
}
