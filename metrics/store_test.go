package metrics

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tollgate-go/tollgate/transport"
)

// TestMetricsStore feeds the Store's outages and checks the store series:
// none before the first, then up 0 or 1 and the outages counted.
func TestMetricsStore(t *testing.T) {
	c := New(Config{})
	if n := testutil.CollectAndCount(c, "tollgate_store_up", "tollgate_store_outages_total"); n != 0 {
		t.Fatalf("%d store series before any Store event, want none", n)
	}
	const head = "# HELP tollgate_store_outages_total Times the Transport's Store stopped answering.\n" +
		"# TYPE tollgate_store_outages_total counter\n"
	const upHelp = "# HELP tollgate_store_up 1 while the Transport's Store answers, 0 while its tenants go on alone at a share of their quota; only once the store has failed.\n" +
		"# TYPE tollgate_store_up gauge\n"
	steps := []struct {
		ev      transport.StoreEvent
		up      string
		outages string
	}{
		{transport.StoreEvent{Err: errors.New("down"), Share: 0.5}, "0", "1"},
		{transport.StoreEvent{Up: true, Share: 1}, "1", "1"},
		{transport.StoreEvent{Err: errors.New("down"), Share: 0.5}, "0", "2"},
	}
	for i, s := range steps {
		c.Store(s.ev)
		want := head + "tollgate_store_outages_total " + s.outages + "\n" + upHelp + "tollgate_store_up " + s.up + "\n"
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "tollgate_store_up", "tollgate_store_outages_total"); err != nil {
			t.Errorf("after event %d (%+v): %v", i, s.ev, err)
		}
	}
}
