package fakecloud

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestRoundTripperResponse(t *testing.T) {
	c := New(Config{})
	body := &closeTracker{Reader: strings.NewReader("Action=DescribeInstances&AccessKeyId=AK")}
	req, _ := http.NewRequest(http.MethodPost, "http://ecs.aliyuncs.com/", body)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.RoundTripper().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Status != "200 OK" || resp.Request != req || resp.ProtoMajor != 1 {
		t.Errorf("response %+v", resp)
	}
	if resp.ContentLength != int64(len(b)) {
		t.Errorf("ContentLength %d, body %d", resp.ContentLength, len(b))
	}
	if resp.Header.Get("x-acs-request-id") == "" {
		t.Error("no request id")
	}
	if !body.closed {
		t.Error("request body not closed")
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("read after close succeeded")
	}
}

func TestRoundTripperContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Faults: Faults{SlowBodyRate: 1, SlowBodyDelay: time.Second}})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := NewRequest(ctx, "http://x", "AK", "DescribeInstances")
		resp, err := c.RoundTripper().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := resp.Body.Read(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(1500*time.Millisecond, cancel)
		_, err = io.ReadAll(resp.Body)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read err %v, want context.Canceled", err)
		}
		// Cancelled before sending.
		if _, err := c.RoundTripper().RoundTrip(req); !errors.Is(err, context.Canceled) {
			t.Errorf("RoundTrip err %v", err)
		}
	})
}

// TestRoundTripperUnreadBody: closing a slow body unread ends the handler
// at once (synctest.Test fails on a leaked goroutine).
func TestRoundTripperUnreadBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Faults: Faults{SlowBodyRate: 1, SlowBodyDelay: time.Hour}})
		req, _ := NewRequest(context.Background(), "http://x", "AK", "DescribeInstances")
		resp, err := c.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp.Body.Close()
		synctest.Wait()
		if d := time.Since(start); d != 0 {
			t.Errorf("handler ended after %v", d)
		}
	})
}
