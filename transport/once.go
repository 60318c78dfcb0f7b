package transport

import (
	"io"
	"net/http"
	"strings"
)

// noResend returns the request to hand the next RoundTripper for req: req
// itself, or, if req carries a signature nonce (SignatureNonce in the query,
// or an x-acs-signature-nonce header) and net/http's Transport could resend
// it, a shallow copy that net/http will not resend.
//
// net/http resends a request after its reused keep-alive connection broke
// before the answer, although the server may have taken it, when the
// request is replayable: its Body is nil or NoBody or it has GetBody, and
// its method is GET, HEAD, OPTIONS or TRACE or it has an Idempotency-Key
// header (isReplayable in net/http's request.go, shouldRetryRequest in its
// transport.go). The copy breaks the first condition: GetBody is dropped,
// and a bodiless request gets an empty, non-nil Body (emptyBody). net/http
// reads one byte from such a body when the method is one that usually has
// none (probeRequestBody: a goroutine and a 200 ms timer), finds it empty
// and writes the request as it would have: no Content-Length, no chunked
// encoding, the connection kept alive. For the other methods it would send
// the empty body chunked, so a bodiless TRACE, POST, PUT or PATCH that has
// an Idempotency-Key is handed on as it is, and may be resent.
func noResend(req *http.Request) *http.Request {
	if !replayable(req) || !hasNonce(req) {
		return req
	}
	bodiless := req.Body == nil || req.Body == http.NoBody
	if bodiless && !probesBody(req.Method) {
		return req
	}
	out := new(http.Request)
	*out = *req
	out.GetBody = nil
	if bodiless {
		out.Body = emptyBody{}
	}
	return out
}

// replayable reports whether net/http's Transport may resend req after a
// broken keep-alive connection: net/http's Request.isReplayable.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, ok := req.Header["Idempotency-Key"]
	if !ok {
		_, ok = req.Header["X-Idempotency-Key"]
	}
	return ok
}

// probesBody reports whether net/http's Transport reads a byte of the body
// of a request of this method with an unknown length, and sends it without
// a body if it is empty: net/http's requestMethodUsuallyLacksBody.
func probesBody(method string) bool {
	switch method {
	case "", "GET", "HEAD", "DELETE", "OPTIONS", "PROPFIND", "SEARCH":
		return true
	}
	return false
}

// hasNonce reports whether req carries a signature nonce: SignatureNonce in
// the query (RPC style) or an x-acs-signature-nonce header (V3 style).
func hasNonce(req *http.Request) bool {
	for raw := req.URL.RawQuery; raw != ""; {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if strings.HasPrefix(kv, "SignatureNonce=") {
			return true
		}
	}
	return header(req.Header, "X-Acs-Signature-Nonce", "x-acs-signature-nonce") != ""
}

// emptyBody is the Body noResend gives a bodiless request: empty, and not
// nil, so that net/http does not resend the request.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }
