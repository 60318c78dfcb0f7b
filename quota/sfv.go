package quota

import (
	"strings"
	"unicode/utf8"
)

// This file parses HTTP Structured Field lists (RFC 9651, section 4.2.1),
// the syntax of the IETF RateLimit-Policy and RateLimit fields. It follows
// the RFC's parsing algorithms to the letter: a field (all its lines joined
// with ", ") parses whole or fails whole, and every bare-item type is
// checked, so a field the RFC refuses is never half read. It keeps only what
// the rate-limit fields use (each member's bare item and its q, w, r, t and
// qu parameters) and allocates only to join a field's lines, to unescape a
// string with a backslash in it, or to decode a display string.

// sfKind is the type of a bare item, or an inner list.
type sfKind uint8

const (
	sfAbsent  sfKind = iota // no value: a parameter that is not there
	sfInteger               // at most 15 digits
	sfDecimal               // at most 12 integer and 3 fraction digits
	sfString                // "…", with \" and \\ escapes
	sfToken                 // foo, *bar, a:b/c
	sfBytes                 // :base64:
	sfBool                  // ?0, ?1, or a parameter with no value
	sfDate                  // @ and an integer
	sfDisplay               // %"…" with %xx escapes of UTF-8
	sfInner                 // an inner list, as a list member: (a b)
)

// sfValue is one bare item.
type sfValue struct {
	kind sfKind
	neg  bool    // integer, decimal or date below zero (never for -0)
	num  decimal // integer, decimal or date: the magnitude; boolean: 1 for true
	str  string  // string (unescaped), token, display string (decoded), byte sequence (its base64 text)
}

// count returns v as a count: a non-negative integer.
func (v *sfValue) count() (int64, bool) {
	return v.num.whole, v.kind == sfInteger && !v.neg
}

// sfMember is one list member, reduced to what the rate-limit fields use.
type sfMember struct {
	item           sfValue // the bare item; kind sfInner for an inner list
	q, w, r, t, qu sfValue // parameters: quota, window, remaining, reset, quota unit
}

// sfEvent names what sfList.seen is told about.
type sfEvent byte

const (
	sfSeenItem      sfEvent = 'm' // a member's bare item
	sfSeenInner     sfEvent = '(' // a member that is an inner list begins
	sfSeenInnerItem sfEvent = 'i' // a bare item inside an inner list
	sfSeenInnerEnd  sfEvent = ')' // the inner list ends; its parameters follow
	sfSeenParam     sfEvent = 'p' // a parameter of what was seen last
)

// sfList walks the members of one field. Use it as
//
//	l := newSFList(lines)
//	for l.next(&m) { … }
//	if l.bad { the field failed: drop whatever the members said }
//
// The members are handed out as they are read, before the rest of the field
// is known to parse, so a caller keeps what they say aside until next has
// returned false with bad unset.
type sfList struct {
	s   string
	i   int
	bad bool // the field does not parse

	// seen, if set, is told of every bare item and parameter in the order
	// they are read; the conformance test compares them with the suite.
	seen func(ev sfEvent, key string, v sfValue)
}

// newSFList starts walking the field whose lines are lines.
func newSFList(lines []string) sfList {
	var s string
	switch len(lines) {
	case 0:
	case 1:
		s = lines[0]
	default:
		s = strings.Join(lines, ", ")
	}
	return sfList{s: s, i: skipSP(s, 0)}
}

// next reads the next member into m. It returns false when the field is
// done or does not parse, which bad then says.
func (l *sfList) next(m *sfMember) bool {
	*m = sfMember{}
	s := l.s
	if l.bad || l.i >= len(s) {
		return false
	}
	i, ok := l.member(s, l.i, m)
	if ok {
		i = skipOWS(s, i)
		if i < len(s) {
			if s[i] != ',' {
				ok = false
			} else if i = skipOWS(s, i+1); i >= len(s) {
				ok = false // a trailing comma
			}
		}
	}
	if !ok {
		l.bad, l.i = true, len(s)
		return false
	}
	l.i = i
	return true
}

// member reads an item or inner list and its parameters at s[i].
func (l *sfList) member(s string, i int, m *sfMember) (int, bool) {
	var ok bool
	if s[i] != '(' {
		if i, ok = l.bareItem(s, i, &m.item); !ok {
			return i, false
		}
		l.tell(sfSeenItem, "", m.item)
		return l.params(s, i, m)
	}
	m.item.kind = sfInner
	l.tell(sfSeenInner, "", m.item)
	for i++; ; {
		i = skipSP(s, i)
		if i >= len(s) {
			return i, false
		}
		if s[i] == ')' {
			l.tell(sfSeenInnerEnd, "", m.item)
			return l.params(s, i+1, m)
		}
		var v sfValue
		if i, ok = l.bareItem(s, i, &v); !ok {
			return i, false
		}
		l.tell(sfSeenInnerItem, "", v)
		if i, ok = l.params(s, i, nil); !ok {
			return i, false
		}
		if i >= len(s) || (s[i] != ' ' && s[i] != ')') {
			return i, false
		}
	}
}

// params reads the parameters at s[i] into m (nil for an item inside an
// inner list, whose parameters no rate-limit field uses). A key given twice
// keeps its last value, as the RFC says.
func (l *sfList) params(s string, i int, m *sfMember) (int, bool) {
	var ok bool
	for i < len(s) && s[i] == ';' {
		i = skipSP(s, i+1)
		j := sfKeyEnd(s, i)
		if j == i {
			return i, false
		}
		key := s[i:j]
		v := sfValue{kind: sfBool, num: decimal{whole: 1}}
		if i = j; i < len(s) && s[i] == '=' {
			if i, ok = l.bareItem(s, i+1, &v); !ok {
				return i, false
			}
		}
		l.tell(sfSeenParam, key, v)
		if m == nil {
			continue
		}
		switch key {
		case "q":
			m.q = v
		case "w":
			m.w = v
		case "r":
			m.r = v
		case "t":
			m.t = v
		case "qu":
			m.qu = v
		}
	}
	return i, true
}

