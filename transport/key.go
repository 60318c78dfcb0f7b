package transport

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tollgate-go/tollgate/quota"
)

// KeyFunc names the tenant of a request: whoever shares one quota at the
// server. It must not modify the request and must be safe for concurrent use.
type KeyFunc func(*http.Request) quota.Key

// AlibabaKeys reads Alibaba Cloud API requests into tenant keys. The zero
// value is ready to use. AlibabaKeys is safe for concurrent use; its fields
// must not be changed after first use.
//
// It reads the RPC style (AccessKeyId, RegionId and Action in the query) and
// the V3 style (x-acs-action, and the Credential in an ACS3-HMAC-SHA256
// Authorization header). The product comes from an Alibaba host,
// ecs.cn-hangzhou.aliyuncs.com or ecs-cn-hangzhou.aliyuncs.com giving "ecs",
// else from Product; the region from RegionId, else from the host.
//
// The AccessKeyId never appears in a key: the account is looked up in
// Accounts, and an AccessKeyId missing there stands for itself through a
// keyed hash ("ak-" and 16 hex digits of its HMAC-SHA256 under Salt). A
// request that names no AccessKeyId gets the key acs:<product> of its host,
// so such requests share one tenant per host.
type AlibabaKeys struct {
	// Accounts maps AccessKeyIds to the account that owns them. Alibaba
	// Cloud's quotas are per account, shared by all of its AccessKeys, so
	// naming the account lets the keys of one account share one limiter.
	// Nil means every AccessKeyId is its own account.
	Accounts map[string]string

	// Product names the product when the host is not an Alibaba Cloud host
	// (a test server, a proxy). Empty means the host itself, with ':' made '_'.
	Product string

	// Depth cuts keys to a coarser tenant (see quota.Key.Prefix). Zero means
	// quota.DepthAPI: Alibaba Cloud counts quotas per account and API
	// operation, so one operation's throttles do not slow another's.
	Depth int

	// Salt keys the hash that stands for an AccessKeyId missing from
	// Accounts. Keep it secret: whoever knows it and holds a candidate
	// AccessKeyId can tell which tenant, metric series or log line is that
	// key's, as anyone could with an unkeyed hash.
	//
	// Empty means a salt drawn at random once per process. That keeps the
	// AccessKeyIds unlinkable without any setup, but the labels then change
	// when the process restarts and differ between processes: several
	// processes whose metrics or stores must agree on a tenant (replicas
	// summed by tenant in Prometheus, a store shared between them) must all
	// set the same Salt, or name every AccessKeyId's account in Accounts,
	// which needs no hash. A fixed built-in salt was not chosen as the
	// default: it would give stable labels but no secrecy, since it is in
	// this source.
	Salt []byte

	hashes   sync.Map // AccessKeyId -> "ak-…"; bounded by maxHashCache
	hashSize atomic.Int32
}

// maxHashCache bounds how many AccessKeyId hashes AlibabaKeys remembers.
const maxHashCache = 4096

// Key returns the tenant key of req. It allocates nothing for an RPC request
// with an unescaped query once the AccessKeyId has been seen.
func (a *AlibabaKeys) Key(req *http.Request) quota.Key {
	return a.keyOf(requestFields(req))
}

// requestFields reads what an Alibaba tenant key is made of: the host, and
// the AccessKeyId, RegionId and Action of an RPC request (of a V3 request,
// the AccessKeyId and Action from its headers).
func requestFields(req *http.Request) (host, akid, region, action string) {
	host = req.URL.Host
	if host == "" {
		host = req.Host
	}
	akid, region, action = rpcParams(req.URL.RawQuery)
	if akid == "" {
		akid = v3Credential(header(req.Header, "Authorization", "authorization"))
		if action == "" {
			action = header(req.Header, "X-Acs-Action", "x-acs-action")
		}
	}
	return host, akid, region, action
}

// keyOf makes the tenant key of a request from its fields (see
// requestFields).
func (a *AlibabaKeys) keyOf(host, akid, region, action string) quota.Key {
	product, hostRegion := a.productRegion(host)
	if region == "" {
		region = hostRegion
	}
	if akid == "" || !keyField(region) {
		return quota.Key{Product: product}
	}
	k := quota.Key{Product: product, Region: region, Account: a.account(akid)}
	if keyField(action) {
		k.API = action
	}
	depth := a.Depth
	if depth == 0 {
		depth = quota.DepthAPI
	}
	return k.Prefix(depth)
}

