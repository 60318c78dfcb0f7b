package quota

import (
	"net/http"
	"testing"
	"time"
)

// now is the time every test answer arrives: 1733130000 in epoch seconds.
var now = time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC)

// header builds a header from name, value pairs; repeated names add lines.
func header(kv ...string) http.Header {
	h := make(http.Header)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// want is the part of an Observation a table row checks. Only the fields in
// known are compared; Signals and Malformed always are.
type want struct {
	known      Field
	limit      int64
	window     time.Duration
	remaining  int64
	reset      time.Duration // ResetAt - now
	retryAfter time.Duration
	quotaID    string
	sources    Signal
	malformed  Signal
}

func check(t *testing.T, o Observation, w want) {
	t.Helper()
	if o.Known != w.known {
		t.Errorf("Known = %05b, want %05b (%+v)", o.Known, w.known, o)
	}
	if o.Signals != w.sources {
		t.Errorf("Signals = %07b, want %07b", o.Signals, w.sources)
	}
	if o.Malformed != w.malformed {
		t.Errorf("Malformed = %07b, want %07b", o.Malformed, w.malformed)
	}
	if o.QuotaID != w.quotaID {
		t.Errorf("QuotaID = %q, want %q", o.QuotaID, w.quotaID)
	}
	if o.Has(FieldLimit) && o.Limit != w.limit {
		t.Errorf("Limit = %d, want %d", o.Limit, w.limit)
	}
	if o.Has(FieldWindow) && o.Window != w.window {
		t.Errorf("Window = %v, want %v", o.Window, w.window)
	}
	if o.Has(FieldRemaining) && o.Remaining != w.remaining {
		t.Errorf("Remaining = %d, want %d", o.Remaining, w.remaining)
	}
	if o.Has(FieldReset) && o.ResetAt.Sub(now) != w.reset {
		t.Errorf("ResetAt = now%+v, want now%+v", o.ResetAt.Sub(now), w.reset)
	}
	if o.Has(FieldRetryAfter) && o.RetryAfter != w.retryAfter {
		t.Errorf("RetryAfter = %v, want %v", o.RetryAfter, w.retryAfter)
	}
}

// invariants checks what must hold for any answer whatsoever.
func invariants(t *testing.T, o Observation, at time.Time, maxHint time.Duration) {
	t.Helper()
	if maxHint <= 0 {
		maxHint = DefaultMaxHint
	}
	if !o.At.Equal(at) {
		t.Errorf("At = %v, want %v", o.At, at)
	}
	if o.RetryAfter < 0 || o.RetryAfter > maxHint {
		t.Errorf("RetryAfter = %v, outside [0, %v]", o.RetryAfter, maxHint)
	}
	if o.Remaining < 0 || o.Remaining > MaxCount || o.Limit < 0 || o.Limit > MaxCount {
		t.Errorf("Remaining = %d, Limit = %d, outside [0, MaxCount]", o.Remaining, o.Limit)
	}
	if o.Window < 0 || o.Window > MaxWindow {
		t.Errorf("Window = %v, outside [0, MaxWindow]", o.Window)
	}
	if o.Has(FieldWindow) && o.Window == 0 {
		t.Errorf("Window known but 0")
	}
	if o.Has(FieldReset) && (o.ResetAt.Before(at) || o.ResetAt.After(at.Add(maxHint))) {
		t.Errorf("ResetAt = at%+v, outside [at, at+%v]", o.ResetAt.Sub(at), maxHint)
	}
	if !o.Has(FieldReset) && !o.ResetAt.IsZero() {
		t.Errorf("ResetAt set but not known")
	}
	if !o.ResetSaid.IsZero() && (!o.Has(FieldReset) || o.ResetSaid.Before(o.ResetAt) ||
		!o.ResetSaid.Equal(o.ResetAt) && !o.ResetAt.Equal(at.Add(maxHint))) {
		t.Errorf("ResetSaid = at%+v with ResetAt at%+v: not the reset MaxHint capped", o.ResetSaid.Sub(at), o.ResetAt.Sub(at))
	}
	if o.Malformed&^o.Signals != 0 {
		t.Errorf("Malformed %07b not within Signals %07b", o.Malformed, o.Signals)
	}
	if o.Throttled && o.Transient {
		t.Errorf("both Throttled and Transient")
	}
	if len(o.Code) > maxCode || len(o.QuotaID) > maxQuotaID {
		t.Errorf("Code %q or QuotaID %q too long", o.Code, o.QuotaID)
	}
	if ra := o.RetryAt(); !ra.IsZero() && ra.After(at.Add(maxHint)) {
		t.Errorf("RetryAt = at%+v, past the cap", ra.Sub(at))
	}
}

// parseHeader parses a 200 answer with the given header.
func parseHeader(t *testing.T, h http.Header) Observation {
	t.Helper()
	var p Parser
	o := p.ParseParts(http.StatusOK, h, nil, now)
	invariants(t, o, now, 0)
	return o
}
