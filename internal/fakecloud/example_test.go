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

// ExampleFaults_shedding is a gateway that sheds a fifth of the requests
// it admits, whatever the rate, with a hint to come back in a second, and
// an unseen consumer that spends 20 of the account's 50 a second, one every
// 50 ms. OnRequest hears every answer as the gateway decided it. The clock
// stands still half way through a window, when the unseen consumer has
// spent 10.
func ExampleFaults_shedding() {
	outcomes := map[fakecloud.Outcome]int{}
	halfway := time.Now().Truncate(time.Second).Add(500 * time.Millisecond)
	cloud := fakecloud.New(fakecloud.Config{
		Now:            func() time.Time { return halfway },
		Seed:           1,
		ThrottleStatus: 429,
		Quotas:         []fakecloud.Quota{{API: "DescribeInstances", Limit: 50, Window: time.Second, Unseen: 20}},
		Faults:         fakecloud.Faults{ShedRate: 0.2, ShedRetryAfter: time.Second},
		OnRequest:      func(ev fakecloud.Event) { outcomes[ev.Outcome]++ }, // one caller: no lock needed
	})
	client := cloud.Client()
	retryAfter := map[string]bool{}
	for range 1000 {
		req, _ := fakecloud.NewRequest(context.Background(), "http://ecs.aliyuncs.com", "AKIDexample", "DescribeInstances")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode == 429 {
			retryAfter[resp.Header.Get("Retry-After")] = true
		}
	}
	st := cloud.Stats()
	fmt.Println("admitted:", outcomes[fakecloud.Admitted], "shed:", outcomes[fakecloud.Shed], "throttled by the quota:", outcomes[fakecloud.Throttled])
	fmt.Println("Retry-After on throttles:", retryAfter)
	fmt.Println("the unseen consumer's admitted:", st.Unseen.Admitted)
	// Output:
	// admitted: 32 shed: 8 throttled by the quota: 960
	// Retry-After on throttles: map[:true 1:true]
	// the unseen consumer's admitted: 10
}