func (l *sfList) tell(ev sfEvent, key string, v sfValue) {
	if l.seen != nil {
		l.seen(ev, key, v)
	}
}

// bareItem reads the bare item at s[i] into v.
func (l *sfList) bareItem(s string, i int, v *sfValue) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '-' || isDigit(c):
		return readNumber(s, i, v)
	case c == '"':
		v.kind = sfString
		return readString(s, i, v)
	case c == '*' || isAlpha(c):
		j := i + 1
		for j < len(s) && isTokenChar(s[j]) {
			j++
		}
		v.kind, v.str = sfToken, s[i:j]
		return j, true
	case c == ':':
		return readBytes(s, i, v)
	case c == '?':
		if i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1') {
			return i, false
		}
		v.kind, v.num.whole = sfBool, int64(s[i+1]-'0')
		return i + 2, true
	case c == '@':
		j, ok := readNumber(s, i+1, v)
		if !ok || v.kind != sfInteger {
			return j, false
		}
		v.kind = sfDate
		return j, true
	case c == '%':
		return readDisplay(s, i, v)
	}
	return i, false
}

// readNumber reads the integer or decimal at s[i] (RFC 9651, 4.2.4).
func readNumber(s string, i int, v *sfValue) (int, bool) {
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return i, false
	}
	start, dot := i, -1
digits:
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
		case c == '.' && dot < 0:
			if i-start > 12 {
				return i, false
			}
			dot = i
		default:
			break digits
		}
		if n := i + 1 - start; (dot < 0 && n > 15) || n > 16 {
			return i, false
		}
	}
	if dot < 0 {
		v.kind = sfInteger
		v.num.whole, _ = parseUint(s[start:i])
	} else {
		if frac := i - dot - 1; frac == 0 || frac > 3 {
			return i, false
		}
		v.kind = sfDecimal
		v.num, _ = parseDecimal(s[start:i])
	}
	v.neg = neg && v.num != decimal{}
	return i, true
}

// readString reads the string at the quote s[i] (RFC 9651, 4.2.5): printable
// ASCII, with \" and \\ the only escapes.
func readString(s string, i int, v *sfValue) (int, bool) {
	start, esc := i+1, false
	for i = start; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i++; i >= len(s) || (s[i] != '"' && s[i] != '\\') {
				return i, false
			}
			esc = true
		case c == '"':
			v.str = s[start:i]
			if esc {
				v.str = unescape(v.str)
			}
			return i + 1, true
		case c < ' ' || c > '~':
			return i, false
		}
	}
	return i, false
}

// unescape removes the backslashes of a checked sf-string's content.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readBytes reads the byte sequence at the colon s[i] (RFC 9651, 4.2.7). It
// checks the base64 text without decoding it: padding, if any, only at the
// end and only as much as the text needs. Missing padding and non-zero pad
// bits are accepted, as the RFC advises.
func readBytes(s string, i int, v *sfValue) (int, bool) {
	j := i + 1
	for j < len(s) && isBase64(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != ':' {
		return j, false
	}
	b64 := s[i+1 : j]
	n := strings.IndexByte(b64, '=')
	if n < 0 {
		n = len(b64)
	}
	pad := len(b64) - n
	if n%4 == 1 || pad > 2 || (pad > 0 && (n+pad)%4 != 0) || strings.Count(b64[n:], "=") != pad {
		return j, false
	}
	v.kind, v.str = sfBytes, b64
	return j + 1, true
}

// readDisplay reads the display string at s[i], the '%' of %"…" (RFC
// 9651, 4.2.10): printable ASCII with %xx (lower-case hex) escapes, the
// whole valid UTF-8.
func readDisplay(s string, i int, v *sfValue) (int, bool) {
	if i+1 >= len(s) || s[i+1] != '"' {
		return i, false
	}
	var b []byte
	for i += 2; i < len(s); i++ {
		switch c := s[i]; {
		case c < ' ' || c > '~':
			return i, false
		case c == '%':
			if i+2 >= len(s) {
				return i, false
			}
			hi, ok1 := lowerHex(s[i+1])
			lo, ok2 := lowerHex(s[i+2])
			if !ok1 || !ok2 {
				return i, false
			}
			b = append(b, hi<<4|lo)
			i += 2
		case c == '"':
			if !utf8.Valid(b) {
				return i, false
			}
			v.kind, v.str = sfDisplay, string(b)
			return i + 1, true
		default:
			b = append(b, c)
		}
	}
	return i, false
}

// sfKeyEnd returns the end of the key at s[i], or i if there is none (RFC
// 9651, 4.2.3.3): a lower-case letter or '*', then lower-case letters,
// digits, '_', '-', '.' and '*'.
func sfKeyEnd(s string, i int) int {
	if i >= len(s) || !(isLower(s[i]) || s[i] == '*') {
		return i
	}
	for i++; i < len(s) && (isLower(s[i]) || isDigit(s[i]) || strings.IndexByte("_-.*", s[i]) >= 0); i++ {
	}
	return i
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case isDigit(c):
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func skipSP(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

func skipOWS(s string, i int) int {
	for i < len(s) && isOWS(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isBase64(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '='
}

// isTokenChar reports whether c may appear in an sf-token after its first
// character: tchar, ':' or '/'.
func isTokenChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
