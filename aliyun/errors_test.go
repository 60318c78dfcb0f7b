package aliyun

import (
	"errors"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"

	"github.com/tollgate-go/tollgate/retry"
)

func TestWrapError(t *testing.T) {
	if WrapError(nil) != nil {
		t.Error("WrapError(nil) != nil")
	}
	server := sdkerrors.NewServerError(400, `{"Code":"Throttling.User","Message":"Request was denied due to user flow control."}`, "").(*sdkerrors.ServerError)
	server.RespHeaders = map[string][]string{"X-Acs-Retry-After": {"1500"}}
	var e *Error
	if !errors.As(WrapError(server), &e) {
		t.Fatal("not an *Error")
	}
	if e.Code != "Throttling.User" || e.Status != 400 || e.Header().Get("X-Acs-Retry-After") != "1500" {
		t.Errorf("WrapError = %+v", e)
	}
	if got := WrapError(e); got != error(e) {
		t.Error("an *Error was wrapped twice")
	}
	o := retry.Classify(nil, WrapError(server), time.Now())
	if o.Class != retry.ClassThrottle || o.Hint.Milliseconds() != 1500 {
		t.Errorf("retry.Classify = %+v, want a throttle with a 1.5 s hint", o)
	}
}
