package transport

import (
	"encoding/hex"
	"hash/fnv"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-go/tollgate/quota"
)

func TestAlibabaKeys(t *testing.T) {
	rpc := func(host, query string) *http.Request {
		r, err := http.NewRequest(http.MethodPost, "http://"+host+"/?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	v3 := func(host, action, auth string) *http.Request {
		r := rpc(host, "")
		r.Header.Set("x-acs-action", action)
		r.Header.Set("Authorization", auth)
		return r
	}
	hashed := (&AlibabaKeys{}).account("LTAI5tAKID")
	tests := []struct {
		name string
		keys *AlibabaKeys
		req  *http.Request
		want string
	}{
		{"rpc regional host", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "Action=DescribeInstances&AccessKeyId=LTAI5tAKID&RegionId=cn-hangzhou&SignatureNonce=x"),
			"acs:ecs:cn-hangzhou:123:DescribeInstances"},
		{"rpc dashed host", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("ecs-cn-hangzhou.aliyuncs.com", "AccessKeyId=LTAI5tAKID&Action=DescribeInstances"),
			"acs:ecs:cn-hangzhou:123:DescribeInstances"},
		{"RegionId beats host", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("ecs.aliyuncs.com", "AccessKeyId=LTAI5tAKID&Action=DescribeRegions&RegionId=cn-beijing"),
			"acs:ecs:cn-beijing:123:DescribeRegions"},
		{"account depth", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}, Depth: quota.DepthAccount},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "AccessKeyId=LTAI5tAKID&Action=DescribeInstances"),
			"acs:ecs:cn-hangzhou:123"},
		{"unmapped key is hashed", &AlibabaKeys{},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "AccessKeyId=LTAI5tAKID&Action=DescribeInstances"),
			"acs:ecs:cn-hangzhou:" + hashed + ":DescribeInstances"},
		{"escaped values", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "AccessKeyId=LTAI5t%41KID&Action=Describe%49nstances"),
			"acs:ecs:cn-hangzhou:123:DescribeInstances"},
		{"v3", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			v3("ecs.cn-shanghai.aliyuncs.com", "RunInstances", "ACS3-HMAC-SHA256 Credential=LTAI5tAKID,SignedHeaders=host,Signature=abc"),
			"acs:ecs:cn-shanghai:123:RunInstances"},
		{"v3 lower-case names, as the v2 SDK sets them", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			func() *http.Request {
				r := rpc("ecs.cn-shanghai.aliyuncs.com", "")
				r.Header["x-acs-action"] = []string{"RunInstances"}
				r.Header["authorization"] = []string{"ACS3-HMAC-SHA256 Credential=LTAI5tAKID,SignedHeaders=host,Signature=abc"}
				return r
			}(),
			"acs:ecs:cn-shanghai:123:RunInstances"},
		{"other host uses Product", &AlibabaKeys{Product: "ecs", Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("127.0.0.1:8080", "AccessKeyId=LTAI5tAKID&Action=DescribeInstances&RegionId=cn-hangzhou"),
			"acs:ecs:cn-hangzhou:123:DescribeInstances"},
		{"other host without Product", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("127.0.0.1:8080", "AccessKeyId=LTAI5tAKID&RegionId=cn-hangzhou"),
			"acs:127.0.0.1_8080:cn-hangzhou:123"},
		{"no credential: one tenant per host", &AlibabaKeys{},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "Action=DescribeInstances"),
			"acs:ecs"},
		{"no region: one tenant per host", &AlibabaKeys{},
			rpc("example.com", "AccessKeyId=LTAI5tAKID"),
			"acs:example.com"},
		{"hostile values", &AlibabaKeys{},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "AccessKeyId=a%3Ab&RegionId=x%3Ay&Action=%zz"),
			"acs:ecs"},
		{"bad escape in action is dropped", &AlibabaKeys{Accounts: map[string]string{"LTAI5tAKID": "123"}},
			rpc("ecs.cn-hangzhou.aliyuncs.com", "AccessKeyId=LTAI5tAKID&Action=%zz"),
			"acs:ecs:cn-hangzhou:123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.keys.Key(tt.req).String()
			if got != tt.want {
				t.Errorf("Key = %s, want %s", got, tt.want)
			}
			if strings.Contains(got, "LTAI5tAKID") {
				t.Errorf("Key %s contains the AccessKeyId", got)
			}
			if _, err := quota.ParseKey(got); err != nil {
				t.Errorf("Key %s does not parse: %v", got, err)
			}
		})
	}
}

