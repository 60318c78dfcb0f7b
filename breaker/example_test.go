package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
)

// A Breaker used on its own, around any call: Allow before, Done with the
// answer's outcome after. transport.Transport does this for each tenant
// when Config.Breaker is set.
func Example() {
	b := breaker.New(breaker.Config{MinRequests: 4, OpenFor: time.Minute}, func(c breaker.Change) {
		fmt.Printf("breaker %v after %d failures of %d answers\n", c.To, c.Failures, c.Answers)
	})
	var parser quota.Parser
	answers := []struct {
		status int
		body   string
	}{
		{200, `{}`},
		{400, `{"Code":"Throttling.User"}`}, // quota: not counted
		{503, `{"Code":"ServiceUnavailable"}`},
		{500, `{"Code":"InternalError"}`},
		{503, `{"Code":"ServiceUnavailable"}`},
		{200, `{}`},
	}
	for _, a := range answers {
		pass, err := b.Allow(time.Now())
		if err != nil {
			fmt.Println("refused:", errors.Is(err, breaker.ErrOpen))
			continue
		}
		o := parser.ParseParts(a.status, nil, []byte(a.body), time.Now())
		fmt.Println(a.status, breaker.Judge(o))
		pass.Done(breaker.Judge(o))
	}
	// Output:
	// 200 success
	// 400 ignored
	// 503 failure
	// 500 failure
	// 503 failure
	// breaker open after 3 failures of 4 answers
	// refused: true
}
