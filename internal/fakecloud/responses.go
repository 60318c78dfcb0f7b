package fakecloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
)

// contentTypeJSON is the Content-Type of every gateway answer.
const contentTypeJSON = "application/json;charset=utf-8"

// ErrorBody is the JSON body of a gateway error answer.
type ErrorBody struct {
	RequestID string `json:"RequestId"`
	HostID    string `json:"HostId"`
	Code      string `json:"Code"`
	Message   string `json:"Message"`
	Recommend string `json:"Recommend"`
}

// Error codes and messages the fake answers with.
const (
	CodeThrottlingUser     = "Throttling.User"
	CodeThrottlingAPI      = "Throttling.Api"
	CodeThrottling         = "Throttling"
	CodeServiceUnavailable = "ServiceUnavailable"
	CodeNonceUsed          = "SignatureNonceUsed"
	CodeTimestampExpired   = "InvalidTimeStamp.Expired"
	CodeTimestampFormat    = "InvalidTimeStamp.Format"
	CodeMissingAccessKeyID = "MissingAccessKeyId"
	CodeMissingAction      = "MissingParameter"
)

// messages maps codes to the gateway's messages.
var messages = map[string]string{
	CodeThrottlingUser:     "Request was denied due to user flow control.",
	CodeThrottlingAPI:      "Request was denied due to api flow control.",
	CodeThrottling:         "Request was denied due to flow control.",
	"Throttling.Resource":  "Request was denied due to resource flow control.",
	"Rejected.Throttling":  "Request was denied due to flow control.",
	CodeServiceUnavailable: "The request has failed due to a temporary failure of the server.",
	CodeNonceUsed:          "Specified signature nonce was used already.",
	CodeTimestampExpired:   "Specified time stamp or date value is expired.",
	CodeTimestampFormat:    "Specified time stamp or date value is not well formatted.",
	CodeMissingAccessKeyID: "AccessKeyId is mandatory for this action.",
	CodeMissingAction:      `The input parameter "Action" that is mandatory for processing this request is not supplied.`,
}

// errorBody returns the JSON body of an error answer.
func (c *Cloud) errorBody(requestID, code string) []byte {
	msg, ok := messages[code]
	if !ok {
		msg = "Request was denied."
	}
	return marshalJSON(ErrorBody{
		RequestID: requestID,
		HostID:    c.cfg.HostID,
		Code:      code,
		Message:   msg,
		Recommend: "https://api.aliyun.com/troubleshoot?q=" + url.QueryEscape(code) +
			"&product=" + url.QueryEscape(c.cfg.Product) + "&requestId=" + url.QueryEscape(requestID),
	})
}

// marshalJSON encodes v without HTML escaping (the gateway sends a literal
// & in Recommend).
func marshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("{}")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Instance is one instance of a DescribeInstances answer (a subset of the
// ECS fields).
type Instance struct {
	InstanceID   string `json:"InstanceId"`
	InstanceName string `json:"InstanceName"`
	RegionID     string `json:"RegionId"`
	ZoneID       string `json:"ZoneId"`
	Status       string `json:"Status"`
	InstanceType string `json:"InstanceType"`
	CPU          int    `json:"Cpu"`
	Memory       int    `json:"Memory"`
	OSType       string `json:"OSType"`
	CreationTime string `json:"CreationTime"`
}

// DescribeInstancesBody is the success body of DescribeInstances, shaped so
// the v1 SDK's ecs.DescribeInstancesResponse parses it.
type DescribeInstancesBody struct {
	RequestID  string `json:"RequestId"`
	TotalCount int    `json:"TotalCount"`
	PageNumber int    `json:"PageNumber"`
	PageSize   int    `json:"PageSize"`
	Instances  struct {
		Instance []Instance `json:"Instance"`
	} `json:"Instances"`
}

// successBody returns the body of an admitted request: a DescribeInstances
// answer with one instance for DescribeInstances, {"RequestId": …} for any
// other action.
func successBody(requestID string, id identity, account string) []byte {
	if id.action != "DescribeInstances" {
		b, _ := json.Marshal(struct {
			RequestID string `json:"RequestId"`
		}{requestID})
		return b
	}
	region := id.regionID
	if region == "" {
		region = "cn-hangzhou"
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(account))
	body := DescribeInstancesBody{RequestID: requestID, TotalCount: 1, PageNumber: 1, PageSize: 10}
	body.Instances.Instance = []Instance{{
		InstanceID:   fmt.Sprintf("i-bp1%017x", h.Sum64()>>4),
		InstanceName: "fakecloud-1",
		RegionID:     region,
		ZoneID:       region + "-h",
		Status:       "Running",
		InstanceType: "ecs.g7.large",
		CPU:          2,
		Memory:       8192,
		OSType:       "linux",
		CreationTime: "2024-01-01T00:00Z",
	}}
	b, _ := json.Marshal(body)
	return b
}

// newRequestID returns a request id shaped like the gateway's, unique per
// Cloud and deterministic in request order.
func (c *Cloud) newRequestID() string {
	n := c.reqSeq.Add(1)
	return fmt.Sprintf("FA4EC10D-%04X-%04X-%04X-%012X", (n>>48)&0xffff, (n>>32)&0xffff, (n>>16)&0xffff, n&0xffffffffffff)
}
