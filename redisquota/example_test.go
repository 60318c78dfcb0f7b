package redisquota_test

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

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
