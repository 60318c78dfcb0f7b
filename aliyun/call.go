package aliyun

import (
	"context"

	"github.com/tollgate-go/tollgate/retry"
)

// Call makes one SDK call under the retry policy p (nil means retry's
// defaults), calling op again after a throttle or a transient failure. op
// must call the SDK operation itself, with the context it is given, so
// that each attempt is signed afresh with a new nonce (the server refuses
// a resent signed request) and carries the call's context to the
// Transport: its deadline bounds the wait for quota, and the tenant the
// Transport names for the request is the one whose retry budget the call
// spends.
//
//	resp, err := aliyun.Call(ctx, nil, func(ctx context.Context) (map[string]any, error) {
//		return client.CallApiWithCtx(ctx, params, req, runtime)
//	})
//
// Errors from op are passed through WrapError, so the error Call returns
// (a *retry.GiveUpError when it gives up) names the SDK's error code and
// status, holds no credential in its text, and still unwraps to the SDK's
// own error. For the v1 SDK, whose calls take no context, use
// aliyun/v1sdk's Call.
func Call[T any](ctx context.Context, p *retry.Policy, op func(context.Context) (T, error)) (T, error) {
	return retry.DoValue(ctx, p, func(ctx context.Context) (T, error) {
		v, err := op(ctx)
		return v, WrapError(err)
	})
}
