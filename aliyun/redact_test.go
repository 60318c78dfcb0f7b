package aliyun

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const akid, sig, token = "LTAI5tSecretKeyId", "kR0Wx%2Bq%2Fz9%3D", "CAISsecuritytoken"
	tests := []struct{ name, in string }{
		{"query", "POST /?AccessKeyId=" + akid + "&Action=DescribeInstances&Signature=" + sig + "&SecurityToken=" + token},
		{"string to sign", "POST&%2F&AccessKeyId%3D" + akid + "%26Action%3DDescribeInstances%26SecurityToken%3D" + token},
		{"double encoded", "AccessKeyId%253D" + akid + "%2526Signature%253D" + sig},
		{"acs3", "Authorization: ACS3-HMAC-SHA256 Credential=" + akid + ",SignedHeaders=host,Signature=" + sig},
		{"json", `{"AccessKeyId": "` + akid + `","SecurityToken":"` + token + `"}`},
		{"header map", "map[x-acs-security-token:[" + token + "]]"},
		{"lower case", "accesskeyid=" + akid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			for _, secret := range []string{akid, "kR0Wx", token} {
				if strings.Contains(got, secret) {
					t.Errorf("Redact(%q) = %q still holds %q", tt.in, got, secret)
				}
			}
			if !strings.Contains(got, "REDACTED") {
				t.Errorf("Redact(%q) = %q, want REDACTED in it", tt.in, got)
			}
		})
	}
	keep := "Code: Throttling.User SignatureNonce=abc SignatureMethod=HMAC-SHA1 Action=DescribeInstances"
	if got := Redact(keep); got != keep {
		t.Errorf("Redact(%q) = %q, want it unchanged", keep, got)
	}
}
