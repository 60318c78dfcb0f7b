package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"-listen", "127.0.0.1:0",
			"-quota", "DescribeInstances=1/1h",
			"-quota", "acme/*=100/1m:bucket,burst=5",
			"-policy", "sliding",
			"-headers", "alibaba,retry-after",
			"-throttle-status", "429",
			"-account", "AK1=acme",
		}, pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no output: %v", lines.Err())
	}
	first := lines.Text()
	base, ok := strings.CutPrefix(first, "fakecloud listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q", first)
	}
	var out []string
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		for lines.Scan() {
			out = append(out, lines.Text())
		}
	}()

	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	api := func() int {
		req, err := fakecloud.NewRequest(ctx, base, "AK1", "DescribeInstances")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := api(); s != 200 {
		t.Errorf("first call: %d", s)
	}
	if s := api(); s != 429 {
		t.Errorf("second call: %d, want 429", s)
	}

	req, _ := http.NewRequest(http.MethodPut, base+"/_fakecloud/quota?api=DescribeInstances&limit=10&window=1s", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var qs []fakecloud.Quota
	if err := json.NewDecoder(resp.Body).Decode(&qs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT quota: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if len(qs) != 2 || qs[0].Limit != 10 || qs[1].Policy != fakecloud.TokenBucket || qs[1].Burst != 5 {
		t.Errorf("quotas %+v", qs)
	}
	if s := api(); s != 200 {
		t.Errorf("after PUT quota: %d", s)
	}

	resp, err = client.Get(base + "/_fakecloud/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st fakecloud.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a := st.Accounts["acme"]; a.Admitted != 2 || a.Throttled != 1 {
		t.Errorf("stats %+v", st)
	}

	client.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	<-outDone
	if last := out[len(out)-1]; !strings.Contains(last, "3 requests, 2 admitted, 1 throttled") {
		t.Errorf("last line %q (all: %q)", last, out)
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-quota", "nonsense"},
		{"-policy", "leaky"},
		{"-headers", "bogus"},
		{"-account", "noequals"},
		{"-listen", "256.0.0.1:0"},
		{"extra"},
		{"-nosuchflag"},
	} {
		if err := run(context.Background(), append([]string{"-listen", "127.0.0.1:0"}, args...), io.Discard); err == nil {
			t.Errorf("run %q: no error", args)
		}
	}
}
