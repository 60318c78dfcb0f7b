package aliyun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/sdkload"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// newHTTPClient returns an HTTPClient that reaches cloud in memory.
func newHTTPClient(cloud *fakecloud.Cloud) *HTTPClient {
	hc := NewHTTPClient(transport.Config{})
	hc.Next = cloud.RoundTripper()
	return hc
}

// newV2 returns a v2 SDK (darabonba-openapi) client whose HttpClient is hc.
func newV2(t *testing.T, hc *HTTPClient) *openapi.Client {
	t.Helper()
	client, err := openapi.NewClient(&openapi.Config{
		AccessKeyId:     dara.String(sdkload.AKID),
		AccessKeySecret: dara.String(sdkload.Secret),
		Endpoint:        dara.String("ecs.cn-hangzhou.aliyuncs.com"),
		Protocol:        dara.String("HTTP"),
		RegionId:        dara.String("cn-hangzhou"),
		HttpClient:      hc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func describeV2(ctx context.Context, client *openapi.Client) (map[string]any, error) {
	params := &openapi.Params{
		Action:      dara.String("DescribeInstances"),
		Version:     dara.String("2014-05-26"),
		Protocol:    dara.String("HTTP"),
		Method:      dara.String("POST"),
		AuthType:    dara.String("AK"),
		Style:       dara.String("RPC"),
		Pathname:    dara.String("/"),
		ReqBodyType: dara.String("json"),
		BodyType:    dara.String("json"),
	}
	req := &openapi.OpenApiRequest{Query: map[string]*string{"RegionId": dara.String("cn-hangzhou")}}
	return client.CallApiWithCtx(ctx, params, req, &dara.RuntimeOptions{})
}

// TestV2SDKThroughTollgate drives 16 goroutines of v2 SDK calls through
// HTTPClient and Call against the fake gateway's default throttling; see
// sdkLoad for what it checks.
func TestV2SDKThroughTollgate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 20
		cloud := fakecloud.New(fakecloud.Config{
			Quotas: []fakecloud.Quota{{API: "DescribeInstances", Limit: limit, Window: time.Second}},
			Faults: sdkload.Latency,
		})
		// One client per worker: the v2 SDK's Client is not safe for
		// concurrent use either. They share one HTTPClient.
		hc := newHTTPClient(cloud)
		sdkload.Run(t, cloud, limit, func() sdkload.Call {
			client := newV2(t, hc)
			return func(ctx context.Context, p *retry.Policy) error {
				_, err := Call(ctx, p, func(ctx context.Context) (map[string]any, error) {
					return describeV2(ctx, client)
				})
				return err
			}
		})
	})
}

// TestV2ThrottleError checks that a v2 SDK throttle error is read into an
// *Error with its code and status.
func TestV2ThrottleError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{Quotas: []fakecloud.Quota{{API: "DescribeInstances", Limit: 0, Window: time.Hour}}})
		_, err := describeV2(t.Context(), newV2(t, newHTTPClient(cloud)))
		var e *Error
		if !errors.As(WrapError(err), &e) || e.Code != "Throttling.User" || e.Status != 400 {
			t.Fatalf("WrapError(%v) = %+v, want code Throttling.User, status 400", err, e)
		}
		if strings.Contains(e.Error(), sdkload.AKID) {
			t.Errorf("error text holds the AccessKeyId: %s", e.Error())
		}
	})
}
