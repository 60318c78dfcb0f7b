package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/transport"
)

// nonceServer is a loopback server that counts the signature nonces it sees
// (RPC query SignatureNonce or V3 header x-acs-signature-nonce) and the
// connections they came on. The first request with the nonce named hangUp
// is read and its connection closed without an answer, as a server or a
// proxy dying after it took the request does; every other request is
// answered 200.
type nonceServer struct {
	*httptest.Server
	hangUp string

	mu     sync.Mutex
	seen   map[string]int
	conns  map[string]bool // remote addresses
	bodies []string        // what was wrong with a request's framing, if anything
}

func newNonceServer(t *testing.T, hangUp string) *nonceServer {
	s := &nonceServer{hangUp: hangUp, seen: map[string]int{}, conns: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *nonceServer) serve(w http.ResponseWriter, r *http.Request) {
	nonce := r.URL.Query().Get("SignatureNonce")
	if nonce == "" {
		nonce = r.Header.Get("x-acs-signature-nonce")
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen[nonce]++
	n := s.seen[nonce]
	s.conns[r.RemoteAddr] = true
	if r.ContentLength != 0 || len(r.TransferEncoding) != 0 || len(body) != 0 {
		s.bodies = append(s.bodies, fmt.Sprintf("%s with ContentLength %d, TransferEncoding %q, body %q",
			r.Method, r.ContentLength, r.TransferEncoding, body))
	}
	s.mu.Unlock()
	if nonce == s.hangUp && n == 1 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"RequestId":"1"}`)
}

func (s *nonceServer) count(nonce string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[nonce]
}

// nonceRequest returns a GET signed with nonce, in the RPC style (the nonce
// in the query) or the V3 style (in a header).
func nonceRequest(t *testing.T, ctx context.Context, base, style, nonce string) *http.Request {
	t.Helper()
	query := "Action=DescribeInstances&AccessKeyId=LTAI5tREPLAY&RegionId=cn-hangzhou&Signature=abc"
	if style == "rpc" {
		query += "&SignatureNonce=" + nonce
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if style == "v3" {
		req.Header.Set("x-acs-action", "DescribeInstances")
		req.Header.Set("x-acs-signature-nonce", nonce)
	}
	return req
}

// replayNext is a fresh clone of http.DefaultTransport, limited to one
// connection to the server so that a second request surely takes the first
// one's connection once it is idle.
func replayNext() *http.Transport {
	next := http.DefaultTransport.(*http.Transport).Clone()
	next.MaxConnsPerHost = 1
	return next
}

// get sends req through c and reads the answer; it reports whether the
// first connection it got was a reused one.
func get(c *http.Client, req *http.Request) (reused bool, err error) {
	var got bool
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !got {
			got, reused = true, info.Reused
		}
	}}
	resp, err := c.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil {
		return reused, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return reused, err
}

// TestSentOnceOverBrokenKeepAlive checks that a signed GET whose reused
// keep-alive connection breaks after the server took it is not sent again:
// net/http's Transport resends an idempotent request after such a break,
// with the same signature nonce, which the server has seen.
func TestSentOnceOverBrokenKeepAlive(t *testing.T) {
	for _, style := range []string{"rpc", "v3"} {
		t.Run(style, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			srv := newNonceServer(t, "victim")
			next := replayNext()
			defer next.CloseIdleConnections()
			client := &http.Client{Transport: transport.New(next, transport.Config{})}

			if _, err := get(client, nonceRequest(t, ctx, srv.URL, style, "warm")); err != nil {
				t.Fatalf("first request: %v", err)
			}
			reused, err := get(client, nonceRequest(t, ctx, srv.URL, style, "victim"))
			if !reused {
				t.Fatal("the second request did not reuse the first one's connection")
			}
			if n := srv.count("victim"); n != 1 {
				t.Errorf("the server saw the nonce %d times, want 1", n)
			}
			if err == nil {
				t.Error("the call succeeded: the caller got the answer to a resend")
			}
		})
	}
}

// TestSentOnceKeepsKeepAlive checks that signed GETs still share one
// connection, and reach the server with no body and no chunked encoding.
func TestSentOnceKeepsKeepAlive(t *testing.T) {
	for _, style := range []string{"rpc", "v3"} {
		t.Run(style, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			srv := newNonceServer(t, "")
			next := replayNext()
			next.MaxConnsPerHost = 0 // a connection lost would show as a second one
			defer next.CloseIdleConnections()
			client := &http.Client{Transport: transport.New(next, transport.Config{})}
			for i := range 5 {
				reused, err := get(client, nonceRequest(t, ctx, srv.URL, style, "n"+string(rune('0'+i))))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if i > 0 && !reused {
					t.Errorf("request %d did not reuse the connection", i)
				}
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.conns) != 1 {
				t.Errorf("the server saw %d connections, want 1", len(srv.conns))
			}
			for _, b := range srv.bodies {
				t.Errorf("the server got a body: %s", b)
			}
		})
	}
}

// recordNext keeps the request it was handed and answers 200.
type recordNext struct{ got *http.Request }

func (r *recordNext) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = req
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// TestSentOnceTouchesOnlyNonces checks what the Transport hands the next
// RoundTripper: the caller's own request unless it is a replayable one
// carrying a signature nonce, and never a change to the caller's request.
func TestSentOnceTouchesOnlyNonces(t *testing.T) {
	const base = "http://ecs.cn-hangzhou.aliyuncs.com/?Action=DescribeInstances&AccessKeyId=LTAI5tREPLAY&RegionId=cn-hangzhou"
	newReq := func(method, query string, body io.Reader) *http.Request {
		req, err := http.NewRequest(method, base+query, body)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	idempotent := newReq(http.MethodPost, "&SignatureNonce=x", strings.NewReader("a=b"))
	idempotent.Header.Set("Idempotency-Key", "k")
	tests := []struct {
		name    string
		req     *http.Request
		guarded bool // sent as a copy that net/http will not resend
	}{
		{"GET without a nonce", newReq(http.MethodGet, "", nil), false},
		{"GET with a nonce", newReq(http.MethodGet, "&SignatureNonce=x", nil), true},
		{"GET with a nonce first", newReq(http.MethodGet, "", nil), true},
		{"GET with a lookalike", newReq(http.MethodGet, "&XSignatureNonce=x", nil), false},
		{"HEAD with a nonce", newReq(http.MethodHead, "&SignatureNonce=x", http.NoBody), true},
		{"POST with a nonce", newReq(http.MethodPost, "&SignatureNonce=x", http.NoBody), false},
		{"POST with a nonce, a body and an Idempotency-Key", idempotent, true},
	}
	tests[2].req.URL.RawQuery = "SignatureNonce=x&" + tests[2].req.URL.RawQuery
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.req
			next := new(recordNext)
			resp, err := transport.New(next, transport.Config{}).RoundTrip(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if guarded := next.got != tt.req; guarded != tt.guarded {
				t.Errorf("sent a copy: %v, want %v", guarded, tt.guarded)
			}
			if resp.Request != tt.req {
				t.Error("the answer's Request is not the caller's")
			}
			if tt.req.Body != before.Body || tt.req.GetBody == nil != (before.GetBody == nil) || tt.req.ContentLength != before.ContentLength {
				t.Error("the caller's request was changed")
			}
			if tt.guarded && (next.got.GetBody != nil || next.got.Body == nil || next.got.Body == http.NoBody) {
				t.Errorf("the copy is replayable: Body %v, GetBody set %v", next.got.Body, next.got.GetBody != nil)
			}
		})
	}
}
