// Package quota is the server's voice: it names tenants and turns whatever a
// response says about rate limits into one Observation.
//
// A Key names a tenant in the shape of an Alibaba Cloud ARN prefix,
// acs:<product>:<region>:<account>[:<api>]. Rules holds static quotas matched
// by longest key prefix. Parse reads an *http.Response (status, headers, and
// for error answers a bounded peek at the body that is handed back intact)
// into an Observation: limit, window, remaining, reset time, retry hint,
// whether it was a throttle, whether it was transient.
//
// Every header value is untrusted: the parsers accept every legal form, ignore
// and report malformed values (Observation.Malformed), and cap every duration
// hint (Parser.MaxHint, 1 min by default), so a hostile or broken server can
// never make a client sleep without bound; a reset further off is kept, as
// said, in ResetSaid, which tells a window's length and how long what is
// left must last, never how long to wait. The IETF RateLimit-Policy and
// RateLimit fields are read as RFC 9651 structured-field lists, checked
// against the HTTP working group's test suite: a field parses whole or is
// ignored whole, never half read. Parse takes the time of the answer
// as a parameter and never reads the clock, so tests are tables of
// timestamps. A Parser, like the zero Parser that Parse uses, is safe for
// concurrent use; parsing an answer without rate-limit headers costs one pass
// over the header map and no allocation.
package quota
