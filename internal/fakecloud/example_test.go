package fakecloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// Example drives a fake gateway in memory: three calls against a quota of
// two per minute.
func Example() {
	cloud := fakecloud.New(fakecloud.Config{
		Quotas: []fakecloud.Quota{{
			API:    "DescribeInstances",
			Policy: fakecloud.SlidingWindow,
			Limit:  2,
			Window: time.Minute,
		}},
		Headers: fakecloud.HeadersRetryAfter,
	})
	client := cloud.Client() // in memory: no socket, fine under synctest

	for range 3 {
		req, _ := fakecloud.NewRequest(context.Background(), "http://ecs.aliyuncs.com", "AKIDexample", "DescribeInstances")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v struct{ Code string }
		_ = json.Unmarshal(body, &v)
		if resp.StatusCode == 200 {
			fmt.Println(resp.StatusCode)
			continue
		}
		fmt.Println(resp.StatusCode, v.Code, "Retry-After:", resp.Header.Get("Retry-After"))
	}
	st := cloud.Stats().Tenants["AKIDexample"]["DescribeInstances"]
	fmt.Printf("admitted %d, throttled %d\n", st.Admitted, st.Throttled)
	// Output:
	// 200
	// 200
	// 400 Throttling.User Retry-After: 60
	// admitted 2, throttled 1
}
