package quota

import (
	"errors"
	"fmt"
	"strings"
)

// Depths of a Key, from the coarsest tenant to the finest. Key.Prefix cuts a
// key to one of them.
const (
	DepthProduct = 1 // acs:ecs
	DepthRegion  = 2 // acs:ecs:cn-hangzhou
	DepthAccount = 3 // acs:ecs:cn-hangzhou:1234567890123456 (the default tenant)
	DepthAPI     = 4 // acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances
)

// ErrBadKey is wrapped by every error ParseKey returns.
var ErrBadKey = errors.New("quota: malformed key")

// Key names a tenant: whoever shares one quota at the server. It is shaped
// like an Alibaba Cloud ARN prefix,
//
//	acs:<product>:<region>:<account>[:<api>]
//
// for example acs:ecs:cn-hangzhou:1234567890123456:DescribeInstances. A key
// may stop early (acs:ecs names every ECS tenant); its fields are filled from
// the left, so Product is set whenever Region is, and so on. The zero Key is
// the root, "acs", which is a prefix of every key.
//
// Key is a comparable value and can be used as a map key.
type Key struct {
	Product string // e.g. "ecs"; lower case
	Region  string // e.g. "cn-hangzhou"
	Account string // the quota holder, an account id or a hash that stands for it
	API     string // the API operation, e.g. "DescribeInstances"
}

// ParseKey parses the String form of a Key. Fields may not be empty, may not
// contain ':' or white space, and may not be longer than 128 bytes; at most
// four fields follow "acs".
func ParseKey(s string) (Key, error) {
	if len(s) > 4*129+3 {
		return Key{}, fmt.Errorf("%w: %d bytes is too long", ErrBadKey, len(s))
	}
	rest, ok := strings.CutPrefix(s, "acs")
	if !ok {
		return Key{}, fmt.Errorf("%w: %q does not start with \"acs\"", ErrBadKey, s)
	}
	var k Key
	if rest == "" {
		return k, nil
	}
	if rest[0] != ':' {
		return Key{}, fmt.Errorf("%w: %q does not start with \"acs:\"", ErrBadKey, s)
	}
	fields := [4]*string{&k.Product, &k.Region, &k.Account, &k.API}
	parts := strings.Split(rest[1:], ":")
	if len(parts) > len(fields) {
		return Key{}, fmt.Errorf("%w: %q has %d fields after \"acs\", at most 4", ErrBadKey, s, len(parts))
	}
	for i, p := range parts {
		if err := checkField(p); err != nil {
			return Key{}, fmt.Errorf("%w: %q field %d: %s", ErrBadKey, s, i+1, err)
		}
		*fields[i] = p
	}
	return k, nil
}

func checkField(p string) error {
	if p == "" {
		return errors.New("empty")
	}
	if len(p) > 128 {
		return errors.New("longer than 128 bytes")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == ':' || c == 0x7f {
			return fmt.Errorf("byte %#x at %d not allowed", c, i)
		}
	}
	return nil
}

// String returns the key in its ARN-shaped form, e.g.
// "acs:ecs:cn-hangzhou:1234567890123456". It stops at the first empty field.
func (k Key) String() string {
	n := k.Depth()
	if n == 0 {
		return "acs"
	}
	var b strings.Builder
	b.Grow(4 + len(k.Product) + len(k.Region) + len(k.Account) + len(k.API) + 3)
	b.WriteString("acs")
	for i, f := range [4]string{k.Product, k.Region, k.Account, k.API} {
		if i == n {
			break
		}
		b.WriteByte(':')
		b.WriteString(f)
	}
	return b.String()
}

// Depth reports how many fields the key has before its first empty one:
// 0 for the root, DepthAPI for a fully qualified key.
func (k Key) Depth() int {
	switch {
	case k.Product == "":
		return 0
	case k.Region == "":
		return DepthProduct
	case k.Account == "":
		return DepthRegion
	case k.API == "":
		return DepthAccount
	}
	return DepthAPI
}

// Prefix cuts the key to at most depth fields, naming a coarser tenant:
// Prefix(DepthAccount) of acs:ecs:cn-hangzhou:123:DescribeInstances is
// acs:ecs:cn-hangzhou:123. A depth at or beyond the key's own returns the key
// unchanged; a depth of 0 or less returns the root.
func (k Key) Prefix(depth int) Key {
	switch {
	case depth <= 0:
		return Key{}
	case depth == DepthProduct:
		return Key{Product: k.Product}
	case depth == DepthRegion:
		return Key{Product: k.Product, Region: k.Region}
	case depth == DepthAccount:
		return Key{Product: k.Product, Region: k.Region, Account: k.Account}
	}
	return k
}

// HasPrefix reports whether p is a prefix of k, field by field: acs:ecs is a
// prefix of acs:ecs:cn-hangzhou but not of acs:ecs2.
func (k Key) HasPrefix(p Key) bool {
	return k.Prefix(p.Depth()) == p
}