func TestAlibabaKeysHashIsStable(t *testing.T) {
	var a, b AlibabaKeys
	if a.account("AK1") != b.account("AK1") {
		t.Error("the same AccessKeyId hashed to two accounts")
	}
	if a.account("AK1") == a.account("AK2") {
		t.Error("two AccessKeyIds hashed to one account")
	}
	if got := a.account("AK1"); !strings.HasPrefix(got, "ak-") || len(got) != 19 {
		t.Errorf("account = %q, want ak- and 16 hex digits", got)
	}
}

func TestAlibabaKeysAllocs(t *testing.T) {
	keys := &AlibabaKeys{}
	req, _ := http.NewRequest(http.MethodPost, "http://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId=AK&Action=DescribeInstances&RegionId=cn-hangzhou", nil)
	keys.Key(req)
	if n := testing.AllocsPerRun(100, func() { keys.Key(req) }); n != 0 {
		t.Errorf("Key allocates %v times per call, want 0", n)
	}
}

// TestRPCParams checks the query scan: names match whole parameters only,
// the first of each name wins (even when badly escaped), and values are
// unescaped.
func TestRPCParams(t *testing.T) {
	tests := []struct {
		query                string
		akid, region, action string
	}{
		{"AccessKeyId=A&RegionId=R&Action=X", "A", "R", "X"},
		{"XAction=no&Action=X&AccessKeyIdx=no&AccessKeyId=A", "A", "", "X"},
		{"Action=X&Action=Y&RegionId=R&RegionId=S", "", "R", "X"},
		{"AccessKeyId=%zz&AccessKeyId=A", "", "", ""},
		{"Action=Describe%49nstances&RegionId=cn%2Dhangzhou", "", "cn-hangzhou", "DescribeInstances"},
		{"&&A&R=&Action=&AccessKeyId=A", "A", "", ""},
		{"", "", "", ""},
	}
	for _, tt := range tests {
		akid, region, action := rpcParams(tt.query)
		if akid != tt.akid || region != tt.region || action != tt.action {
			t.Errorf("rpcParams(%q) = %q, %q, %q; want %q, %q, %q", tt.query, akid, region, action, tt.akid, tt.region, tt.action)
		}
	}
}

// fnvAccount is the label the unkeyed FNV-64a hash gave an AccessKeyId:
// anyone holding a candidate AccessKeyId could compute it and link the key
// to a tenant's series.
func fnvAccount(akid string) string {
	h := fnv.New64a()
	h.Write([]byte(akid))
	return "ak-" + hex.EncodeToString(h.Sum(nil))
}

// TestAlibabaKeysSalt checks the keyed hash behind "ak-" labels: one salt
// gives one label in every process (a fixed value here), two salts give two,
// no salt gives a label that is stable in the process, and none of them is
// the unkeyed hash anyone could compute from a candidate AccessKeyId.
func TestAlibabaKeysSalt(t *testing.T) {
	const akid = "LTAI5tSALTEDKEY"
	one, two := []byte("salt one"), []byte("salt two")
	a := (&AlibabaKeys{Salt: one}).account(akid)
	if want := "ak-c9479f776b411a12"; a != want {
		t.Errorf("account with salt %q = %s, want %s in every process", one, a, want)
	}
	if again := (&AlibabaKeys{Salt: one}).account(akid); again != a {
		t.Errorf("two AlibabaKeys with one salt gave %s and %s", a, again)
	}
	if b := (&AlibabaKeys{Salt: two}).account(akid); b == a {
		t.Errorf("salts %q and %q gave the same account %s", one, two, a)
	}
	unsalted := (&AlibabaKeys{}).account(akid)
	if again := (&AlibabaKeys{Salt: []byte{}}).account(akid); again != unsalted {
		t.Errorf("no salt gave %s and %s in one process", unsalted, again)
	}
	for _, got := range []string{a, unsalted} {
		if got == fnvAccount(akid) {
			t.Errorf("account %s is the unkeyed FNV-64a of the AccessKeyId", got)
		}
		if strings.Contains(got, akid) || !strings.HasPrefix(got, "ak-") || len(got) != 19 {
			t.Errorf("account = %q, want ak- and 16 hex digits, no AccessKeyId", got)
		}
	}
}

// TestConfigSalt checks that Config.Salt reaches the default key function.
func TestConfigSalt(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://ecs.cn-hangzhou.aliyuncs.com/?AccessKeyId=LTAI5tSALTEDKEY&Action=DescribeInstances&RegionId=cn-hangzhou", nil)
	salt := []byte("salt one")
	got := New(nil, Config{Salt: salt}).Key(req)
	if want := (&AlibabaKeys{Salt: salt}).Key(req); got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
	if strings.Contains(got.String(), "LTAI5tSALTEDKEY") {
		t.Errorf("Key %s holds the AccessKeyId", got)
	}
}
