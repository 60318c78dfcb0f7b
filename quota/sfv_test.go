package quota

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The HTTP working group's Structured Field Values test suite, copied
// unchanged with its licence and origin (testdata/structured-field-tests).
const suiteDir = "testdata/structured-field-tests"

// sfCase is one case of the suite.
type sfCase struct {
	file       string
	Name       string   `json:"name"`
	Raw        []string `json:"raw"`
	HeaderType string   `json:"header_type"`
	Expected   any      `json:"expected"`
	MustFail   bool     `json:"must_fail"`
	CanFail    bool     `json:"can_fail"`
}

func (c *sfCase) String() string { return c.file + ": " + c.Name }

// loadSuite reads every case of the suite.
func loadSuite(tb testing.TB) []sfCase {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(suiteDir, "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no suite files in %s: %v", suiteDir, err)
	}
	var all []sfCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		var cases []sfCase
		if err := d.Decode(&cases); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		for i := range cases {
			cases[i].file = filepath.Base(f)
		}
		all = append(all, cases...)
	}
	return all
}

// itemsValidAsLists are the suite's item cases that must fail as an item
// but are valid lists, so the list parser must accept them, with this many
// members. Each was read by hand against RFC 9651's list algorithm.
var itemsValidAsLists = map[string]int{
	"item.json: empty item":               0, // "" is the empty list
	"item.json: trailing space":           1, // "1 \t ": a list discards OWS after a member
	"number.json: comma":                  2, // "2,3"
	"token-generated.json: 0x2c in token": 2, // "a,a"
}

// skipHeaderTypes are the suite's header types that are not run, and why.
var skipHeaderTypes = map[string]string{
	"dictionary": "the RateLimit fields are lists; tollgate parses no dictionary",
}

// TestStructuredFieldSuite runs the suite through the list parser: every
// list case, and every item case read as a one-member list. Every bare-item
// type is parsed (dates and display strings too), so no list or item case
// is skipped; dictionary cases are (skipHeaderTypes).
func TestStructuredFieldSuite(t *testing.T) {
	var ran, skipped, failed int
	for _, c := range loadSuite(t) {
		if skipHeaderTypes[c.HeaderType] != "" {
			skipped++
			continue
		}
		ran++
		got, ok := parseSuiteList(c.Raw)
		var want string
		switch {
		case c.MustFail && c.HeaderType == "item":
			if n, listOK := itemsValidAsLists[c.String()]; listOK {
				if got, ok := countMembers(c.Raw...); !ok || got != n {
					t.Errorf("%v: %q parsed as %q (ok %v), want a valid list of %d members", &c, c.Raw, got, ok, n)
					failed++
				}
				continue
			}
			fallthrough
		case c.MustFail:
			if ok {
				t.Errorf("%v: %q parsed as %q, must fail", &c, c.Raw, got)
				failed++
			}
			continue
		case c.HeaderType == "item":
			want = "|" + renderMember(t, c.Expected)
		default:
			want = renderList(t, c.Expected)
		}
		if ok && got == want || !ok && c.CanFail {
			continue
		}
		failed++
		t.Errorf("%v: %q parsed as %q (ok %v), want %q", &c, c.Raw, got, ok, want)
	}
	t.Logf("%d cases run, %d dictionary cases skipped, %d failed", ran, skipped, failed)
	if ran < 1000 {
		t.Errorf("only %d cases ran", ran)
	}
}

// parseSuiteList parses lines with sfList and renders what it saw, member
// by member, in the form renderList gives the suite's expectations.
func parseSuiteList(lines []string) (string, bool) {
	var (
		b      strings.Builder
		params *paramSet
	)
	flush := func() {
		if params != nil {
			b.WriteString(params.String())
			params = nil
		}
	}
	l := newSFList(lines)
	l.seen = func(ev sfEvent, key string, v sfValue) {
		switch ev {
		case sfSeenItem, sfSeenInner, sfSeenInnerItem, sfSeenInnerEnd:
			flush()
			switch ev {
			case sfSeenItem:
				b.WriteString("|" + renderValue(&v))
			case sfSeenInner:
				b.WriteString("|(")
			case sfSeenInnerItem:
				b.WriteString(" " + renderValue(&v))
			case sfSeenInnerEnd:
				b.WriteString(")")
			}
			if ev != sfSeenInner { // what the parameters that follow belong to
				params = new(paramSet)
			}
		case sfSeenParam:
			params.set(key, renderValue(&v))
		}
	}
	var m sfMember
	for l.next(&m) {
	}
	flush()
	return b.String(), !l.bad
}

// paramSet is an ordered map of rendered parameters: a key given again
// keeps its place and takes the new value, as RFC 9651 says.
type paramSet struct{ keys, vals []string }

func (p *paramSet) set(k, v string) {
	for i, have := range p.keys {
		if have == k {
			p.vals[i] = v
			return
		}
	}
	p.keys, p.vals = append(p.keys, k), append(p.vals, v)
}

func (p *paramSet) String() string {
	var b strings.Builder
	for i, k := range p.keys {
		b.WriteString(";" + k + "=" + p.vals[i])
	}
	return b.String()
}

