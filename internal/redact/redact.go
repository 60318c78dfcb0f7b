// Package redact removes credentials from text before it reaches a log line,
// a metric or an error string.
//
// Cloud API requests carry credentials in their URLs: Alibaba Cloud's RPC
// style puts AccessKeyId, Signature and SecurityToken in the query string,
// and the errors of an http.RoundTripper (*url.Error) quote the whole URL.
// String strips URL queries and user info and blanks the values of
// credential parameters wherever they appear, so that an error text can be
// logged.
package redact

import (
	"regexp"
	"strings"
)

// Placeholder replaces every value String removes.
const Placeholder = "REDACTED"

// secretParam matches a credential-bearing parameter and its value in the
// forms Alibaba Cloud requests and error messages carry them: query strings
// (AccessKeyId=…), their percent-encoded string-to-sign (AccessKeyId%3D…),
// ACS3 Authorization headers (Credential=…,Signature=…), JSON
// ("AccessKeyId":"…") and printed header maps (x-acs-security-token:[…]).
var secretParam = regexp.MustCompile(
	`(?i)((?:AccessKeyId|AccessKeySecret|SecurityToken|BearerToken|Signature|Credential|x-acs-security-token|x-acs-bearer-token)` +
		`(?:=|%3D|%253D|"\s*:\s*"|:\s*\[?))` +
		`((?:[A-Za-z0-9._~+/\-]|%2[BbFf]|%3[Dd]|%252[BbFf]|%253[Dd])+)`)

// urlUserinfo matches the user info of an absolute URL: scheme://user:pass@.
var urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s?#"'<>@]+@`)

// urlQuery matches the query of an absolute URL, up to white space, a quote
// or a fragment.
var urlQuery = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^\s?#"'<>]*)\?[^\s#"'<>]*`)

// String returns s with credentials removed: the query and the user info of
// every absolute URL (scheme://…) are replaced by Placeholder, and so are the
// values of AccessKeyId, AccessKeySecret, SecurityToken, BearerToken,
// Signature and Credential parameters (plain, percent-encoded, in JSON or in
// an ACS3 Authorization header) wherever they appear. Parameter names are
// kept, so "AccessKeyId=LTAI…" becomes "AccessKeyId=REDACTED";
// SignatureNonce and SignatureMethod are not credentials and are kept.
//
// String is meant for error texts on their way to a log; it costs a few
// regular-expression passes and is not for a hot path.
func String(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "://") {
		s = urlUserinfo.ReplaceAllString(s, "${1}"+Placeholder+"@")
		s = urlQuery.ReplaceAllString(s, "${1}?"+Placeholder)
	}
	return secretParam.ReplaceAllString(s, "${1}"+Placeholder)
}

// Error returns String(err.Error()), or "" for a nil err.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return String(err.Error())
}
