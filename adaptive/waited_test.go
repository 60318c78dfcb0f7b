package adaptive

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// TestTicketWaited checks that a Ticket tells a request admitted at once from
// one Wait held back.
func TestTicketWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Every(1, time.Second)})
		first, err := l.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		first.Done(quota.Observation{Status: 200})
		second, err := l.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		second.Done(quota.Observation{Status: 200})
		if first.Waited() {
			t.Error("the first request was admitted at once, but its Ticket says it waited")
		}
		if !second.Waited() {
			t.Error("the second request waited a second for its token, but its Ticket says it did not")
		}
	})
}
