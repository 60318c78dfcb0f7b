package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/transport"
)

// A Transport goes where any http.RoundTripper goes. Here it sends to the
// fake gateway in memory; in production next is nil (http.DefaultTransport)
// or your own transport.
func Example() {
	cloud := fakecloud.New(fakecloud.Config{})
	next := cloud.RoundTripper()

	client := &http.Client{Transport: transport.New(next, transport.Config{})}

	req, _ := fakecloud.NewRequest(context.Background(), "http://ecs.cn-hangzhou.aliyuncs.com", "LTAI5tEXAMPLE", "DescribeInstances")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}

// Rules give tenants a starting quota before the server has said anything,
// matched by the longest prefix of their key.
func ExampleConfig_rules() {
	var rules quota.Rules
	rules.Set(quota.Key{Product: "ecs"}, quota.Every(20, time.Second))
	tr := transport.New(nil, transport.Config{
		Rules:    &rules,
		Accounts: map[string]string{"LTAI5tEXAMPLE": "1234567890123456"},
	})

	req, _ := http.NewRequest("POST", "https://ecs.cn-hangzhou.aliyuncs.com/?Action=DescribeInstances&AccessKeyId=LTAI5tEXAMPLE&RegionId=cn-hangzhou", nil)
	key := tr.Key(req)
	snap := tr.Limiter(key).Snapshot()
	fmt.Println(key)
	fmt.Printf("%.0f/s from the %s\n", snap.Rate, snap.Source)
	// Output:
	// acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances
	// 20/s from the rule
}

// Errors from http.Client.Do quote the request's URL, and a signed request's
// URL holds its AccessKeyId, Signature and SecurityToken. Pass any error
// through RedactError before it reaches a log.
func ExampleRedactError() {
	cloud := fakecloud.New(fakecloud.Config{})
	client := &http.Client{Transport: transport.New(cloud.RoundTripper(), transport.Config{})}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the call fails before it is sent
	req, _ := fakecloud.NewRequest(ctx, "http://ecs.cn-hangzhou.aliyuncs.com", "LTAI5tEXAMPLE", "DescribeInstances")
	if _, err := client.Do(req); err != nil {
		fmt.Println(transport.RedactError(err))
	}
	// Output: Post "http://ecs.cn-hangzhou.aliyuncs.com/?REDACTED": context canceled
}
