package aliyun

import (
	"errors"
	"net/http"

	"github.com/alibabacloud-go/tea/tea"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
)

// Error is an Alibaba Cloud SDK error as tollgate sees it: the error code,
// HTTP status and answer headers read out of it, and its text redacted so no
// AccessKeyId, token or signature reaches a log line. Unwrap returns the
// SDK's own error, so errors.As(err, &serverErr) still works.
//
// Error implements the small interfaces package retry classifies by
// (ErrorCode, HttpStatus and Header), so retry needs no SDK import.
type Error struct {
	Code    string      // e.g. "Throttling.User"; empty for client-side errors
	Status  int         // HTTP status of the answer; 0 if there was none
	Headers http.Header // the answer's headers, where the SDK kept them
	err     error
}

// Error returns the SDK error's text, redacted.
func (e *Error) Error() string { return Redact(e.err.Error()) }

// Unwrap returns the SDK's error.
func (e *Error) Unwrap() error { return e.err }

// ErrorCode returns Code.
func (e *Error) ErrorCode() string { return e.Code }

// HttpStatus returns Status. The spelling is the v1 SDK's.
func (e *Error) HttpStatus() int { return e.Status }

// Header returns Headers, from which retry reads the server's retry hint.
func (e *Error) Header() http.Header { return e.Headers }

// WrapError returns err as an *Error if it is an error of either SDK
// generation (the v1 SDK's *errors.ServerError and *errors.ClientError, the
// v2 SDK's *tea.SDKError, and errors with the v2 SDK's GetCode and
// GetStatusCode accessors), err itself if it is nil or already an *Error, and
// otherwise err wrapped so that its text is redacted.
func WrapError(err error) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	e := &Error{err: err}
	var server *sdkerrors.ServerError
	var client *sdkerrors.ClientError
	var tsdk *tea.SDKError
	switch {
	case errors.As(err, &server):
		e.Code, e.Status = server.ErrorCode(), server.HttpStatus()
		if server.RespHeaders != nil {
			e.Headers = http.Header(server.RespHeaders)
		}
	case errors.As(err, &client):
		e.Code = client.ErrorCode()
	case errors.As(err, &tsdk):
		e.Code = tea.StringValue(tsdk.Code)
		e.Status = tea.IntValue(tsdk.StatusCode)
	default:
		// The v2 SDK's own types (with DisableSDKError set) and dara's
		// SDKError spell their accessors this way.
		var coder interface{ GetCode() *string }
		if errors.As(err, &coder) {
			e.Code = tea.StringValue(coder.GetCode())
		}
		var status interface{ GetStatusCode() *int }
		if errors.As(err, &status) {
			e.Status = tea.IntValue(status.GetStatusCode())
		}
	}
	return e
}
