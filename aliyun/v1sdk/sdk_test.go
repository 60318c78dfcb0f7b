package v1sdk

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/sdkload"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// newECS returns a v1 SDK ECS client that reaches cloud in memory, routed
// through tollgate by Wrap.
func newECS(t *testing.T, cloud *fakecloud.Cloud, cfg transport.Config) (*ecs.Client, *transport.Transport) {
	t.Helper()
	client := newECSClient(t, cloud)
	tr, err := Wrap(&client.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, tr
}

// newECSClient returns a v1 SDK ECS client that reaches cloud in memory.
func newECSClient(t *testing.T, cloud *fakecloud.Cloud) *ecs.Client {
	t.Helper()
	conf := sdk.NewConfig()
	conf.Transport = cloud.RoundTripper()
	client, err := ecs.NewClientWithOptions("cn-hangzhou", conf, credentials.NewAccessKeyCredential(sdkload.AKID, sdkload.Secret))
	if err != nil {
		t.Fatal(err)
	}
	client.SetReadTimeout(30 * time.Second)
	return client
}

func describe(client *ecs.Client) (*ecs.DescribeInstancesResponse, error) {
	req := ecs.CreateDescribeInstancesRequest()
	req.Scheme = "http"
	req.Domain = "ecs.cn-hangzhou.aliyuncs.com"
	return client.DescribeInstances(req)
}

// TestV1SDKThroughTollgate drives 16 goroutines of real v1 SDK calls through
// Wrap and Call against the fake gateway's default throttling (400
// Throttling.User, no headers): every call succeeds, the SDK sees few
// throttles, the account gets its quota, and no nonce is ever reused.
func TestV1SDKThroughTollgate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 20
		cloud := fakecloud.New(fakecloud.Config{
			Quotas: []fakecloud.Quota{{API: "DescribeInstances", Limit: limit, Window: time.Second}},
			Faults: sdkload.Latency,
		})
		// One client per worker: the v1 SDK's Client is not safe for
		// concurrent use. They share one Transport.
		_, tr := newECS(t, cloud, transport.Config{})
		sdkload.Run(t, cloud, limit, func() sdkload.Call {
			client, _ := newECS(t, cloud, transport.Config{})
			if err := Share(&client.Client, tr); err == nil {
				t.Error("Share of a client that Wrap already routed: want an error")
			}
			client = newECSClient(t, cloud)
			if err := Share(&client.Client, tr); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context, p *retry.Policy) error {
				_, err := Call(ctx, &client.Client, p, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
					return describe(client)
				})
				return err
			}
		})
	})
}
