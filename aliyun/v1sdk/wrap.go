package v1sdk

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"

	"github.com/tollgate-go/tollgate/transport"
)

// defaultConnectTimeout is the v1 SDK's own default.
const defaultConnectTimeout = 5 * time.Second

// Wrap routes a v1 SDK client (github.com/aliyun/alibaba-cloud-sdk-go/sdk)
// through a new tollgate Transport made from cfg, and returns that
// Transport: keep it, and route the other clients of the account through
// it with Share, so that they share the tenants' limiters. Service clients
// embed *sdk.Client: pass &ecsClient.Client.
//
// Once its transport is not an *http.Transport, the SDK stops applying its
// connect timeout, proxy and TLS settings, so Wrap carries them over into the
// Transport's next RoundTripper: the client's connect timeout (5 s if unset),
// its HTTP and HTTPS proxies and no-proxy list (else the environment's), and
// its HTTPS-insecure setting. A transport the client already had is kept as
// the next RoundTripper (an *http.Transport is cloned, then given those
// settings).
//
// Wrap turns the SDK's AutoRetry off: it resends 5xx answers back to back,
// with no backoff and no regard for the quota. Make the calls with Call,
// which retries by calling the SDK again and carries the call's context
// into the Transport.
//
// The SDK's http.Client.Timeout (the client's read timeout, 10 s by
// default) covers the whole round trip, including any time spent waiting
// for quota in the Transport; the context given to Call bounds it too.
//
// The v1 SDK's Client is not safe for concurrent use: each call writes its
// http.Client's Timeout (sdk.Client.setTimeout), a data race when calls
// overlap. Give each goroutine its own client and route them all through
// one Transport with Share.
func Wrap(client *sdk.Client, cfg transport.Config) (*transport.Transport, error) {
	if err := checkClient(client); err != nil {
		return nil, err
	}
	next, err := nextTransport(client)
	if err != nil {
		return nil, err
	}
	t := transport.New(next, cfg)
	route(client, t)
	return t, nil
}

// Share routes another v1 SDK client through t, a Transport made by Wrap
// (or transport.New), so that many clients (one per goroutine, see Wrap)
// share one set of tenant limiters. t keeps the next RoundTripper it was made with, and so the
// connect timeout, proxy and TLS settings of the client given to Wrap. Like
// Wrap, Share turns the client's AutoRetry off.
func Share(client *sdk.Client, t *transport.Transport) error {
	if err := checkClient(client); err != nil {
		return err
	}
	if t == nil {
		return errors.New("v1sdk: Share needs a Transport, e.g. the one Wrap returned")
	}
	route(client, t)
	return nil
}

func checkClient(client *sdk.Client) error {
	if client == nil || client.GetConfig() == nil {
		return errors.New("v1sdk: need an initialised *sdk.Client (made by sdk or a service's NewClient… function)")
	}
	if _, ok := client.GetConfig().Transport.(*clientTransport); ok {
		return errors.New("v1sdk: client is already routed through a tollgate Transport")
	}
	return nil
}

// route sends the client's requests through t, by a clientTransport of
// its own that Call binds to each call's context, and turns off its own
// retries.
func route(client *sdk.Client, t *transport.Transport) {
	ct := &clientTransport{next: t}
	client.SetTransport(ct)
	conf := client.GetConfig()
	conf.Transport = ct // so that GetConfig tells, and Call and a second Wrap see it
	conf.AutoRetry = false
	conf.MaxRetryTime = 0
}

// nextTransport builds the RoundTripper the tollgate Transport sends through,
// with the settings the SDK would have applied itself.
func nextTransport(client *sdk.Client) (http.RoundTripper, error) {
	conf := client.GetConfig()
	existing := conf.Transport
	if existing == nil && conf.HttpTransport != nil {
		existing = conf.HttpTransport
	}
	var base *http.Transport
	switch rt := existing.(type) {
	case nil:
		base = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		base = rt.Clone()
	default:
		return rt, nil // the user's own RoundTripper: its settings are its own
	}
	timeout := client.GetConnectTimeout()
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	base.DialContext = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	if client.GetHTTPSInsecure() {
		if base.TLSClientConfig == nil {
			base.TLSClientConfig = &tls.Config{}
		}
		base.TLSClientConfig.InsecureSkipVerify = true
	}
	proxy, err := proxyFunc(client)
	if err != nil {
		return nil, err
	}
	if proxy != nil {
		base.Proxy = proxy
	}
	return base, nil
}

// proxyFunc returns the proxy rule of a client that names its own proxies,
// matching its no-proxy list as the SDK does, or nil to keep the transport's
// (by default the environment's).
func proxyFunc(client *sdk.Client) (func(*http.Request) (*url.URL, error), error) {
	httpProxy, httpsProxy := client.GetHttpProxy(), client.GetHttpsProxy()
	if httpProxy == "" && httpsProxy == "" {
		return nil, nil
	}
	var proxies [2]*url.URL
	for i, raw := range [2]string{httpProxy, httpsProxy} {
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("v1sdk: client proxy: %w", err)
		}
		proxies[i] = u
	}
	var skip []*regexp.Regexp
	if np := client.GetNoProxy(); np != "" {
		for _, v := range strings.Split(np, ",") {
			if strings.HasPrefix(v, "*") {
				v = "." + v
			}
			re, err := regexp.Compile(v)
			if err != nil {
				return nil, fmt.Errorf("v1sdk: client no-proxy entry %q: %w", v, err)
			}
			skip = append(skip, re)
		}
	}
	return func(req *http.Request) (*url.URL, error) {
		for _, re := range skip {
			if re.MatchString(req.Host) {
				return nil, nil
			}
		}
		if req.URL.Scheme == "https" {
			return proxies[1], nil
		}
		return proxies[0], nil
	}, nil
}
