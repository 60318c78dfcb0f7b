package transport

import "github.com/tollgate-go/tollgate/internal/redact"

// RedactError returns err's text fit for a log, or "" for a nil err: the
// query and user info of every URL in it are replaced by "REDACTED", and so
// are the values of AccessKeyId, Signature, SecurityToken and other
// credential parameters wherever else they appear; hosts, paths and the
// rest of the text are kept.
//
// The errors http.Client.Do returns are net/http's *url.Error, whose text
// quotes the whole URL, and an Alibaba Cloud RPC request signs its URL: pass
// every error of a call through a Transport to RedactError before logging
// it. The errors tollgate defines (retry.GiveUpError, adaptive.WaitError,
// aliyun.Error) print redacted already, and so does Config.Logger.
//
// RedactError costs a few regular-expression passes over the text: it is for
// errors on their way to a log, not for a hot path.
func RedactError(err error) string { return redact.Error(err) }
