// Package transport keeps an HTTP client inside its server's quota: its
// Transport is an http.RoundTripper that, before each request, waits its
// turn on a limiter for the request's tenant, and after each answer tells
// that limiter what the server said.
//
// The model: a tenant is one quota at the server, named by an ARN-shaped
// key (quota.Key, e.g. acs:ecs:cn-hangzhou:<account>:DescribeInstances)
// that the Transport reads off the request (Config.Key; by default
// AlibabaKeys, which never puts an AccessKeyId in a key). Each tenant's
// limiter (package adaptive) paces requests at the quota it knows: a rule
// you give (Config.Rules), what the server's rate-limit headers and retry
// hints say, or, where the server says nothing but "throttled", what it
// learns from the throttles. A request waits its turn, but never past its
// context's deadline: a wait that could not end in time fails at once,
// unsent, with an error matching context.DeadlineExceeded. Every answer,
// throttles included, reaches the caller as it came; the Transport never
// resends a request. Retrying belongs above the signer (package retry,
// and aliyun's Call for the Alibaba Cloud SDKs), so that each attempt is
// signed afresh.
//
// The happy path is one Transport per process, shared by every client of
// the same accounts, with the zero Config:
//
//	client := &http.Client{Transport: transport.New(nil, transport.Config{})}
//	req, _ := http.NewRequestWithContext(ctx, "POST", url, body) // a deadline bounds the wait
//	resp, err := client.Do(req)
//
// Options a service may set: Config.Accounts (which AccessKeyIds share an
// account's quota) and Config.Salt (the same tenant names in every
// process), Config.Breaker (a circuit breaker per tenant), Config.Store (a
// quota shared among processes, see package redisquota), and
// Config.Observer and Config.Logger (metrics and logs). Errors print no
// credential; pass net/http's own through RedactError before logging.
package transport
