package quota

import "strings"

// This file holds the subset of RFC 8941 structured fields that the IETF
// RateLimit and RateLimit-Policy fields use: a list of members, each a bare
// item (string, token or number) with parameters. It is tolerant: a member
// that does not parse is reported and skipped, and the next one is read.

// sfNum is a numeric parameter or item.
type sfNum struct {
	d   decimal
	set bool // present
	bad bool // present but not a non-negative number
}

// sfMember is one list member, reduced to what the rate-limit fields use.
type sfMember struct {
	name       string // the item when it is a string or token, else ""
	item       sfNum  // the item when it is a number (older drafts: 100;w=60)
	q, w, r, t sfNum  // parameters: quota, window, remaining, reset
	bad        bool   // the member did not parse
}

// sfList walks the members of one field line.
type sfList struct{ s string }

// next reads the next member into m; it returns false when the line is done.
func (l *sfList) next(m *sfMember) bool {
	*m = sfMember{}
	s := l.s
	i := skipOWS(s, 0)
	for i < len(s) && s[i] == ',' { // tolerate empty members
		i = skipOWS(s, i+1)
	}
	if i >= len(s) {
		l.s = ""
		return false
	}
	i, ok := m.parse(s, i)
	if ok {
		i = skipOWS(s, i)
		ok = i >= len(s) || s[i] == ','
	}
	if !ok {
		m.bad = true
		i = skipMember(s, i)
	}
	if i < len(s) {
		i++ // the comma
	}
	l.s = s[i:]
	return true
}

// parse reads a bare item and its parameters starting at s[i].
func (m *sfMember) parse(s string, i int) (int, bool) {
	var ok bool
	c := s[i]
	switch {
	case c == '"':
		if m.name, i, ok = sfString(s, i); !ok {
			return i, false
		}
	case c == '*' || isAlpha(c):
		j := i + 1
		for j < len(s) && isTokenChar(s[j]) {
			j++
		}
		m.name, i = s[i:j], j
	case c == '-' || isDigit(c):
		j := sfNumberEnd(s, i)
		m.item, i = sfNumber(s[i:j]), j
	default: // inner list, byte sequence, boolean: not used by these fields
		return i, false
	}
	if len(m.name) > maxQuotaID {
		m.name = ""
	}
	for {
		if j := skipOWS(s, i); j < len(s) && s[j] == ';' { // tolerate space before ';'
			i = j
		} else {
			break
		}
		i = skipOWS(s, i+1)
		j := i
		for j < len(s) && isKeyChar(s[j]) {
			j++
		}
		if j == i {
			return j, false
		}
		key := s[i:j]
		i = j
		if i >= len(s) || s[i] != '=' {
			continue // a boolean true parameter
		}
		i++
		if i >= len(s) {
			return i, false
		}
		v := sfNum{set: true, bad: true}
		switch c := s[i]; {
		case c == '-' || isDigit(c):
			j := sfNumberEnd(s, i)
			v, i = sfNumber(s[i:j]), j
		case c == '"':
			if _, i, ok = sfString(s, i); !ok {
				return i, false
			}
		case c == '*' || isAlpha(c):
			for i++; i < len(s) && isTokenChar(s[i]); i++ {
			}
		case c == '?':
			i += 2
		case c == ':':
			j := strings.IndexByte(s[i+1:], ':')
			if j < 0 {
				return len(s), false
			}
			i += j + 2
		default:
			return i, false
		}
		switch {
		case equalFold(key, "q"):
			m.q = v
		case equalFold(key, "w"):
			m.w = v
		case equalFold(key, "r"):
			m.r = v
		case equalFold(key, "t"):
			m.t = v
		}
	}
	return min(i, len(s)), true
}

// sfNumberEnd returns the end of the number starting at s[i].
func sfNumberEnd(s string, i int) int {
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
		j++
	}
	return j
}

// sfNumber reads a numeric item; negative numbers are marked bad.
func sfNumber(s string) sfNum {
	d, ok := parseDecimal(s)
	return sfNum{d: d, set: true, bad: !ok}
}

// sfString reads the string starting at the quote s[i] and returns its
// content and the index after the closing quote.
func sfString(s string, i int) (string, int, bool) {
	esc := false
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '\\':
			esc = true
			j++
		case c == '"':
			if !esc {
				return s[i+1 : j], j + 1, true
			}
			return unescape(s[i+1 : j]), j + 1, true
		case c < ' ' || c >= 0x7f:
			return "", j, false
		}
	}
	return "", len(s), false
}

// unescape removes the backslashes of an sf-string's content.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// skipMember returns the index of the next ',' at or after i that is not
// inside a quoted string, or len(s).
func skipMember(s string, i int) int {
	quoted := false
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if quoted {
				i++
			}
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				return i
			}
		}
	}
	return len(s)
}

func skipOWS(s string, i int) int {
	for i < len(s) && isOWS(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// isKeyChar reports whether c may appear in a parameter key; upper case is
// tolerated.
func isKeyChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*'
}

// isTokenChar reports whether c may appear in an sf-token after its first
// character.
func isTokenChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
