package quota

import "context"

type keyCtx struct{}

// WithKey returns a copy of ctx that names the tenant of the requests made
// with it. The transport and retry packages read it back with KeyFrom; an
// explicit key wins over any key they would derive from the request.
func WithKey(ctx context.Context, k Key) context.Context {
	return context.WithValue(ctx, keyCtx{}, k)
}

// KeyFrom returns the key set by WithKey, if any.
func KeyFrom(ctx context.Context) (Key, bool) {
	k, ok := ctx.Value(keyCtx{}).(Key)
	return k, ok
}
