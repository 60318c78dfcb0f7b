package quota

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

const aliThrottle = `{"RequestId":"6C3B5E6A","HostId":"ecs.aliyuncs.com","Code":"Throttling.User","Message":"Request was denied due to user flow control.","Recommend":"https://api.aliyun.com/troubleshoot?q=Throttling.User"}`

func TestBodyCode(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		code  string
		found bool
		bad   bool
	}{
		{"alibaba", aliThrottle, "Throttling.User", true, false},
		{"code not first", `{"RequestId":"x","Nested":{"Code":"Inner","a":[1,{"b":"}"}]},"Code":"Throttling.Api"}`, "Throttling.Api", true, false},
		{"lower case", `{"code":"Throttling"}`, "Throttling", true, false},
		{"white space", " \r\n{ \"Code\" :\t\"ServiceUnavailable\" }", "ServiceUnavailable", true, false},
		{"byte order mark", "\xef\xbb\xbf{\"Code\":\"Throttling\"}", "Throttling", true, false},
		{"escapes", `{"Code":"Throttling\u002eUser"}`, "Throttling.User", true, false},
		{"escaped key is not Code", `{"C\u006fde":"Throttling"}`, "", false, false},
		{"numeric code skipped", `{"code":429,"Code":"Throttling"}`, "Throttling", true, false},
		{"numeric code only", `{"code":429,"message":"slow down"}`, "", false, false},
		{"null code", `{"Code":null}`, "", false, false},
		{"nested only", `{"Data":{"Code":"Throttling"}}`, "", false, false},
		{"in a string only", `{"Message":"\"Code\":\"Throttling\""}`, "", false, false},
		{"truncated after code", `{"Code":"Throttling.Resource","Message":"abc`, "Throttling.Resource", true, false},
		{"truncated in code", `{"Code":"Throttl`, "", false, false},
		{"truncated before code", `{"RequestId":"abc`, "", false, false},
		{"unknown code", `{"Code":"InvalidParameter"}`, "InvalidParameter", true, false},
		{"empty code", `{"Code":""}`, "", true, true},
		{"long code", `{"Code":"` + strings.Repeat("x", 200) + `"}`, "", true, true},
		{"control byte", `{"Code":"a\u0001b"}`, "", true, true},
		{"bad escape", `{"Code":"a\qb"}`, "", true, true},
		{"xml", `<?xml version="1.0" encoding="UTF-8"?><Error><RequestId>x</RequestId><Code>Throttling.User</Code></Error>`, "Throttling.User", true, false},
		{"xml unterminated", `<Error><Code>Throttling`, "", false, false},
		{"xml long", `<Error><Code>` + strings.Repeat("x", 200) + `</Code></Error>`, "", true, true},
		{"html", `<html><body>503 Service Temporarily Unavailable</body></html>`, "", false, false},
		{"array", `[{"Code":"Throttling"}]`, "", false, false},
		{"garbage", "\x00\xff{{{", "", false, false},
		{"empty", "", "", false, false},
		{"unbalanced", `{"a":]]]]]],"Code":"Throttling"}`, "", false, false},
		{"deep nesting", `{"a":` + strings.Repeat("[", 100000) + `,"Code":"Throttling"}`, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, found, bad := bodyCode([]byte(tt.body))
			if code != tt.code || found != tt.found || bad != tt.bad {
				t.Fatalf("bodyCode = %q, %v, %v; want %q, %v, %v", code, found, bad, tt.code, tt.found, tt.bad)
			}
		})
	}
}

func TestBodyCodeAllocs(t *testing.T) {
	b := []byte(aliThrottle)
	if n := testing.AllocsPerRun(100, func() { bodyCode(b) }); n != 0 {
		t.Fatalf("bodyCode of a known code: %v allocs, want 0", n)
	}
}

func TestThrottleCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"Throttling": true, "Throttling.User": true, "Throttling.Api": true, "Throttling.Resource": true,
		"Rejected.Throttling": true, "throttling.user": true, "Throttling.Concurrent": true,
		"ThrottlingX": false, "ServiceUnavailable": false, "": false, "Throttlin": false,
	} {
		if got := IsThrottleCode(code); got != want {
			t.Errorf("IsThrottleCode(%q) = %v", code, got)
		}
	}
	if !IsTransientCode("ServiceUnavailable") || IsTransientCode("Throttling") {
		t.Errorf("IsTransientCode wrong")
	}
}

func TestClassify(t *testing.T) {
	custom := &Parser{ThrottleCodes: []string{"Flow.Limited"}, TransientCodes: []string{"InternalError"}}
	tests := []struct {
		name      string
		p         *Parser
		status    int
		h         http.Header
		body      string
		code      string
		throttled bool
		transient bool
		sources   Signal
	}{
		{"ok", nil, 200, nil, "", "", false, false, 0},
		{"alibaba 400 throttle", nil, 400, nil, aliThrottle, "Throttling.User", true, false, SignalBody},
		{"alibaba 503 throttle", nil, 503, nil, `{"Code":"Throttling"}`, "Throttling", true, false, SignalBody},
		{"alibaba 429 throttle", nil, 429, nil, `{"Code":"Throttling.Api"}`, "Throttling.Api", true, false, SignalBody},
		{"rejected", nil, 400, nil, `{"Code":"Rejected.Throttling"}`, "Rejected.Throttling", true, false, SignalBody},
		{"429 no body", nil, 429, nil, "", "", true, false, SignalStatus},
		{"429 other code", nil, 429, nil, `{"Code":"ServiceUnavailable"}`, "ServiceUnavailable", true, false, SignalBody | SignalStatus},
		{"503 ServiceUnavailable", nil, 503, nil, `{"Code":"ServiceUnavailable"}`, "ServiceUnavailable", false, true, SignalBody},
		{"500 ServiceUnavailable", nil, 500, nil, `{"Code":"ServiceUnavailable"}`, "ServiceUnavailable", false, true, SignalBody},
		{"503 no body", nil, 503, nil, "", "", false, true, SignalStatus},
		{"503 html", nil, 503, nil, "<html>down</html>", "", false, true, SignalStatus},
		{"502", nil, 502, nil, "", "", false, true, SignalStatus},
		{"504", nil, 504, nil, "", "", false, true, SignalStatus},
		{"500", nil, 500, nil, "", "", false, false, 0},
		{"400 other code", nil, 400, nil, `{"Code":"InvalidParameter"}`, "InvalidParameter", false, false, SignalBody},
		{"200 with a throttle body is not read", nil, 200, nil, aliThrottle, "", false, false, 0},
		{"200 exhausted is not a throttle", nil, 200, header("X-RateLimit-Remaining", "0"), "", "", false, false, SignalXRateLimit},
		{"403 exhausted (GitHub)", nil, 403, header("X-RateLimit-Remaining", "0"), `{"message":"API rate limit exceeded"}`, "", true, false, SignalXRateLimit | SignalStatus},
		{"403 with retry hint (GitHub)", nil, 403, header("Retry-After", "60"), "", "", true, false, SignalRetryAfter | SignalStatus},
		{"403 otherwise", nil, 403, header("X-RateLimit-Remaining", "10"), `{"Code":"Forbidden.RAM"}`, "Forbidden.RAM", false, false, SignalXRateLimit | SignalBody},
		{"custom throttle code", custom, 400, nil, `{"Code":"flow.limited"}`, "flow.limited", true, false, SignalBody},
		{"custom transient code", custom, 500, nil, `{"Code":"InternalError"}`, "InternalError", false, true, SignalBody},
		{"builtin codes still known", custom, 400, nil, aliThrottle, "Throttling.User", true, false, SignalBody},
		{"unknown code on zero parser", nil, 400, nil, `{"Code":"Flow.Limited"}`, "Flow.Limited", false, false, SignalBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.p.ParseParts(tt.status, tt.h, []byte(tt.body), now)
			invariants(t, o, now, 0)
			if o.Code != tt.code || o.Throttled != tt.throttled || o.Transient != tt.transient || o.Signals != tt.sources || o.Status != tt.status {
				t.Fatalf("got code %q throttled %v transient %v sources %07b status %d; want %q %v %v %07b",
					o.Code, o.Throttled, o.Transient, o.Signals, o.Status, tt.code, tt.throttled, tt.transient, tt.sources)
			}
		})
	}
}

