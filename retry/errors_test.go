package retry

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Credential values of a signed Alibaba Cloud RPC request, as a *url.Error
// from http.Client.Do quotes them.
const (
	secretAKID      = "LTAI5tSECRETAKID"
	secretSignature = "c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"
	secretToken     = "CAIS8QJ1q6Ft5B2yfSjIr5SECRETTOKEN"
)

// signedURLError is what http.Client.Do returns when a signed request's
// connection breaks.
func signedURLError() *url.Error {
	return &url.Error{
		Op: "Get",
		URL: "https://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId=" + secretAKID +
			"&Action=DescribeInstances&SecurityToken=" + secretToken +
			"&SignatureNonce=3f2a&Signature=" + secretSignature,
		Err: io.ErrUnexpectedEOF,
	}
}

// TestGiveUpErrorRedacts checks that a *GiveUpError whose last error quotes
// a signed URL prints none of its credentials, and that errors.Is and
// errors.As still reach what it wraps.
func TestGiveUpErrorRedacts(t *testing.T) {
	last := signedURLError()
	err := error(&GiveUpError{Attempts: 3, Elapsed: time.Second, Last: last, Reason: ErrAttemptsExhausted})
	got := err.Error()
	for _, secret := range []string{secretAKID, secretSignature, secretToken} {
		if strings.Contains(got, secret) {
			t.Errorf("Error() = %q\nholds %q", got, secret)
		}
	}
	for _, kept := range []string{"retry: attempts exhausted after 3 attempt(s)", "ecs.cn-hangzhou.aliyuncs.com", "unexpected EOF"} {
		if !strings.Contains(got, kept) {
			t.Errorf("Error() = %q\nlacks %q", got, kept)
		}
	}
	var ue *url.Error
	if !errors.As(err, &ue) || ue != last {
		t.Error("errors.As does not reach the *url.Error")
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, ErrAttemptsExhausted) {
		t.Error("errors.Is does not reach the cause and the reason")
	}
}

// TestDoGiveUpRedacts runs Do over an operation failing with a signed URL
// and checks the text of what it returns.
func TestDoGiveUpRedacts(t *testing.T) {
	p := &Policy{MaxAttempts: 2, BaseDelay: time.Nanosecond, MaxDelay: time.Nanosecond}
	err := Do(context.Background(), p, func(context.Context) error { return signedURLError() })
	if err == nil {
		t.Fatal("Do succeeded")
	}
	for _, secret := range []string{secretAKID, secretSignature, secretToken} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Do's error %q holds %q", err, secret)
		}
	}
}
