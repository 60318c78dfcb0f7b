package transport

import (
	"net/http"
	"testing"
)

// BenchmarkNoResend measures what deciding costs: "post" is the usual RPC
// request (a POST, which net/http never resends), handed on as it is;
// "get-nonce" a signed GET, sent as a copy.
func BenchmarkNoResend(b *testing.B) {
	const url = "http://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId=LTAI5tBENCH&Action=DescribeInstances&Format=JSON" +
		"&RegionId=cn-hangzhou&SignatureMethod=HMAC-SHA1&SignatureNonce=3f2a&SignatureVersion=1.0" +
		"&Timestamp=2026-12-02T12%3A00%3A00Z&Version=2014-05-26&Signature=abc%3D"
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		req, err := http.NewRequest(method, url, http.NoBody)
		if err != nil {
			b.Fatal(err)
		}
		name := "post"
		if method == http.MethodGet {
			name = "get-nonce"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				noResend(req)
			}
		})
	}
}