// renderValue renders a parsed bare item.
func renderValue(v *sfValue) string {
	sign := ""
	if v.neg {
		sign = "-"
	}
	switch v.kind {
	case sfInteger:
		return "i:" + sign + strconv.FormatInt(v.num.whole, 10)
	case sfDecimal:
		return fmt.Sprintf("d:%s%d.%03d", sign, v.num.whole, v.num.frac/1e6)
	case sfString:
		return "s:" + strconv.Quote(v.str)
	case sfToken:
		return "t:" + v.str
	case sfBytes:
		b64 := v.str
		if n := len(b64) % 4; n != 0 {
			b64 += strings.Repeat("=", 4-n)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return "b:!" + err.Error()
		}
		return "b:" + base32.StdEncoding.EncodeToString(raw)
	case sfBool:
		return "?" + strconv.FormatInt(v.num.whole, 10)
	case sfDate:
		return "@" + sign + strconv.FormatInt(v.num.whole, 10)
	case sfDisplay:
		return "%:" + strconv.Quote(v.str)
	}
	return fmt.Sprintf("kind %d", v.kind)
}

// renderList renders the suite's expected list.
func renderList(t *testing.T, exp any) string {
	members, ok := exp.([]any)
	if !ok {
		t.Fatalf("expected list is %T", exp)
	}
	var b strings.Builder
	for _, m := range members {
		b.WriteString("|" + renderMember(t, m))
	}
	return b.String()
}

// renderMember renders an expected item [bare, params] or inner list
// [[items], params].
func renderMember(t *testing.T, exp any) string {
	pair, ok := exp.([]any)
	if !ok || len(pair) != 2 {
		t.Fatalf("expected member is %v", exp)
	}
	params := renderParams(t, pair[1])
	inner, isInner := pair[0].([]any)
	if !isInner {
		return renderBare(t, pair[0]) + params
	}
	var b strings.Builder
	b.WriteString("(")
	for _, it := range inner {
		b.WriteString(" " + renderMember(t, it))
	}
	return b.String() + ")" + params
}

func renderParams(t *testing.T, exp any) string {
	list, ok := exp.([]any)
	if !ok {
		t.Fatalf("expected parameters are %v", exp)
	}
	var b strings.Builder
	for _, p := range list {
		kv, ok := p.([]any)
		if !ok || len(kv) != 2 {
			t.Fatalf("expected parameter is %v", p)
		}
		b.WriteString(fmt.Sprintf(";%s=%s", kv[0], renderBare(t, kv[1])))
	}
	return b.String()
}

func renderBare(t *testing.T, exp any) string {
	switch v := exp.(type) {
	case json.Number:
		s := v.String()
		if !strings.ContainsAny(s, ".eE") {
			return "i:" + s
		}
		f, err := v.Float64()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("d:%.3f", f)
	case string:
		return "s:" + strconv.Quote(v)
	case bool:
		if v {
			return "?1"
		}
		return "?0"
	case map[string]any:
		val := v["value"]
		switch v["__type"] {
		case "token":
			return fmt.Sprintf("t:%s", val)
		case "binary":
			return fmt.Sprintf("b:%s", val)
		case "date":
			return fmt.Sprintf("@%s", val)
		case "displaystring":
			return "%:" + strconv.Quote(val.(string))
		}
	}
	t.Fatalf("expected bare item %#v", exp)
	return ""
}

// TestSuiteThroughParser checks the RFC's whole-field rule where it
// matters: a RateLimit-Policy or RateLimit field that does not parse (a
// must-fail list, or a must-fail item that is no list either) gives no
// limit and no budget, even when a valid policy shares the field, and is
// reported as malformed. Valid lists hold the invariants.
func TestSuiteThroughParser(t *testing.T) {
	good := map[string]string{"Ratelimit-Policy": `"ok";q=10;w=1`, "Ratelimit": `"ok";r=5;t=1`}
	for _, c := range loadSuite(t) {
		if skipHeaderTypes[c.HeaderType] != "" {
			continue
		}
		if _, list := itemsValidAsLists[c.String()]; c.HeaderType == "item" && (!c.MustFail || list) {
			continue // an item case is a field value only when it is no list either
		}
		for name, member := range good {
			fields := [][]string{c.Raw, append(slices.Clone(c.Raw), member)}
			if r := c.Raw[0]; r == "" || !isOWS(r[0]) {
				// After a comma the RFC allows white space, so only a
				// field that does not start with it fails after a member.
				fields = append(fields, append([]string{member}, c.Raw...))
			}
			for _, lines := range fields {
				o := parseHeader(t, http.Header{name: lines})
				if c.MustFail && (o.Known != 0 || o.Malformed&SignalIETFFields == 0) {
					t.Errorf("%v: %s %q gave %+v, want nothing but Malformed", &c, name, lines, o)
				}
			}
		}
	}
}

// FuzzSFList checks properties of the list parser that hold for any input:
// it never panics; a list that parses, when not empty, still parses given
// twice on two lines, with twice the members, and fails with a comma after
// it; a list that fails still fails with a valid member after it.
func FuzzSFList(f *testing.F) {
	for _, c := range loadSuite(f) {
		if skipHeaderTypes[c.HeaderType] == "" {
			f.Add(strings.Join(c.Raw, ", "))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := countMembers(s)
		if !ok {
			if _, ok := countMembers(s, `"p";q=1`); ok {
				t.Errorf("%q fails, but parses with a member after it", s)
			}
			return
		}
		if n == 0 {
			return
		}
		if n2, ok := countMembers(s, s); !ok || n2 != 2*n {
			t.Errorf("%q has %d members; twice on two lines gives %d (ok %v)", s, n, n2, ok)
		}
		if _, ok := countMembers(s + ","); ok {
			t.Errorf("%q parses with a trailing comma", s)
		}
	})
}

func countMembers(lines ...string) (int, bool) {
	var m sfMember
	n := 0
	l := newSFList(lines)
	for l.next(&m) {
		n++
	}
	return n, !l.bad
}
