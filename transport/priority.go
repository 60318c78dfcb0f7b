package transport

import (
	"context"

	"github.com/tollgate-go/tollgate/adaptive"
)

// Priority is a request's class in its tenant's line (see
// adaptive.Priority): a higher class goes first, and each lower class
// keeps a floor share of the admissions while it has requests waiting
// (adaptive.Config.PriorityFloor, 10% by default), so a nightly batch that
// shares the account's quota neither delays a person at a console page
// nor starves.
type Priority = adaptive.Priority

// The classes, highest first. A request whose context says none is
// Default.
const (
	Interactive = adaptive.Interactive
	Default     = adaptive.Default
	Batch       = adaptive.Batch
)

// WithPriority returns ctx carrying the class p for the requests made with
// it: http.NewRequestWithContext's, or, on the v1 SDK path, those of a
// call made with v1sdk.Call(ctx, …), which carries ctx to the Transport.
//
// With Config.Store, the class orders this process's own line only: the
// store hands out the tenant's turns to the processes in the order they
// ask, whatever their classes, and a process's Interactive request waits
// behind the turns other processes' Batch requests already hold.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return adaptive.WithPriority(ctx, p)
}
