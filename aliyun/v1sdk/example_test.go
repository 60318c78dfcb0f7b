package v1sdk_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/aliyun/v1sdk"
	"github.com/tollgate-go/tollgate/transport"
)

// ecsGateway stands in for Alibaba Cloud's ECS endpoint: it answers every
// DescribeInstances call as the real one does, with one instance.
func ecsGateway() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"RequestId":"8E1A2C","TotalCount":1,"PageNumber":1,"PageSize":10,"Instances":{"Instance":[]}}`)
	}))
}

// describe calls DescribeInstances on the test gateway. In production,
// leave Scheme and Domain alone: the SDK finds the region's endpoint.
func describe(client *ecs.Client, gateway string) (*ecs.DescribeInstancesResponse, error) {
	req := ecs.CreateDescribeInstancesRequest()
	u, _ := url.Parse(gateway)
	req.Scheme, req.Domain = u.Scheme, u.Host
	return client.DescribeInstances(req)
}

// Wrap one client and keep the Transport it returns; Share it with the
// clients of the other goroutines. Each call has a deadline, which bounds
// its wait for quota too.
func Example() {
	gateway := ecsGateway()
	defer gateway.Close()

	client, err := ecs.NewClientWithAccessKey("cn-hangzhou", "LTAI5tEXAMPLE", "secret")
	if err != nil {
		panic(err)
	}
	tr, err := v1sdk.Wrap(&client.Client, transport.Config{}) // keep tr: Share it
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := v1sdk.Call(ctx, &client.Client, nil, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
		return describe(client, gateway.URL)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.TotalCount, "instance")
	_ = tr // give it to v1sdk.Share for the clients of other goroutines
	// Output: 1 instance
}

// Goroutines each have their own client (the SDK's Client is not safe for
// concurrent use), all routed through one Transport, so that they share
// the account's quota.
func ExampleShare() {
	gateway := ecsGateway()
	defer gateway.Close()

	first, err := ecs.NewClientWithAccessKey("cn-hangzhou", "LTAI5tEXAMPLE", "secret")
	if err != nil {
		panic(err)
	}
	tr, err := v1sdk.Wrap(&first.Client, transport.Config{})
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 4 {
		client, err := ecs.NewClientWithAccessKey("cn-hangzhou", "LTAI5tEXAMPLE", "secret")
		if err != nil {
			panic(err)
		}
		if err := v1sdk.Share(&client.Client, tr); err != nil {
			panic(err)
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := v1sdk.Call(ctx, &client.Client, nil, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
				return describe(client, gateway.URL)
			}); err != nil {
				fmt.Println(err)
				return
			}
			ok.Add(1)
		})
	}
	wg.Wait()
	fmt.Println(ok.Load(), "calls through one Transport")
	// Output: 4 calls through one Transport
}
