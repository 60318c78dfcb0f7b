package redisquota_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/redisquota"
	"github.com/tollgate-go/tollgate/transport"
)

// Every process that spends the same quotas builds its client alike: the
// same Redis, and the same tenant keys (here the same Salt, from the
// environment; naming each AccessKeyId's account in Accounts works too).
// It needs a Redis server, so it is compiled but not run.
func Example() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		ContextTimeoutEnabled: true, // required: lets Config.Timeout bound each call
	})
	defer rdb.Close()

	store, err := redisquota.New(redisquota.Config{Client: rdb})
	if err != nil {
		log.Fatal(err)
	}
	// Optional: load the scripts now, so that the first requests do not
	// spend their store Timeout on a dial and a NOSCRIPT.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = store.Warm(ctx)
	cancel()
	if err != nil {
		log.Fatal(err)
	}

	var rules quota.Rules
	rules.Set(quota.Key{Product: "ecs"}, quota.Every(20, time.Second)) // shared by all the processes
	client := &http.Client{Transport: transport.New(nil, transport.Config{
		Store: store,
		Rules: &rules,
		Salt:  []byte(os.Getenv("TOLLGATE_SALT")),
	})}

	resp, err := client.Get("https://ecs.cn-hangzhou.aliyuncs.com/?Action=DescribeRegions")
	if err != nil {
		log.Fatal(transport.RedactError(err))
	}
	resp.Body.Close()
}

// A store that goes away fails no request: the Transport goes on alone at
// a share of the tenant's pace (half, with no other process seen), says so,
// and tries Redis again a second later. miniredis stands in for Redis.
func Example_outage() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	store, err := redisquota.New(redisquota.Config{Client: rdb})
	if err != nil {
		log.Fatal(err)
	}
	var rules quota.Rules
	rules.Set(quota.Key{}, quota.Every(100, time.Second))
	tr := transport.New(instant{}, transport.Config{Store: store, Rules: &rules})

	get := func() {
		req, _ := http.NewRequest(http.MethodGet, "https://ecs.cn-hangzhou.aliyuncs.com/?Action=DescribeRegions", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			log.Fatal(transport.RedactError(err))
		}
		resp.Body.Close()
		var share float64
		tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool { share = l.Snapshot().Share; return false })
		fmt.Printf("%d, store down %v, share %v\n", resp.StatusCode, tr.StoreDown(), share)
	}
	get()
	mr.Close()
	get()
	fmt.Println("failed Redis calls:", store.Stats().Errors)
	// Output:
	// 200, store down false, share 1
	// 200, store down true, share 0.5
	// failed Redis calls: 1
}
