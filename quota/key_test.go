package quota

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	long := strings.Repeat("a", 128)
	tests := []struct {
		in    string
		want  Key
		depth int
		ok    bool
	}{
		{"acs", Key{}, 0, true},
		{"acs:ecs", Key{Product: "ecs"}, DepthProduct, true},
		{"acs:ecs:cn-hangzhou", Key{Product: "ecs", Region: "cn-hangzhou"}, DepthRegion, true},
		{"acs:ecs:cn-hangzhou:1234567890123456", Key{"ecs", "cn-hangzhou", "1234567890123456", ""}, DepthAccount, true},
		{"acs:ecs:cn-hangzhou:123:DescribeInstances", Key{"ecs", "cn-hangzhou", "123", "DescribeInstances"}, DepthAPI, true},
		{"acs:" + long, Key{Product: long}, DepthProduct, true},
		{"acs:ecs:*:123", Key{"ecs", "*", "123", ""}, DepthAccount, true},
		{"acs:ecs:région", Key{Product: "ecs", Region: "région"}, DepthRegion, true},
		// Hostile keys.
		{"", Key{}, 0, false},
		{"ac", Key{}, 0, false},
		{"ACS:ecs", Key{}, 0, false},
		{"acsx", Key{}, 0, false},
		{"acs:", Key{}, 0, false},
		{"acs::", Key{}, 0, false},
		{"acs:ecs:", Key{}, 0, false},
		{"acs::cn-hangzhou", Key{}, 0, false},
		{"acs:ecs::123", Key{}, 0, false},
		{"acs:ecs:cn-hangzhou:123:Describe:Extra", Key{}, 0, false},
		{"acs:e cs", Key{}, 0, false},
		{"acs:ecs\t", Key{}, 0, false},
		{"acs:ecs\n:x", Key{}, 0, false},
		{"acs:ecs\x00", Key{}, 0, false},
		{"acs:ecs\x7f", Key{}, 0, false},
		{" acs:ecs", Key{}, 0, false},
		{"acs:" + long + "a", Key{}, 0, false},
		{"acs:" + strings.Repeat("a:", 300), Key{}, 0, false},
		{strings.Repeat("x", 1<<20), Key{}, 0, false},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			k, err := ParseKey(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseKey(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrBadKey) {
					t.Fatalf("error %v does not wrap ErrBadKey", err)
				}
				if k != (Key{}) {
					t.Fatalf("ParseKey returned %+v with an error", k)
				}
				return
			}
			if k != tt.want || k.Depth() != tt.depth {
				t.Fatalf("ParseKey(%q) = %+v depth %d, want %+v depth %d", tt.in, k, k.Depth(), tt.want, tt.depth)
			}
			if s := k.String(); s != tt.in {
				t.Fatalf("String() = %q, want %q", s, tt.in)
			}
		})
	}
}

func TestKeyPrefix(t *testing.T) {
	k := Key{"ecs", "cn-hangzhou", "123", "DescribeInstances"}
	want := []string{"acs", "acs:ecs", "acs:ecs:cn-hangzhou", "acs:ecs:cn-hangzhou:123", "acs:ecs:cn-hangzhou:123:DescribeInstances"}
	for d := -1; d <= DepthAPI+1; d++ {
		w := want[min(max(d, 0), DepthAPI)]
		p := k.Prefix(d)
		if p.String() != w {
			t.Errorf("Prefix(%d) = %q, want %q", d, p, w)
		}
		if !k.HasPrefix(p) {
			t.Errorf("%q does not have prefix %q", k, p)
		}
		if p.Depth() > d && d >= 0 {
			t.Errorf("Prefix(%d) has depth %d", d, p.Depth())
		}
	}
	for _, tt := range []struct {
		k, p Key
		want bool
	}{
		{Key{Product: "ecs2"}, Key{Product: "ecs"}, false},
		{Key{Product: "ecs"}, Key{Product: "ecs", Region: "r"}, false},
		{Key{Product: "ecs", Region: "r"}, Key{}, true},
		{Key{"ecs", "r", "1", ""}, Key{"ecs", "r", "2", ""}, false},
		// A key with a gap: fields after the gap do not count.
		{Key{Product: "ecs", Account: "1"}, Key{Product: "ecs"}, true},
		{Key{Product: "ecs"}, Key{Product: "ecs", Account: "1"}, false},
	} {
		if got := tt.k.HasPrefix(tt.p); got != tt.want {
			t.Errorf("%+v.HasPrefix(%+v) = %v", tt.k, tt.p, got)
		}
	}
	if s := (Key{Product: "ecs", Account: "1"}).String(); s != "acs:ecs" {
		t.Errorf("String of a key with a gap = %q", s)
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"acs", "acs:ecs:cn-hangzhou:123:DescribeInstances", "acs::", "acs:a:b:c:d:e", "acs:é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if k.String() != s {
			t.Fatalf("round trip: %q -> %+v -> %q", s, k, k.String())
		}
		if k2, err := ParseKey(k.String()); err != nil || k2 != k {
			t.Fatalf("reparse: %+v, %v", k2, err)
		}
	})
}
