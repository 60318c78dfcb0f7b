package redact

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const (
	akid  = "LTAI5tSecretKeyId"
	sig   = "kR0Wx%2Bq%2Fz9%3D"
	token = "CAISsecuritytoken"
)

var secrets = []string{akid, "kR0Wx", token, "hunter2"}

func TestString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"query", "POST /?AccessKeyId=" + akid + "&Action=DescribeInstances&Signature=" + sig + "&SecurityToken=" + token, ""},
		{"string to sign", "POST&%2F&AccessKeyId%3D" + akid + "%26Action%3DDescribeInstances%26SecurityToken%3D" + token, ""},
		{"double encoded", "AccessKeyId%253D" + akid + "%2526Signature%253D" + sig, ""},
		{"acs3", "Authorization: ACS3-HMAC-SHA256 Credential=" + akid + ",SignedHeaders=host,Signature=" + sig, ""},
		{"json", `{"AccessKeyId": "` + akid + `","SecurityToken":"` + token + `"}`, ""},
		{"header map", "map[x-acs-security-token:[" + token + "]]", ""},
		{"lower case", "accesskeyid=" + akid, ""},
		{"url query", `Post "https://ecs.aliyuncs.com/?Action=X&AccessKeyId=` + akid + `&Signature=` + sig + `": EOF`,
			`Post "https://ecs.aliyuncs.com/?REDACTED": EOF`},
		{"url user info", "dial https://bob:hunter2@example.com/path?x=1 failed",
			"dial https://REDACTED@example.com/path?REDACTED failed"},
		{"url fragment kept", "see http://h/p?a=" + akid + "#frag", "see http://h/p?REDACTED#frag"},
		{"two urls", "http://a/?k=" + akid + " and http://b/?t=" + token, "http://a/?REDACTED and http://b/?REDACTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in)
			for _, s := range secrets {
				if strings.Contains(got, s) {
					t.Errorf("String(%q) = %q still holds %q", tt.in, got, s)
				}
			}
			if !strings.Contains(got, Placeholder) {
				t.Errorf("String(%q) = %q, want %s in it", tt.in, got, Placeholder)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	for _, keep := range []string{
		"",
		"Code: Throttling.User SignatureNonce=abc SignatureMethod=HMAC-SHA1 Action=DescribeInstances",
		"https://ecs.aliyuncs.com/path without a query",
	} {
		if got := String(keep); got != keep {
			t.Errorf("String(%q) = %q, want it unchanged", keep, got)
		}
	}
}

func TestErrorURLError(t *testing.T) {
	if got := Error(nil); got != "" {
		t.Errorf("Error(nil) = %q, want empty", got)
	}
	u := "https://ecs.aliyuncs.com/?AccessKeyId=" + akid + "&Signature=" + sig + "&SecurityToken=" + token
	req, err := http.NewRequest(http.MethodPost, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	uerr := &url.Error{Op: "Post", URL: req.URL.String(), Err: errors.New("connection reset by peer")}
	got := Error(uerr)
	if want := `Post "https://ecs.aliyuncs.com/?REDACTED": connection reset by peer`; got != want {
		t.Errorf("Error(%v) = %q, want %q", uerr, got, want)
	}
}
