// Package aliyun fits tollgate to the Alibaba Cloud SDKs.
//
// For the v1 SDK (github.com/aliyun/alibaba-cloud-sdk-go), Wrap routes a
// client through a tollgate transport, and Share routes more clients (one
// per goroutine: the SDK's Client is not safe for concurrent use) through
// the same one, so they share the account's limiter. For the v2 SDK
// (github.com/alibabacloud-go/darabonba-openapi/v2), HTTPClient satisfies
// its Config.HttpClient without this package importing that SDK. Call
// retries an SDK operation by calling it again, so each attempt is signed
// afresh, and WrapError and Redact keep credentials out of error texts.
package aliyun
