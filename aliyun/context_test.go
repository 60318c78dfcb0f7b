package aliyun

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestV2CallDeadline checks that the caller's deadline bounds a v2 call
// (CallApiWithCtx carries the context to the HTTPClient): with a quota of
// 1 per 5 s that the gateway tells, the second call, given 500 ms, is
// refused at once, unsent, with an error matching
// context.DeadlineExceeded. It held before the v1 path learnt the same; it
// stays as a regression test.
func TestV2CallDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Limit: 1, Window: 5 * time.Second}},
			Headers: fakecloud.HeadersAlibaba, HeadersOnEveryAnswer: true,
		})
		client := newV2(t, newHTTPClient(cloud))
		call := func(ctx context.Context) error {
			_, err := Call(ctx, nil, func(ctx context.Context) (map[string]any, error) {
				return describeV2(ctx, client)
			})
			return err
		}
		if err := call(t.Context()); err != nil {
			t.Fatalf("first call: %v", err)
		}
		before := cloud.Stats().Total.Requests
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := call(ctx)
		if took := time.Since(start); took > 600*time.Millisecond {
			t.Errorf("the call took %v, want ≤ 600 ms: its deadline was 500 ms", took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want one matching context.DeadlineExceeded", err)
		}
		time.Sleep(10 * time.Second)
		if sent := cloud.Stats().Total.Requests - before; sent != 0 {
			t.Errorf("the gateway saw %d requests of the refused call, want none", sent)
		}
	})
}
