package v1sdk

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"

	"github.com/tollgate-go/tollgate/aliyun"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// Call makes one SDK call on client under the retry policy p (nil means
// retry's defaults), calling op again after a throttle or a transient
// failure, and returns what the last attempt returned. client must have
// been routed through tollgate by Wrap or Share, and op must call the SDK
// operation on that client, so that each attempt is signed afresh with a
// new nonce: the server refuses a resent signed request.
//
//	resp, err := v1sdk.Call(ctx, &client.Client, nil, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
//		return client.DescribeInstances(req)
//	})
//
// The v1 SDK takes no context, so Call carries ctx to the Transport
// itself: for the length of each attempt, the requests client sends go
// with ctx's values (a tenant key set by quota.WithKey, and whatever a
// later layer reads), its deadline and its cancellation, as well as the
// SDK's own read timeout. A wait for quota that would pass ctx's deadline
// is refused at once, and a call returns soon after ctx ends, with an
// error matching context.DeadlineExceeded or context.Canceled; nothing is
// sent after that. Each attempt spends the retry budget of the tenant its
// request goes to.
//
// Errors from op are passed through aliyun.WrapError, so the error Call
// returns (a *retry.GiveUpError when it gives up) names the SDK's error
// code and status, holds no credential in its text, and still unwraps to
// the SDK's own error.
//
// A client is in one Call at a time, as the SDK needs anyway (see Wrap):
// a Call on a client that is in another Call fails at once.
func Call[T any](ctx context.Context, client *sdk.Client, p *retry.Policy, op func(context.Context) (T, error)) (T, error) {
	ct, err := routed(client)
	if err != nil {
		var zero T
		return zero, err
	}
	return aliyun.Call(ctx, p, func(ctx context.Context) (T, error) {
		release, err := ct.bind(ctx)
		if err != nil {
			var zero T
			return zero, retry.Permanent(err)
		}
		defer release()
		return op(ctx)
	})
}

// errBusy is Call's error for a client that is in another Call.
var errBusy = errors.New("v1sdk: client is in another Call: give each goroutine its own client (see Share)")

// routed returns the clientTransport Wrap or Share gave client.
func routed(client *sdk.Client) (*clientTransport, error) {
	if client == nil || client.GetConfig() == nil {
		return nil, errors.New("v1sdk: Call needs an initialised *sdk.Client")
	}
	ct, ok := client.GetConfig().Transport.(*clientTransport)
	if !ok {
		return nil, errors.New("v1sdk: client is not routed through tollgate: Wrap or Share it first")
	}
	return ct, nil
}

// clientTransport is one v1 client's way into the tollgate Transport it
// shares with the account's other clients. The v1 SDK builds its requests
// without a context (http.NewRequest), so Call binds the client's
// clientTransport to each attempt's context, and RoundTrip hands the
// Transport each request with that context joined to the request's own
// (which carries the SDK's read timeout). Outside a Call, requests go as
// they are.
type clientTransport struct {
	next *transport.Transport

	mu  sync.Mutex      // guards ctx
	ctx context.Context // the attempt's, while one is bound
}

var _ http.RoundTripper = (*clientTransport)(nil)

// bind makes the client's requests carry ctx until release is called.
// Everything joined to ctx is released with it.
func (c *clientTransport) bind(ctx context.Context) (release func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx != nil {
		cancel()
		return nil, errBusy
	}
	c.ctx = ctx
	return func() {
		c.mu.Lock()
		c.ctx = nil
		c.mu.Unlock()
		cancel()
	}, nil
}

// RoundTrip sends req through the Transport with the bound context, if
// any. It does not modify req: a bound request goes as a shallow copy.
func (c *clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	ctx := c.ctx
	c.mu.Unlock()
	if ctx == nil {
		return c.next.RoundTrip(req)
	}
	return c.next.RoundTrip(req.WithContext(join(ctx, req.Context())))
}

// CloseIdleConnections closes the idle connections of the Transport the
// client shares, as http.Client.CloseIdleConnections asks.
func (c *clientTransport) CloseIdleConnections() { c.next.CloseIdleConnections() }

// join returns a context with call's values that ends when call or req
// ends, with the earlier of their deadlines. Its resources are released
// when it ends, at the latest when call does.
func join(call, req context.Context) context.Context {
	if req.Done() == nil {
		return call
	}
	ctx, cancel := context.WithCancelCause(call)
	cancelDeadline := context.CancelFunc(func() {})
	if d, ok := req.Deadline(); ok {
		if cd, ok := call.Deadline(); !ok || d.Before(cd) {
			ctx, cancelDeadline = context.WithDeadline(ctx, d)
		}
	}
	stop := context.AfterFunc(req, func() { cancel(context.Cause(req)) })
	context.AfterFunc(ctx, func() {
		stop()
		cancel(nil)
		cancelDeadline()
	})
	return ctx
}
