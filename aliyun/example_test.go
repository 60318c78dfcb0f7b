package aliyun_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"

	"github.com/tollgate-go/tollgate/aliyun"
	"github.com/tollgate-go/tollgate/transport"
)

// ecsGateway stands in for Alibaba Cloud's ECS endpoint: it answers every
// call as the real one answers DescribeInstances.
func ecsGateway() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"RequestId":"8E1A2C","TotalCount":1,"PageNumber":1,"PageSize":10,"Instances":{"Instance":[]}}`)
	}))
}

// The v2 SDK takes an HTTPClient in its Config; every SDK client of the
// account, one per goroutine, takes the same one. Call retries throttles
// and carries the call's deadline to the quota wait. (Protocol HTTP and
// the test gateway's Endpoint stand in for Alibaba Cloud here: in
// production, give the region's endpoint and leave Protocol alone.)
func ExampleNewHTTPClient() {
	gateway := ecsGateway()
	defer gateway.Close()
	u, _ := url.Parse(gateway.URL)

	hc := aliyun.NewHTTPClient(transport.Config{}) // share it among the SDK clients
	client, err := openapi.NewClient(&openapi.Config{
		AccessKeyId:     dara.String("LTAI5tEXAMPLE"),
		AccessKeySecret: dara.String("secret"),
		Endpoint:        dara.String(u.Host),
		Protocol:        dara.String("HTTP"),
		HttpClient:      hc,
	})
	if err != nil {
		panic(err)
	}
	params := &openapi.Params{
		Action: dara.String("DescribeInstances"), Version: dara.String("2014-05-26"),
		Protocol: dara.String("HTTP"), Method: dara.String("POST"), AuthType: dara.String("AK"),
		Style: dara.String("RPC"), Pathname: dara.String("/"), ReqBodyType: dara.String("json"), BodyType: dara.String("json"),
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := aliyun.Call(ctx, nil, func(ctx context.Context) (map[string]any, error) {
		return client.CallApiWithCtx(ctx, params, &openapi.OpenApiRequest{}, &dara.RuntimeOptions{})
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp["statusCode"])
	// Output: 200
}
