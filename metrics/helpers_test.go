package metrics

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/transport"
)

const endpoint = "http://ecs.aliyuncs.com"

// series returns the value of every series of the metric name that c
// exports, by the series' labels formatted as "k=v,k=v" (sorted by name),
// read through a registry as a scrape would. For a histogram the value is
// its sample count.
func series(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Histogram != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			}
			out[strings.Join(ls, ",")] = v
		}
	}
	return out
}

// drive runs workers goroutines, each sending requests for action with
// the given AccessKeyIds in turn through rt until d has passed, and returns
// how many RoundTrips returned an error.
func drive(t *testing.T, rt http.RoundTripper, akids []string, action string, workers int, d time.Duration) int {
	t.Helper()
	stop := time.Now().Add(d)
	var (
		mu     sync.Mutex
		failed int
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := w; time.Now().Before(stop); i++ {
				req, err := fakecloud.NewRequest(context.Background(), endpoint, akids[i%len(akids)], action)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := rt.RoundTrip(req)
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return failed
}

// canned is a next RoundTripper that answers 200 with no rate-limit header,
// a fresh response per call.
type canned struct{}

func (canned) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Status:     "200 OK",
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{},
		Body:    http.NoBody,
		Request: req,
	}, nil
}

var _ http.RoundTripper = canned{}

// tenantOf returns the tenant label tr gives requests of akid and action.
func tenantOf(t *testing.T, tr *transport.Transport, akid, action string) string {
	t.Helper()
	req, err := fakecloud.NewRequest(context.Background(), endpoint, akid, action)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Key(req).String()
}

// quotaKey returns a distinct key for each i.
func quotaKey(i int) quota.Key {
	return quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: strconv.Itoa(1000000 + i)}
}
