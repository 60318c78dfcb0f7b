package fakecloud

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is a decoded gateway answer.
type answer struct {
	status int
	header http.Header
	body   []byte
	code   string // Code of an error body
}

// call sends one RPC request for (ak, action) through rt and decodes it.
func call(t testing.TB, rt http.RoundTripper, ak, action string) answer {
	t.Helper()
	req, err := NewRequest(context.Background(), "http://ecs.aliyuncs.com", ak, action)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, rt, req)
}

// send sends req through rt and decodes the answer.
func send(t testing.TB, rt http.RoundTripper, req *http.Request) answer {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.StatusCode != http.StatusOK {
		var e ErrorBody
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("status %d, body %q: %v", resp.StatusCode, b, err)
		}
		a.code = e.Code
	}
	return a
}

// rpcRequest builds an RPC request with explicit parameters.
func rpcRequest(t testing.TB, params map[string]string) *http.Request {
	t.Helper()
	q := url.Values{}
	for k, v := range params {
		q.Set(k, v)
	}
	req, err := http.NewRequest(http.MethodPost, "http://ecs.aliyuncs.com/?"+q.Encode(), http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// clock is a settable clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// isoTime formats t as the SDK formats Timestamp.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func mustContain(t testing.TB, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}
