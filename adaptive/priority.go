package adaptive

import "context"

// Priority is a caller's class in its tenant's line (see Wait): a higher
// class goes first, and each lower class keeps a floor share of the
// admissions while it has callers waiting (Config.PriorityFloor), so that
// it never starves. Within a class, callers go in order of first arrival.
// The zero Priority is Default.
type Priority int8

// The classes, highest first.
const (
	// Interactive is for a person waiting on the answer, e.g. a console
	// page.
	Interactive Priority = 1
	// Default is for callers that say nothing.
	Default Priority = 0
	// Batch is for work that can wait, e.g. a nightly sync.
	Batch Priority = -1
)

// classes is how many classes there are (the length of
// Snapshot.Classes); Index indexes them, highest first.
const classes = 3

// Index returns p's index among the classes, highest first: 0 for
// Interactive (or above), 1 for Default, 2 for Batch (or below); it is
// p's place in Snapshot.Classes.
func (p Priority) Index() int {
	switch {
	case p > Default:
		return 0
	case p < Default:
		return 2
	}
	return 1
}

// String returns "interactive", "default" or "batch"; a value above
// Interactive counts as Interactive, one below Batch as Batch.
func (p Priority) String() string {
	return [classes]string{"interactive", "default", "batch"}[p.Index()]
}

type priorityCtx struct{}

// WithPriority returns ctx carrying the class p for the requests made
// with it (package transport's WithPriority is the same).
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityCtx{}, p)
}

// PriorityFrom returns the class ctx carries, Default if none.
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityCtx{}).(Priority)
	return p
}
