package fakecloud

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Server is a [Cloud] listening on a loopback port, in the style of
// httptest.Server. Its embedded Cloud gives Stats, SetQuota and the rest.
//
// Do not use a Server inside a testing/synctest bubble: network I/O is not
// durably blocking and stalls the bubble's clock. Use [Cloud.RoundTripper].
type Server struct {
	*Cloud

	// URL is the base URL, "http://127.0.0.1:port", with no trailing slash.
	URL string
	// Listener is the listener, on 127.0.0.1 port 0 (or [::1] without IPv4).
	Listener net.Listener
	// HTTPServer serves the Cloud; it may be changed before Start.
	HTTPServer *http.Server

	mu        sync.Mutex // guards started, closed, client
	started   bool
	closed    bool
	client    *http.Client
	serveDone chan struct{}
}

// shutdownGrace bounds how long Close waits for in-flight requests before
// closing their connections.
const shutdownGrace = 5 * time.Second

// NewServer starts a Server for cfg and registers its Close with
// tb.Cleanup. It calls tb.Fatalf if it cannot listen.
func NewServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s := NewUnstartedServer(tb, cfg)
	s.Start()
	return s
}

// NewUnstartedServer returns a Server for cfg, listening but not serving
// until Start, and registers its Close with tb.Cleanup. It calls tb.Fatalf
// if it cannot listen.
func NewUnstartedServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s, err := newServer(cfg)
	if err != nil {
		tb.Fatalf("fakecloud: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a Server for cfg on a loopback port, for programs that are
// not tests (the example, cmd/fakecloud). Call Close when done.
func Start(cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	s.Start()
	return s, nil
}

func newServer(cfg Config) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if l, err = net.Listen("tcp6", "[::1]:0"); err != nil {
			return nil, err
		}
	}
	c := New(cfg)
	return &Server{
		Cloud:      c,
		URL:        "http://" + l.Addr().String(),
		Listener:   l,
		HTTPServer: &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second},
		serveDone:  make(chan struct{}),
	}, nil
}

// Start starts serving. It panics if the Server was already started.
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("fakecloud: Server already started")
	}
	s.started = true
	if s.closed {
		close(s.serveDone)
		return
	}
	go func() {
		defer close(s.serveDone)
		_ = s.HTTPServer.Serve(s.Listener)
	}()
}

// Addr returns the listening address, "127.0.0.1:port", e.g. for the v1
// SDK's request.Domain.
func (s *Server) Addr() string {
	return s.Listener.Addr().String()
}

// Client returns an *http.Client that talks to the server over loopback
// (unlike [Cloud.Client], which is in memory). Close closes its idle
// connections.
func (s *Server) Client() *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = &http.Client{Transport: s.Transport()}
	}
	return s.client
}

// Transport returns a new HTTP transport, with connections of its own (64
// idle at most), that takes every request to the server whatever host its
// URL names: requests built for a real endpoint, such as
// http://ecs.cn-hangzhou.aliyuncs.com, reach the server unchanged, Host
// header and all. It speaks plain HTTP only. Each of several simulated
// processes takes its own; close its idle connections when done.
func (s *Server) Transport() *http.Transport {
	addr := s.Addr()
	var d net.Dialer
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 64,
	}
}

// Close stops the server: it stops accepting, waits up to 5 s for in-flight
// requests, then closes their connections. Close may be called more than
// once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	started, client := s.started, s.client
	s.mu.Unlock()

	if !started {
		_ = s.Listener.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := s.HTTPServer.Shutdown(ctx); err != nil {
		_ = s.HTTPServer.Close()
	}
	<-s.serveDone
	if client != nil {
		client.CloseIdleConnections()
	}
}

// Serve serves c on l until ctx is done, then shuts down gracefully
// (waiting up to 5 s for in-flight requests). It returns nil after a
// graceful shutdown, or the error that stopped serving.
func (c *Cloud) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
