package window_test

import (
	"fmt"
	"time"

	"github.com/tollgate-go/tollgate/window"
)

func Example() {
	// At most 3 events in any trailing second, at 100 ms resolution.
	w := window.New(time.Second, 10)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	for i := range 4 {
		now := start.Add(time.Duration(i) * 200 * time.Millisecond)
		fmt.Println(now.Sub(start), w.TryAdd(now, 1, 3))
	}
	now := start.Add(600 * time.Millisecond)
	fmt.Println("count:", w.Count(now))
	fmt.Println("next free after:", w.NextFree(now, 1, 3).Sub(start))
	// Output:
	// 0s true
	// 200ms true
	// 400ms true
	// 600ms false
	// count: 3
	// next free after: 1.1s
}