// processSalt is the Salt of every AlibabaKeys that sets none: 32 random
// bytes drawn once per process.
var processSalt = sync.OnceValue(func() []byte {
	salt := make([]byte, 32)
	rand.Read(salt) // never fails (crypto/rand.Read crashes the program instead)
	return salt
})

// account returns the account of akid: its entry in Accounts, else its
// keyed hash, which is remembered (up to maxHashCache AccessKeyIds) so that
// a known AccessKeyId costs no allocation.
func (a *AlibabaKeys) account(akid string) string {
	if acct, ok := a.Accounts[akid]; ok && keyField(acct) {
		return acct
	}
	if v, ok := a.hashes.Load(akid); ok {
		return v.(string)
	}
	salt := a.Salt
	if len(salt) == 0 {
		salt = processSalt()
	}
	h := hmac.New(sha256.New, salt)
	h.Write([]byte(akid))
	var sum [sha256.Size]byte
	acct := "ak-" + hex.EncodeToString(h.Sum(sum[:0])[:8])
	if a.hashSize.Load() < maxHashCache {
		if _, loaded := a.hashes.LoadOrStore(strings.Clone(akid), acct); !loaded {
			a.hashSize.Add(1)
		}
	}
	return acct
}

// productRegion reads the product and region from an Alibaba Cloud host:
// ecs.cn-hangzhou.aliyuncs.com, ecs-cn-hangzhou.aliyuncs.com or
// ecs.aliyuncs.com.
func (a *AlibabaKeys) productRegion(host string) (product, region string) {
	hostname := host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		hostname = host[:i]
	}
	name, ok := strings.CutSuffix(strings.ToLower(hostname), ".aliyuncs.com")
	if !ok || name == "" {
		return a.otherProduct(host), ""
	}
	product, region, _ = strings.Cut(name, ".")
	if region == "" {
		if p, r, ok := strings.Cut(product, "-"); ok && strings.Count(r, "-") >= 1 {
			product, region = p, r
		}
	}
	if strings.Contains(region, ".") {
		region = "" // e.g. ecs.vpc-proxy.cn-hangzhou: not a plain region
	}
	if !keyField(product) {
		return a.otherProduct(host), ""
	}
	return product, region
}

func (a *AlibabaKeys) otherProduct(host string) string {
	if a.Product != "" {
		return a.Product
	}
	if host == "" {
		return "unknown"
	}
	p := strings.ReplaceAll(host, ":", "_")
	if !keyField(p) {
		return "unknown"
	}
	return p
}

// keyField reports whether s can stand as a field of a quota.Key.
func keyField(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == ':' || c == 0x7f {
			return false
		}
	}
	return true
}

// rpcParams reads AccessKeyId, RegionId and Action from a raw query: the
// first parameter of each name. A value is "" if absent or badly escaped.
// It goes through the query once, stopping when it has all three, and
// allocates only to unescape.
func rpcParams(raw string) (akid, region, action string) {
	const haveAKID, haveRegion, haveAction = 1, 2, 4
	have := 0
	for raw != "" && have != haveAKID|haveRegion|haveAction {
		kv := raw
		if i := strings.IndexByte(raw, '&'); i >= 0 {
			kv, raw = raw[:i], raw[i+1:]
		} else {
			raw = ""
		}
		switch {
		case len(kv) < len("Action="):
		case kv[0] == 'A':
			if v, ok := strings.CutPrefix(kv, "AccessKeyId="); ok {
				if have&haveAKID == 0 {
					akid, have = unescape(v), have|haveAKID
				}
			} else if v, ok := strings.CutPrefix(kv, "Action="); ok && have&haveAction == 0 {
				action, have = unescape(v), have|haveAction
			}
		case kv[0] == 'R':
			if v, ok := strings.CutPrefix(kv, "RegionId="); ok && have&haveRegion == 0 {
				region, have = unescape(v), have|haveRegion
			}
		}
	}
	return akid, region, action
}

// unescape query-unescapes v, allocating only if it has to; "" if v is badly
// escaped.
func unescape(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '%' || c == '+' {
			u, err := url.QueryUnescape(v)
			if err != nil {
				return ""
			}
			return u
		}
	}
	return v
}

// header returns the first value of a header by its canonical name, or by
// its lower-case name: the v2 SDK sets "x-acs-action" in the map directly,
// and only the wire would canonicalise it.
func header(h http.Header, canonical, lower string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	if v := h[lower]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// v3Credential returns the AccessKeyId of an ACS3 Authorization header:
// "ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=…,Signature=…".
func v3Credential(auth string) string {
	if !strings.HasPrefix(auth, "ACS3-") {
		return ""
	}
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ := strings.Cut(rest, ",")
	return strings.TrimSpace(cred)
}
