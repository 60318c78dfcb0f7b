package aliyun

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/transport"
)

// DefaultV2Timeout is the HTTPClient's per-call time limit when its Timeout
// is zero: the v2 SDK's default connect and read timeouts (5 s and 10 s)
// added, as the SDK's own client does.
const DefaultV2Timeout = 15 * time.Second

// HTTPClient routes the v2 SDK's calls through a tollgate Transport. It
// satisfies the v2 SDK's Config.HttpClient interface,
//
//	Call(*http.Request, *http.Transport) (*http.Response, error)
//
// without this package importing that SDK:
//
//	config.HttpClient = aliyun.NewHTTPClient(transport.Config{})
//
// The SDK hands each call an *http.Transport built from its runtime options
// (proxies, TLS, read timeout). Like the SDK's own client, HTTPClient keeps
// the first one it is given and sends every request through it, so one
// connection pool serves all calls.
//
// The SDK's own retries still apply around Call: in darabonba-openapi
// v2.1 they are Config.RetryOptions (off unless set; RuntimeOptions'
// Autoretry and MaxAttempts are no longer read). Leave them off and retry
// with this package's Call instead, which backs off and respects the budget.
//
// An HTTPClient is safe for concurrent use; its fields must not change after
// its first Call. The v2 SDK's own Client is not (its calls write its
// fields): give each goroutine its own SDK client, all with one HTTPClient,
// so they share the tenants' limiters.
type HTTPClient struct {
	// Config sets up the tollgate Transport, as transport.New's cfg.
	Config transport.Config

	// Next, if set, is the RoundTripper the tollgate Transport sends
	// through instead of the SDK's *http.Transport (for tests and proxies of
	// your own).
	Next http.RoundTripper

	// Timeout limits each call, the wait for quota included. With a
	// custom HttpClient the SDK applies no time limit of its own. Zero means
	// DefaultV2Timeout; a negative value means no limit.
	Timeout time.Duration

	once   sync.Once
	next   atomic.Pointer[http.Transport] // the first transport the SDK gave
	tg     *transport.Transport
	client *http.Client
}

// NewHTTPClient returns an HTTPClient whose Transport is made from cfg.
func NewHTTPClient(cfg transport.Config) *HTTPClient {
	return &HTTPClient{Config: cfg}
}

func (c *HTTPClient) init() {
	c.once.Do(func() {
		c.tg = transport.New(roundTripperFunc(c.send), c.Config)
		timeout := c.Timeout
		switch {
		case timeout == 0:
			timeout = DefaultV2Timeout
		case timeout < 0:
			timeout = 0
		}
		c.client = &http.Client{Transport: c.tg, Timeout: timeout}
	})
}

// Call sends req through the tollgate Transport. The SDK calls it once per
// attempt, with a freshly signed request.
func (c *HTTPClient) Call(req *http.Request, tr *http.Transport) (*http.Response, error) {
	c.init()
	if tr != nil {
		c.next.CompareAndSwap(nil, tr)
	}
	return c.client.Do(req)
}

// Transport returns the tollgate Transport the calls go through, to read its
// tenants' limiters.
func (c *HTTPClient) Transport() *transport.Transport {
	c.init()
	return c.tg
}

// CloseIdleConnections closes the idle connections of the SDK transport in
// use.
func (c *HTTPClient) CloseIdleConnections() {
	if next := c.next.Load(); next != nil {
		next.CloseIdleConnections()
	}
}

func (c *HTTPClient) send(req *http.Request) (*http.Response, error) {
	if c.Next != nil {
		return c.Next.RoundTrip(req)
	}
	next := c.next.Load()
	if next == nil {
		return http.DefaultTransport.RoundTrip(req)
	}
	return next.RoundTrip(req)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
