package fakecloud

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAdminRoutes(t *testing.T) {
	c := New(Config{Quotas: []Quota{{API: "A", Limit: 1, Window: time.Hour, Policy: SlidingWindow}}, Faults: Faults{LatencyRate: 1, Latency: time.Hour}})
	admin := func(method, target, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
		return rec
	}
	// Admin requests get no fault (an hour of latency would hang here).
	if rec := admin("GET", "/_fakecloud/quota", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"api":"A","policy":"sliding","limit":1,"window":3600000000000`) {
		t.Fatalf("GET quota: %d %s", rec.Code, rec.Body)
	}
	if rec := admin("PUT", "/_fakecloud/faults", `{}`); rec.Code != 200 {
		t.Fatalf("PUT faults: %d %s", rec.Code, rec.Body)
	}
	rt := c.RoundTripper()
	call(t, rt, "AK", "A")
	if a := call(t, rt, "AK", "A"); a.status != 400 {
		t.Fatalf("second call: %d", a.status)
	}

	rec := admin("PUT", "/_fakecloud/quota?api=A&limit=5&window=1m&policy=sliding", "")
	if rec.Code != 200 {
		t.Fatalf("PUT quota: %d %s", rec.Code, rec.Body)
	}
	var qs []Quota
	if err := json.Unmarshal(rec.Body.Bytes(), &qs); err != nil || len(qs) != 1 || qs[0] != (Quota{API: "A", Policy: SlidingWindow, Limit: 5, Window: time.Minute}) {
		t.Fatalf("quotas %+v %v", qs, err)
	}
	if a := call(t, rt, "AK", "A"); a.status != 200 {
		t.Errorf("after raising: %d", a.status)
	}
	// Per account, and the total ("*").
	admin("PUT", "/_fakecloud/quota?api=*&account=AK&limit=0", "")
	if a := call(t, rt, "AK", "A"); a.status != 400 {
		t.Errorf("after account total 0: %d", a.status)
	}
	if a := call(t, rt, "AK2", "A"); a.status != 200 {
		t.Errorf("other account: %d", a.status)
	}

	rec = admin("GET", "/_fakecloud/stats", "")
	var st Stats
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Total.Requests != 5 || st.Total.Admitted != 3 || st.Total.Throttled != 2 || st.Tenants["AK"]["A"].Throttled != 2 {
		t.Errorf("stats %+v", st)
	}

	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{"PUT", "/_fakecloud/quota?api=A", 400},
		{"PUT", "/_fakecloud/quota?api=A&limit=x", 400},
		{"PUT", "/_fakecloud/quota?api=A&limit=1&window=-1s", 400},
		{"PUT", "/_fakecloud/quota?api=A&limit=1&policy=leaky", 400},
		{"DELETE", "/_fakecloud/stats", 405},
		{"GET", "/_fakecloud/nope", 404},
		{"PUT", "/_fakecloud/faults", 400}, // empty body
		{"POST", "/_fakecloud/reset", 204},
	} {
		if rec := admin(tc.method, tc.target, ""); rec.Code != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.target, rec.Code, tc.want)
		}
	}
	if st := c.Stats(); st.Total.Requests != 0 || st.Nonces != 0 {
		t.Errorf("after reset: %+v", st)
	}
}

func TestServerLifecycle(t *testing.T) {
	srv := NewUnstartedServer(t, Config{})
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q", srv.URL)
	}
	srv.Start()
	resp, err := srv.Client().Get(srv.URL + "/_fakecloud/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != contentTypeJSON {
		t.Errorf("stats: %d %v", resp.StatusCode, resp.Header)
	}
	srv.Close()
	srv.Close() // idempotent; Cleanup calls it again
	if _, err := http.Get(srv.URL + "/_fakecloud/stats"); err == nil {
		t.Error("server still answering after Close")
	}

	started, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer started.Close()
	req, _ := NewRequest(t.Context(), started.URL, "AK", "A")
	if a := send(t, started.Client().Transport, req); a.status != 200 {
		t.Errorf("Start: %d", a.status)
	}

	// Transport takes a request for a real endpoint to the server, with
	// connections of its own.
	tr := started.Transport()
	defer tr.CloseIdleConnections()
	req, _ = NewRequest(t.Context(), "http://ecs.cn-hangzhou.aliyuncs.com", "AK", "A")
	if a := send(t, tr, req); a.status != 200 {
		t.Errorf("Transport, a request for ecs.cn-hangzhou.aliyuncs.com: %d", a.status)
	}
	if n := started.Stats().Total.Requests; n != 2 {
		t.Errorf("the server counted %d requests, want 2", n)
	}
}
