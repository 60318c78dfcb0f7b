package call

import (
	"context"
	"testing"

	"github.com/tollgate-go/tollgate/quota"
)

// otherValue keys a value of the caller's on a call's context.
type otherValue struct{}

func TestRecordKeepsTheFirstKey(t *testing.T) {
	first := quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: "a", API: "DescribeInstances"}
	second := first
	second.Account = "b"

	SetKey(context.Background(), first) // no Record: nothing happens, no panic
	var none *Record
	if _, ok := none.Key(); ok {
		t.Error("a nil Record has a key")
	}

	r := new(Record)
	ctx := With(context.Background(), r)
	if _, ok := r.Key(); ok {
		t.Error("a new Record has a key")
	}
	SetKey(ctx, first)
	SetKey(context.WithValue(ctx, otherValue{}, 1), second) // a later request of the same call
	if k, ok := From(ctx).Key(); !ok || k != first {
		t.Errorf("Key = %v, %v; want the first request's %v", k, ok, first)
	}
}
