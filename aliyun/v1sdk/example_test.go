package aliyun_test

import (
	"context"
	"fmt"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/aliyun"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/transport"
)

// A v1 SDK client is wrapped once; every call then waits for the account's
// quota, and Call retries throttles by calling the SDK again. (The fake
// gateway stands in for Alibaba Cloud here: in production, leave
// conf.Transport alone and drop the Scheme and Domain lines.)
func ExampleWrap() {
	cloud := fakecloud.New(fakecloud.Config{})
	conf := sdk.NewConfig()
	conf.Transport = cloud.RoundTripper()

	client, err := ecs.NewClientWithOptions("cn-hangzhou", conf, credentials.NewAccessKeyCredential("LTAI5tEXAMPLE", "secret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := aliyun.Wrap(&client.Client, transport.Config{}); err != nil {
		fmt.Println(err)
		return
	}

	resp, err := aliyun.Call(context.Background(), nil, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
		req := ecs.CreateDescribeInstancesRequest()
		req.Scheme, req.Domain = "http", "ecs.cn-hangzhou.aliyuncs.com"
		return client.DescribeInstances(req)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.TotalCount, "instance")
	// Output: 1 instance
}

// The v2 SDK takes an HTTPClient in its Config. (Next points it at the fake
// gateway here; in production leave it nil.)
func ExampleNewHTTPClient() {
	cloud := fakecloud.New(fakecloud.Config{})
	hc := aliyun.NewHTTPClient(transport.Config{})
	hc.Next = cloud.RoundTripper()

	client, err := openapi.NewClient(&openapi.Config{
		AccessKeyId:     dara.String("LTAI5tEXAMPLE"),
		AccessKeySecret: dara.String("secret"),
		Endpoint:        dara.String("ecs.cn-hangzhou.aliyuncs.com"),
		Protocol:        dara.String("HTTP"),
		HttpClient:      hc,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	params := &openapi.Params{
		Action: dara.String("DescribeInstances"), Version: dara.String("2014-05-26"),
		Protocol: dara.String("HTTP"), Method: dara.String("POST"), AuthType: dara.String("AK"),
		Style: dara.String("RPC"), Pathname: dara.String("/"), ReqBodyType: dara.String("json"), BodyType: dara.String("json"),
	}
	resp, err := aliyun.Call(context.Background(), nil, func(context.Context) (map[string]any, error) {
		return client.CallApi(params, &openapi.OpenApiRequest{}, &dara.RuntimeOptions{})
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp["statusCode"])
	// Output: 200
}
