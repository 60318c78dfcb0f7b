package aliyun

import (
	"errors"
	"net/http"
	"reflect"
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
// generation, err itself if it is nil or already an *Error, and otherwise
// err wrapped so that its text is redacted.
//
// It reads the SDKs' errors without importing either SDK, so that a user
// of one generation does not build the other: the v1 SDK's
// (*errors.ServerError and *errors.ClientError) by their ErrorCode and
// HttpStatus methods and their RespHeaders field; the v2 SDK's
// (*tea.SDKError, *dara.SDKError and the models with GetCode and
// GetStatusCode accessors) by those accessors or their Code and
// StatusCode fields. The first error in err's tree that says a code wins.
func WrapError(err error) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	e := &Error{err: err}
	walk(err, func(x error) bool {
		read(e, x)
		return e.Code != ""
	})
	return e
}

// walk calls f on err and the errors it wraps, depth first, until f
// reports true.
func walk(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// read fills what e lacks from x, one error of the tree.
func read(e *Error, x error) {
	if c, ok := x.(interface{ ErrorCode() string }); ok && e.Code == "" {
		e.Code = c.ErrorCode()
	}
	if s, ok := x.(interface{ HttpStatus() int }); ok && e.Status == 0 {
		e.Status = s.HttpStatus()
	}
	if c, ok := x.(interface{ GetCode() *string }); ok && e.Code == "" {
		if p := c.GetCode(); p != nil {
			e.Code = *p
		}
	}
	if s, ok := x.(interface{ GetStatusCode() *int }); ok && e.Status == 0 {
		if p := s.GetStatusCode(); p != nil {
			e.Status = *p
		}
	}
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	if e.Code == "" {
		e.Code = field[string](v, "Code")
	}
	if e.Status == 0 {
		e.Status = field[int](v, "StatusCode")
	}
	if e.Headers == nil {
		if h := field[map[string][]string](v, "RespHeaders"); h != nil {
			e.Headers = http.Header(h)
		}
	}
}

// field returns the struct v's exported field name if it holds a T or a
// non-nil *T, and T's zero value otherwise.
func field[T any](v reflect.Value, name string) T {
	var zero T
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanInterface() {
		return zero
	}
	switch x := f.Interface().(type) {
	case T:
		return x
	case *T:
		if x != nil {
			return *x
		}
	}
	return zero
}
