// Package aliyun fits tollgate to Alibaba Cloud's SDKs, and is all a
// program on the v2 SDK (github.com/alibabacloud-go/darabonba-openapi/v2)
// needs: HTTPClient satisfies the SDK's Config.HttpClient, and routes its
// calls through one tollgate Transport; Call makes an SDK call, retrying
// throttles and transient failures by calling the SDK again, so that each
// attempt is signed afresh; WrapError and Redact keep credentials out of
// error texts.
//
// The package imports neither SDK: it reads their errors through their
// methods and fields. The v1 SDK (github.com/aliyun/alibaba-cloud-sdk-go)
// has its own package, aliyun/v1sdk, which builds on this one.
package aliyun
