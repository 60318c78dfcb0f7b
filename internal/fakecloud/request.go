package fakecloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// maxBodyBytes bounds the form body read from a request.
const maxBodyBytes = 1 << 20

// identity is what the gateway reads from a request before admitting it.
type identity struct {
	action      string
	version     string
	accessKeyID string
	regionID    string
	nonce       string
	timestamp   string
	style       string // "rpc" or "v3"
}

// parseIdentity reads the RPC parameters (query or form body) and the V3
// headers of r. It never fails: missing values are empty.
func parseIdentity(w http.ResponseWriter, r *http.Request) identity {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	}
	// A bad or oversized body leaves the query parameters usable.
	_ = r.ParseForm()
	form := r.Form
	if form == nil {
		form = url.Values{}
	}
	id := identity{
		action:      form.Get("Action"),
		version:     form.Get("Version"),
		accessKeyID: form.Get("AccessKeyId"),
		regionID:    form.Get("RegionId"),
		nonce:       form.Get("SignatureNonce"),
		timestamp:   form.Get("Timestamp"),
		style:       "rpc",
	}
	h := r.Header
	if v := h.Get("x-acs-action"); v != "" {
		id.style = "v3"
		id.action = v
		if v := h.Get("x-acs-version"); v != "" {
			id.version = v
		}
		if v := h.Get("x-acs-signature-nonce"); v != "" {
			id.nonce = v
		}
		if v := h.Get("x-acs-date"); v != "" {
			id.timestamp = v
		}
	}
	if id.accessKeyID == "" {
		id.accessKeyID = authAccessKeyID(h.Get("Authorization"))
	}
	if id.nonce == "" {
		id.nonce = h.Get("x-acs-signature-nonce")
	}
	return id
}

// authAccessKeyID returns the AccessKeyId of an Authorization header:
// "ACS3-HMAC-SHA256 Credential=AK,SignedHeaders=…,Signature=…" (V3) or
// "acs AK:signature" (ROA).
func authAccessKeyID(auth string) string {
	scheme, params, ok := strings.Cut(strings.TrimSpace(auth), " ")
	if !ok {
		return ""
	}
	if strings.EqualFold(scheme, "acs") {
		ak, _, _ := strings.Cut(strings.TrimSpace(params), ":")
		return ak
	}
	for p := range strings.SplitSeq(params, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(k, "Credential") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// timestampLayouts are the forms of Timestamp and x-acs-date accepted.
var timestampLayouts = []string{
	"2006-01-02T15:04:05Z", // what the SDKs send
	time.RFC3339Nano,
	http.TimeFormat,
}

// parseTimestamp parses a request timestamp.
func parseTimestamp(s string) (time.Time, bool) {
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// nonceSeq makes NewRequest nonces unique within the process.
var nonceSeq atomic.Uint64

// NewNonce returns a fresh SignatureNonce.
func NewNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-" + hexUint(nonceSeq.Add(1))
}

func hexUint(n uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	i := len(b)
	for {
		i--
		b[i] = digits[n&15]
		n >>= 4
		if n == 0 {
			return string(b[i:])
		}
	}
}

// NewRequest returns an RPC-style request like the v1 SDK sends: POST
// baseURL/?Action=action&AccessKeyId=…&SignatureNonce=<fresh>&Timestamp=<time.Now()>…
// with an empty form body. The signature is a placeholder (fakecloud does
// not verify it). baseURL is a server URL such as [Server].URL, or any
// "http://host" for [Cloud.RoundTripper]. If the Cloud uses a [Config.Now]
// far from time.Now, set the Timestamp yourself.
func NewRequest(ctx context.Context, baseURL, accessKeyID, action string) (*http.Request, error) {
	q := url.Values{
		"Action":           {action},
		"Version":          {"2014-05-26"},
		"Format":           {"JSON"},
		"AccessKeyId":      {accessKeyID},
		"RegionId":         {"cn-hangzhou"},
		"SignatureMethod":  {"HMAC-SHA1"},
		"SignatureVersion": {"1.0"},
		"SignatureNonce":   {NewNonce()},
		"Timestamp":        {time.Now().UTC().Format("2006-01-02T15:04:05Z")},
		"Signature":        {"fakecloud"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(baseURL, "/")+"/?"+q.Encode(), http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}
