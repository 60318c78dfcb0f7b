package fakecloud

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReplayRefused(t *testing.T) {
	var clk clock
	clk.Set(t0)
	c := New(Config{Now: clk.Now, Quotas: []Quota{{API: "A", Limit: 10, Window: time.Minute}}})
	rt := c.RoundTripper()
	params := map[string]string{"Action": "A", "AccessKeyId": "AK", "SignatureNonce": "n-1", "Timestamp": isoTime(t0)}
	if a := send(t, rt, rpcRequest(t, params)); a.status != 200 {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	a := send(t, rt, rpcRequest(t, params))
	if a.status != 400 || a.code != CodeNonceUsed {
		t.Fatalf("replay: %d %s", a.status, a.code)
	}
	mustContain(t, string(a.body), "Specified signature nonce was used already.")
	// The same nonce from another key is not a replay.
	params["AccessKeyId"] = "AK2"
	if a := send(t, rt, rpcRequest(t, params)); a.status != 200 {
		t.Errorf("other key: %d %s", a.status, a.code)
	}
	st := c.Stats().Total
	if st.Replays != 1 || st.Admitted != 2 || st.Throttled != 0 || st.Requests != 3 {
		t.Errorf("stats %+v", st)
	}
	// A replay spends no quota: AK has 9 more in the minute.
	params["AccessKeyId"] = "AK"
	for i := range 10 {
		params["SignatureNonce"] = "m-" + strconv.Itoa(i)
		want := 200
		if i == 9 {
			want = 400
		}
		if a := send(t, rt, rpcRequest(t, params)); a.status != want {
			t.Errorf("request %d: %d %s", i, a.status, a.code)
		}
	}
	// Nonces are forgotten after 15 minutes (timestamp refreshed).
	clk.Set(t0.Add(16 * time.Minute))
	params["SignatureNonce"], params["Timestamp"] = "n-1", isoTime(t0.Add(16*time.Minute))
	if a := send(t, rt, rpcRequest(t, params)); a.status != 200 {
		t.Errorf("after TTL: %d %s", a.status, a.code)
	}
}

func TestTimestamp(t *testing.T) {
	var clk clock
	clk.Set(t0)
	c := New(Config{Now: clk.Now})
	rt := c.RoundTripper()
	for i, tc := range []struct {
		ts   string
		want string // code, "" for success
	}{
		{isoTime(t0), ""},
		{isoTime(t0.Add(-14 * time.Minute)), ""},
		{isoTime(t0.Add(14 * time.Minute)), ""},
		{t0.Add(-time.Minute).Format(time.RFC3339Nano), ""},
		{isoTime(t0.Add(-16 * time.Minute)), CodeTimestampExpired},
		{isoTime(t0.Add(16 * time.Minute)), CodeTimestampExpired},
		{"yesterday", CodeTimestampFormat},
	} {
		a := send(t, rt, rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK", "SignatureNonce": strconv.Itoa(i), "Timestamp": tc.ts}))
		if a.code != tc.want || (tc.want != "" && a.status != 400) {
			t.Errorf("Timestamp %q: %d %q, want %q", tc.ts, a.status, a.code, tc.want)
		}
	}
	st := c.Stats().Total
	if st.Expired != 2 || st.Invalid != 1 || st.Admitted != 4 {
		t.Errorf("stats %+v", st)
	}
	// An expired request does not burn its nonce.
	a := send(t, rt, rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK", "SignatureNonce": "4", "Timestamp": isoTime(t0)}))
	if a.status != 200 {
		t.Errorf("nonce of an expired request: %d %s", a.status, a.code)
	}
}

func TestMissingParameters(t *testing.T) {
	c := New(Config{})
	rt := c.RoundTripper()
	if a := send(t, rt, rpcRequest(t, map[string]string{"Action": "A"})); a.status != 400 || a.code != CodeMissingAccessKeyID {
		t.Errorf("no AccessKeyId: %d %s", a.status, a.code)
	}
	if a := send(t, rt, rpcRequest(t, map[string]string{"AccessKeyId": "AK"})); a.status != 400 || a.code != CodeMissingAction {
		t.Errorf("no Action: %d %s", a.status, a.code)
	}
	if st := c.Stats().Total; st.Invalid != 2 || st.Admitted != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRequestStyles: RPC in the query (GET and POST), RPC in a form body,
// V3 headers, ROA Authorization.
func TestRequestStyles(t *testing.T) {
	c := New(Config{Quotas: []Quota{{API: "DescribeInstances", Limit: 1, Window: time.Hour, Policy: SlidingWindow}}})
	rt := c.RoundTripper()
	now := isoTime(time.Now())

	get, _ := http.NewRequest(http.MethodGet, "http://ecs.aliyuncs.com/?Action=DescribeInstances&AccessKeyId=rpc-get&SignatureNonce=1&Timestamp="+url.QueryEscape(now), nil)

	form := url.Values{"Action": {"DescribeInstances"}, "AccessKeyId": {"rpc-form"}, "SignatureNonce": {"1"}, "Timestamp": {now}, "RegionId": {"cn-beijing"}}
	post, _ := http.NewRequest(http.MethodPost, "http://ecs.aliyuncs.com/", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")

	v3, _ := http.NewRequest(http.MethodPost, "http://ecs.aliyuncs.com/", http.NoBody)
	v3.Header.Set("x-acs-action", "DescribeInstances")
	v3.Header.Set("x-acs-version", "2014-05-26")
	v3.Header.Set("x-acs-signature-nonce", "1")
	v3.Header.Set("x-acs-date", now)
	v3.Header.Set("Authorization", "ACS3-HMAC-SHA256 Credential=v3-key,SignedHeaders=host;x-acs-action,Signature=abc")

	roa, _ := http.NewRequest(http.MethodGet, "http://ecs.aliyuncs.com/clusters", nil)
	roa.Header.Set("x-acs-action", "DescribeInstances")
	roa.Header.Set("Authorization", "acs roa-key:c2lnbmF0dXJl")

	for name, req := range map[string]*http.Request{"rpc-get": get, "rpc-form": post, "v3-key": v3, "roa-key": roa} {
		if a := send(t, rt, req.Clone(req.Context())); a.status != 200 {
			t.Errorf("%s: %d %s", name, a.status, a.code)
		}
	}
	st := c.Stats()
	for _, ak := range []string{"rpc-get", "rpc-form", "v3-key", "roa-key"} {
		if got := st.Tenants[ak]["DescribeInstances"].Admitted; got != 1 {
			t.Errorf("%s admitted %d", ak, got)
		}
	}
	// The V3 nonce is checked too.
	v3.Body = http.NoBody
	if a := send(t, rt, v3); a.code != CodeNonceUsed {
		t.Errorf("V3 replay: %d %s", a.status, a.code)
	}
	// The form body's region shows in the answer.
	form.Set("AccessKeyId", "region")
	post2, _ := http.NewRequest(http.MethodPost, "http://ecs.aliyuncs.com/", strings.NewReader(form.Encode()))
	post2.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	mustContain(t, string(send(t, rt, post2).body), `"RegionId":"cn-beijing"`)
}

func TestNonceMemoryBounded(t *testing.T) {
	var clk clock
	clk.Set(t0)
	c := New(Config{Now: clk.Now, MaxNonces: 10})
	rt := c.RoundTripper()
	for i := range 100 {
		send(t, rt, rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK", "SignatureNonce": strconv.Itoa(i)}))
	}
	if n := c.Stats().Nonces; n != 10 {
		t.Errorf("%d nonces remembered, want 10", n)
	}
	// The newest are remembered.
	if a := send(t, rt, rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK", "SignatureNonce": "99"})); a.code != CodeNonceUsed {
		t.Errorf("newest nonce forgotten: %d", a.status)
	}
	clk.Set(t0.Add(15 * time.Minute))
	send(t, rt, rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK", "SignatureNonce": "x"}))
	if n := c.Stats().Nonces; n != 1 {
		t.Errorf("%d nonces after the TTL, want 1", n)
	}
}

func TestAuthAccessKeyID(t *testing.T) {
	for in, want := range map[string]string{
		"ACS3-HMAC-SHA256 Credential=AK1,SignedHeaders=host,Signature=x":   "AK1",
		"ACS3-HMAC-SHA256 SignedHeaders=host, Credential=AK2 ,Signature=x": "AK2",
		"acs AK3:sig":                 "AK3",
		"Bearer token":                "",
		"":                            "",
		"ACS3-HMAC-SHA256":            "",
		"ACS3-HMAC-SHA256 Credential": "",
	} {
		if got := authAccessKeyID(in); got != want {
			t.Errorf("authAccessKeyID(%q) = %q, want %q", in, got, want)
		}
	}
}
