package aliyun

import "github.com/tollgate-go/tollgate/internal/redact"

// Redact returns s with URL queries and the values of AccessKeyIds, secrets,
// security tokens and signatures replaced by "REDACTED", in the forms
// Alibaba Cloud requests and error messages carry them: query strings, their
// percent-encoded string-to-sign, ACS3 Authorization headers, JSON and
// printed header maps. tollgate passes every error text it produces through
// it; use it on anything of your own that may quote a request.
func Redact(s string) string { return redact.String(s) }
