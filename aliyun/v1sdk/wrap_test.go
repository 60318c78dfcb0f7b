package v1sdk

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/tollgate-go/tollgate/internal/sdkload"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

func TestWrapSettings(t *testing.T) {
	conf := sdk.NewConfig().WithAutoRetry(true).WithMaxRetryTime(3)
	client, err := ecs.NewClientWithOptions("cn-hangzhou", conf, credentials.NewAccessKeyCredential(sdkload.AKID, sdkload.Secret))
	if err != nil {
		t.Fatal(err)
	}
	client.SetHttpProxy("http://proxy.example:3128")
	client.SetNoProxy("internal.example")
	client.SetHTTPSInsecure(true)

	next, err := nextTransport(&client.Client)
	if err != nil {
		t.Fatal(err)
	}
	ht, ok := next.(*http.Transport)
	if !ok {
		t.Fatalf("next is %T, want *http.Transport", next)
	}
	if ht.TLSClientConfig == nil || !ht.TLSClientConfig.InsecureSkipVerify {
		t.Error("the client's HTTPS-insecure setting was not carried over")
	}
	for _, tt := range []struct {
		url, want string
	}{
		{"http://ecs.cn-hangzhou.aliyuncs.com/", "http://proxy.example:3128"},
		{"http://internal.example/", ""},
		{"https://ecs.cn-hangzhou.aliyuncs.com/", ""},
	} {
		u, _ := url.Parse(tt.url)
		got, err := ht.Proxy(&http.Request{URL: u, Host: u.Host})
		if err != nil {
			t.Fatal(err)
		}
		if s := ""; got != nil {
			s = got.String()
			if s != tt.want {
				t.Errorf("proxy for %s = %s, want %q", tt.url, s, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("proxy for %s = none, want %s", tt.url, tt.want)
		}
	}
	if ht.DialContext == nil {
		t.Error("no connect timeout carried over")
	}

	if _, err := Wrap(&client.Client, transport.Config{}); err != nil {
		t.Fatal(err)
	}
	if c := client.GetConfig(); c.AutoRetry || c.MaxRetryTime != 0 {
		t.Errorf("AutoRetry %v, MaxRetryTime %d after Wrap: want off", c.AutoRetry, c.MaxRetryTime)
	}
	if _, err := Wrap(&client.Client, transport.Config{}); err == nil {
		t.Error("wrapping twice: want an error")
	}
}

func TestWrapNil(t *testing.T) {
	if _, err := Wrap(nil, transport.Config{}); err == nil {
		t.Error("Wrap(nil): want an error")
	}
	if _, err := Wrap(&sdk.Client{}, transport.Config{}); err == nil {
		t.Error("Wrap of an uninitialised client: want an error")
	}
}

// signatureMismatch answers every request as the gateway answers a bad
// signature: its message quotes the string to sign, AccessKeyId included.
type signatureMismatch struct{}

func (signatureMismatch) RoundTrip(req *http.Request) (*http.Response, error) {
	stringToSign := "POST&%2F&AccessKeyId%3D" + sdkload.AKID + "%26Action%3DDescribeInstances%26Signature%3Dabc"
	body := `{"RequestId":"R1","HostId":"ecs.aliyuncs.com","Code":"SignatureDoesNotMatch",` +
		`"Message":"Specified signature is not matched with our calculation. server string to sign is:` + stringToSign + `"}`
	return &http.Response{
		StatusCode: http.StatusBadRequest,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

// TestCallRedactsAndStops checks that Call does not retry a permanent SDK
// error, and that what it returns names the code but not the credentials
// the SDK's own error text quotes, while still unwrapping to the SDK error.
func TestCallRedactsAndStops(t *testing.T) {
	conf := sdk.NewConfig()
	conf.Transport = signatureMismatch{}
	client, err := ecs.NewClientWithOptions("cn-hangzhou", conf, credentials.NewAccessKeyCredential(sdkload.AKID, sdkload.Secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Wrap(&client.Client, transport.Config{}); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	_, err = Call(context.Background(), &client.Client, nil, func(context.Context) (*ecs.DescribeInstancesResponse, error) {
		attempts++
		return describe(client)
	})
	if attempts != 1 {
		t.Errorf("%d attempts, want 1: SignatureDoesNotMatch is permanent", attempts)
	}
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) || se.ErrorCode() != "SignatureDoesNotMatch" {
		t.Fatalf("err = %v, want it to unwrap to the SDK's ServerError", err)
	}
	if !strings.Contains(se.Error(), sdkload.AKID) {
		t.Fatal("the SDK's own error text no longer quotes the AccessKeyId: this test checks nothing")
	}
	if !errors.Is(err, retry.ErrPermanent) {
		t.Errorf("err = %v, want retry.ErrPermanent", err)
	}
	if text := err.Error(); strings.Contains(text, sdkload.AKID) || !strings.Contains(text, "SignatureDoesNotMatch") {
		t.Errorf("error text %q: want the code and no AccessKeyId", text)
	}
}
