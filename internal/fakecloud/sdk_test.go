package fakecloud_test

import (
	"errors"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestV1SDK drives the fake with the real v1 SDK over loopback: a parsed
// DescribeInstancesResponse under quota, a Throttling.User ServerError
// over it.
func TestV1SDK(t *testing.T) {
	srv := fakecloud.NewServer(t, fakecloud.Config{
		Accounts: map[string]string{"AKIDsdk1": "acme", "AKIDsdk2": "acme"},
		// A sliding window has no boundary the test could straddle.
		Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.SlidingWindow, Limit: 2, Window: time.Hour}},
		Headers: fakecloud.HeadersAlibaba,
	})
	newClient := func(ak string) *ecs.Client {
		client, err := ecs.NewClientWithAccessKey("cn-hangzhou", ak, "secret")
		if err != nil {
			t.Fatal(err)
		}
		// AutoRetry is off by default (it would retry 5xx only); keep it so.
		client.GetConfig().WithAutoRetry(false)
		// The SDK reads HTTP_PROXY itself and does not exempt loopback.
		client.SetNoProxy("127.0.0.1")
		return client
	}
	describe := func(client *ecs.Client) (*ecs.DescribeInstancesResponse, error) {
		req := ecs.CreateDescribeInstancesRequest()
		req.Scheme = "http"
		req.Domain = srv.Addr()
		return client.DescribeInstances(req)
	}

	for _, ak := range []string{"AKIDsdk1", "AKIDsdk2"} {
		resp, err := describe(newClient(ak))
		if err != nil {
			t.Fatalf("%s: %v", ak, err)
		}
		if resp.TotalCount != 1 || resp.RequestId == "" || len(resp.Instances.Instance) != 1 {
			t.Fatalf("%s: response %+v", ak, resp)
		}
		if in := resp.Instances.Instance[0]; in.Status != "Running" || in.RegionId != "cn-hangzhou" || in.InstanceId == "" {
			t.Errorf("instance %+v", in)
		}
	}

	// The account's quota is spent by its two keys.
	_, err := describe(newClient("AKIDsdk1"))
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("err %T %v, want *errors.ServerError", err, err)
	}
	if se.ErrorCode() != "Throttling.User" || se.HttpStatus() != 400 || se.RequestId() == "" {
		t.Errorf("ServerError code %q status %d request %q", se.ErrorCode(), se.HttpStatus(), se.RequestId())
	}
	if v := se.RespHeaders["X-Ratelimit-User-Api"]; len(v) != 1 || v[0] == "" {
		t.Errorf("RespHeaders %v", se.RespHeaders)
	}

	st := srv.Stats()
	if a := st.Accounts["acme"]; a.Admitted != 2 || a.Throttled != 1 || a.Replays != 0 {
		t.Errorf("stats %+v", a)
	}
}
