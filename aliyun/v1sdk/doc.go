// Package v1sdk fits tollgate to Alibaba Cloud's v1 Go SDK,
// github.com/aliyun/alibaba-cloud-sdk-go.
//
// Wrap routes a client through a new tollgate Transport and returns it;
// Share routes more clients through the same one, one client per
// goroutine (the SDK's Client is not safe for concurrent use), so that
// they share the account's limiters. Call makes an SDK call: it carries
// the call's context into the Transport, which the SDK itself cannot
// (it builds its requests without one), and retries throttles and
// transient failures by calling the SDK again, so each attempt is signed
// afresh.
//
// A program that uses the v2 SDK (darabonba-openapi) needs package aliyun
// only, which imports neither SDK.
package v1sdk
