package fakecloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// RoundTripper returns an [http.RoundTripper] that serves each request by
// calling c.ServeHTTP directly, in memory: no socket, no goroutine left
// behind once the handler returns. It is the way to use fakecloud inside a
// testing/synctest bubble (a loopback socket is not durably blocking, so it
// stalls the bubble's fake clock).
//
// RoundTrip returns when the handler writes its status (or returns), with
// a *http.Response whose Body streams what the handler writes, so latency
// and slow bodies take (fake) time as on a network. The request context is
// honoured: RoundTrip and Body.Read return its error when it is done, and
// the handler's delays end early, as they do when the body is closed. Close
// the body (or read it to the end) so no handler goroutine outlives the
// test, or a synctest bubble reports a deadlock. A dropped connection (Faults.DropRate)
// shows as io.ErrUnexpectedEOF from Body.Read after half the body. The
// request body is closed once the handler returns.
func (c *Cloud) RoundTripper() http.RoundTripper {
	return &memTransport{h: c}
}

// Client returns an *http.Client using [Cloud.RoundTripper].
func (c *Cloud) Client() *http.Client {
	return &http.Client{Transport: c.RoundTripper()}
}

// memTransport serves requests with an in-memory handler call.
type memTransport struct {
	h http.Handler
}

var _ http.RoundTripper = (*memTransport)(nil)

// errBodyClosed is returned by reading a closed in-memory body.
var errBodyClosed = errors.New("http: read on closed response body")

func (t *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("fakecloud: nil Request.URL")
	}
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	// The handler's context also ends when the client closes the body, as
	// a server's does when the connection goes away.
	sctx, cancel := context.WithCancel(ctx)
	sreq := req.Clone(sctx)
	// On the wire a header's name loses its case and the server
	// canonicalises it; SDKs that set lower-case names directly in the map
	// (the v2 SDK's x-acs-action) rely on that.
	sreq.Header = make(http.Header, len(req.Header))
	for k, v := range req.Header {
		sreq.Header[http.CanonicalHeaderKey(k)] = append(sreq.Header[http.CanonicalHeaderKey(k)], v...)
	}
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "192.0.2.1:49152"
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	w := newMemWriter()
	go func() {
		var err error
		defer func() {
			cancel()
			closeBody(req)
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					err = io.ErrUnexpectedEOF
				} else {
					err = fmt.Errorf("fakecloud: handler panic: %v", p)
				}
			}
			w.finish(err)
		}()
		t.h.ServeHTTP(w, sreq)
	}()

	select {
	case <-w.headerDone:
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	w.mu.Lock()
	status, header, err := w.status, w.snapshot, w.headerErr
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	resp := &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          &memBody{w: w, ctx: ctx, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}
	if n, err := strconv.ParseInt(header.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead {
		resp.Body = http.NoBody
		cancel()
	}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// memWriter is an http.ResponseWriter and http.Flusher that buffers the
// body for a memBody. Header is used by the handler goroutine only; mu
// guards the rest.
type memWriter struct {
	header http.Header

	mu          sync.Mutex
	wroteHeader bool
	status      int
	snapshot    http.Header
	headerErr   error         // the handler failed before writing a status
	headerDone  chan struct{} // closed once status and snapshot are set
	buf         []byte        // written, not yet read
	done        bool          // the handler returned
	err         error         // why the body ends early; nil means io.EOF
	closed      bool          // the reader closed the body
	notify      chan struct{} // closed and replaced on every change
}

func newMemWriter() *memWriter {
	return &memWriter{
		header:     make(http.Header),
		headerDone: make(chan struct{}),
		notify:     make(chan struct{}),
	}
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	if code < 200 && code >= 100 {
		return // informational: nothing to pass on
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

// writeHeaderLocked fixes the status and header once.
func (w *memWriter) writeHeaderLocked(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	w.status = code
	w.snapshot = w.header.Clone()
	close(w.headerDone)
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(http.StatusOK)
	if w.closed {
		return 0, errBodyClosed
	}
	w.buf = append(w.buf, p...)
	w.signalLocked()
	return len(p), nil
}

// Flush implements http.Flusher; writes are visible at once anyway.
func (w *memWriter) Flush() {}

// finish marks the handler done; err (if any) ends the body early.
func (w *memWriter) finish(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader && err != nil {
		w.headerErr = err
		w.wroteHeader = true
		close(w.headerDone)
	}
	w.writeHeaderLocked(http.StatusOK)
	w.done, w.err = true, err
	w.signalLocked()
}

func (w *memWriter) signalLocked() {
	close(w.notify)
	w.notify = make(chan struct{})
}

// memBody reads what a memWriter buffers.
type memBody struct {
	w      *memWriter
	ctx    context.Context
	cancel context.CancelFunc // ends the handler's context
}

func (b *memBody) Read(p []byte) (int, error) {
	w := b.w
	for {
		w.mu.Lock()
		switch {
		case w.closed:
			w.mu.Unlock()
			return 0, errBodyClosed
		case len(w.buf) > 0:
			n := copy(p, w.buf)
			w.buf = w.buf[n:]
			w.mu.Unlock()
			return n, nil
		case w.done:
			err := w.err
			w.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		ch := w.notify
		w.mu.Unlock()
		select {
		case <-ch:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
}

// Close discards the rest of the body and ends the handler's context.
func (b *memBody) Close() error {
	b.cancel()
	b.w.mu.Lock()
	defer b.w.mu.Unlock()
	b.w.closed = true
	b.w.buf = nil
	return nil
}