// body is a response body that records what happened to it.
type body struct {
	r      io.Reader
	reads  int
	closed bool
}

func (b *body) Read(p []byte) (int, error) { b.reads++; return b.r.Read(p) }
func (b *body) Close() error               { b.closed = true; return nil }

func TestParseRestoresBody(t *testing.T) {
	big := `{"Code":"Throttling.User","Pad":"` + strings.Repeat("x", 100<<10) + `"}`
	errRead := errors.New("connection reset")
	tests := []struct {
		name    string
		p       Parser
		status  int
		r       io.Reader
		want    string
		wantErr error
		code    string
	}{
		{"small", Parser{}, 400, strings.NewReader(aliThrottle), aliThrottle, nil, "Throttling.User"},
		{"larger than the cap", Parser{}, 400, strings.NewReader(big), big, nil, "Throttling.User"},
		{"larger than a small cap", Parser{MaxBody: 16}, 400, strings.NewReader(aliThrottle), aliThrottle, nil, ""},
		{"cap exactly the size", Parser{MaxBody: int64(len(aliThrottle))}, 400, strings.NewReader(aliThrottle), aliThrottle, nil, "Throttling.User"},
		{"one byte at a time", Parser{}, 429, iotest.OneByteReader(strings.NewReader(aliThrottle)), aliThrottle, nil, "Throttling.User"},
		{"data with EOF", Parser{}, 400, iotest.DataErrReader(strings.NewReader(aliThrottle)), aliThrottle, nil, "Throttling.User"},
		{"read error before the cap", Parser{}, 503,
			io.MultiReader(strings.NewReader(`{"Code":"ServiceUnavailable"`), iotest.ErrReader(errRead)),
			`{"Code":"ServiceUnavailable"`, errRead, "ServiceUnavailable"},
		{"read error after the cap", Parser{MaxBody: 8}, 503,
			io.MultiReader(strings.NewReader(`{"Code":"ServiceUnavailable"`), iotest.ErrReader(errRead)),
			`{"Code":"ServiceUnavailable"`, errRead, ""},
		{"read error at once", Parser{}, 503, iotest.ErrReader(errRead), "", errRead, ""},
		{"timeout reader", Parser{}, 400, iotest.TimeoutReader(strings.NewReader(aliThrottle)), aliThrottle, iotest.ErrTimeout, "Throttling.User"},
		{"not read when negative", Parser{MaxBody: -1}, 400, strings.NewReader(aliThrottle), aliThrottle, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := &body{r: tt.r}
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{}, Body: orig, ContentLength: -1}
			o := tt.p.Parse(resp, now)
			invariants(t, o, now, 0)
			if o.Code != tt.code {
				t.Errorf("Code = %q, want %q", o.Code, tt.code)
			}
			got, err := io.ReadAll(resp.Body)
			if string(got) != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("body = %d bytes, %v; want %d bytes, %v", len(got), err, len(tt.want), tt.wantErr)
			}
			if err := resp.Body.Close(); err != nil || !orig.closed {
				t.Errorf("Close = %v, original closed %v", err, orig.closed)
			}
		})
	}
}

func TestParseLeavesSuccessBodyAlone(t *testing.T) {
	for _, status := range []int{200, 204, 301, 399} {
		orig := &body{r: strings.NewReader(aliThrottle)}
		resp := &http.Response{StatusCode: status, Header: header("Retry-After", "1"), Body: orig}
		o := Parse(resp, now)
		if resp.Body != io.ReadCloser(orig) || orig.reads != 0 || o.Code != "" || o.Throttled {
			t.Errorf("status %d: body replaced or read (%d reads), %+v", status, orig.reads, o)
		}
	}
}

func TestParseOddResponses(t *testing.T) {
	if o := Parse(nil, now); !o.At.Equal(now) || o.Status != 0 {
		t.Errorf("Parse(nil) = %+v", o)
	}
	for _, b := range []io.ReadCloser{nil, http.NoBody} {
		resp := &http.Response{StatusCode: 429, Body: b}
		if o := Parse(resp, now); !o.Throttled || resp.Body != b {
			t.Errorf("body %v: %+v, body replaced", b, o)
		}
	}
	// A ContentLength that lies is not trusted.
	resp := &http.Response{StatusCode: 400, Body: io.NopCloser(strings.NewReader(aliThrottle)), ContentLength: 3}
	if o := Parse(resp, now); o.Code != "Throttling.User" {
		t.Errorf("lying ContentLength: Code = %q", o.Code)
	}
	if got, _ := io.ReadAll(resp.Body); string(got) != aliThrottle {
		t.Errorf("lying ContentLength: body %q", got)
	}
	// After a read error the caller sees the error once, as it would have,
	// and then reads go on to the original body.
	errRead := errors.New("flaky")
	resp = &http.Response{StatusCode: 400, ContentLength: -1, Body: io.NopCloser(&flaky{parts: []string{`{"Code":"Thr`, "", `ottling"}`}, err: errRead})}
	if o := Parse(resp, now); o.Code != "" {
		t.Errorf("flaky: Code = %q", o.Code)
	}
	var got []byte
	var errs int
	for range 10 {
		buf := make([]byte, 64)
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, errRead) {
			errs++
		}
		if err == io.EOF {
			break
		}
	}
	if string(got) != `{"Code":"Throttling"}` || errs != 1 {
		t.Errorf("flaky: body %q, %d errors", got, errs)
	}
	// A reader that never makes progress does not hang Parse.
	resp = &http.Response{StatusCode: 400, Body: io.NopCloser(stuck{})}
	Parse(resp, now)
}

// flaky returns its parts in turn, an empty part as err, then io.EOF.
type flaky struct {
	parts []string
	err   error
}

func (f *flaky) Read(p []byte) (int, error) {
	if len(f.parts) == 0 {
		return 0, io.EOF
	}
	s := f.parts[0]
	if s == "" {
		f.parts = f.parts[1:]
		return 0, f.err
	}
	n := copy(p, s)
	if f.parts[0] = s[n:]; f.parts[0] == "" {
		f.parts = f.parts[1:]
	}
	return n, nil
}

type stuck struct{}

func (stuck) Read([]byte) (int, error) { return 0, nil }

func FuzzBodyCode(f *testing.F) {
	for _, s := range []string{aliThrottle, `{"code":"Throttling"}`, `<Error><Code>Throttling.User</Code></Error>`,
		`{"Code":"a\u0001b"}`, `{"a":[[[{"Code":"x"}]]],"Code":"Throttling"}`, "\x00\xff{{{", `{"Code":"Thr`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		code, found, bad := bodyCode(b)
		if (code != "") != (found && !bad) || len(code) > maxCode {
			t.Fatalf("bodyCode = %q, %v, %v", code, found, bad)
		}
		for _, c := range []byte(code) {
			if c < ' ' || c >= 0x7f {
				t.Fatalf("code %q has byte %#x", code, c)
			}
		}
		for _, mb := range []int64{0, 7} {
			resp := &http.Response{StatusCode: 400, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: -1}
			p := Parser{MaxBody: mb}
			o := p.Parse(resp, now)
			invariants(t, o, now, 0)
			if got, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(got, b) {
				t.Fatalf("body not restored: %q, %v", got, err)
			}
		}
	})
}
