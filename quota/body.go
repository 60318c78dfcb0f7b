package quota

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// maxCode caps the length of an error code read from a body.
const maxCode = 128

// IsThrottleCode reports whether an Alibaba Cloud error code means the
// request was refused for quota reasons: Throttling, Rejected.Throttling and
// any Throttling.* code (Throttling.User, Throttling.Api,
// Throttling.Resource, ...), ignoring ASCII case.
func IsThrottleCode(code string) bool {
	if len(code) >= len("Throttling") && strings.EqualFold(code[:len("Throttling")], "Throttling") {
		rest := code[len("Throttling"):]
		return rest == "" || rest[0] == '.'
	}
	return strings.EqualFold(code, "Rejected.Throttling")
}

// IsTransientCode reports whether an error code means a transient failure
// that is not a quota signal: ServiceUnavailable, ignoring ASCII case.
func IsTransientCode(code string) bool {
	return strings.EqualFold(code, "ServiceUnavailable")
}

// replayBody hands back a response body after Parse peeked at its start: the
// peeked bytes first, then whatever the peek stopped at: the end of the
// body, or the error reading it returned (once, after which reads go to the
// original body again, as they would have), or the rest of the original
// body. Close closes the original body.
type replayBody struct {
	buf  []byte        // peeked bytes not yet read
	err  error         // what ended the peek: nil at the cap, io.EOF, or a read error
	body io.ReadCloser // the original body
}

func (b *replayBody) Read(p []byte) (int, error) {
	if len(b.buf) > 0 {
		n := copy(p, b.buf)
		b.buf = b.buf[n:]
		return n, nil
	}
	if err := b.err; err != nil {
		if err != io.EOF {
			b.err = nil // the original reported it once; later reads go to it again
		}
		return 0, err
	}
	return b.body.Read(p)
}

func (b *replayBody) Close() error { return b.body.Close() }

// peekBody reads at most max bytes of resp.Body and replaces resp.Body with
// a reader that yields every original byte. It returns the bytes read.
func peekBody(resp *http.Response, max int64) []byte {
	if max <= 0 || resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	size := int64(512)
	if cl := resp.ContentLength; cl > 0 && cl < size { // 0 is also what a hand-built Response leaves unset
		size = cl + 1 // one more byte, to see the EOF without growing
	}
	buf := make([]byte, 0, min(size, max))
	var err error
	for empty := 0; int64(len(buf)) < max && empty < 100; {
		if len(buf) == cap(buf) {
			grown := append(buf, 0)[:len(buf)]
			buf = grown[:len(buf):min(int64(cap(grown)), max)]
		}
		var n int
		n, err = resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
		if n == 0 {
			empty++ // a reader that makes no progress: stop peeking
		}
	}
	resp.Body = &replayBody{buf: buf, err: err, body: resp.Body}
	return buf
}

// bodyCode extracts the error code of an error answer: the top-level "Code"
// (or "code") string of a JSON object, or the first <Code> element of an XML
// document. The body may be cut short by the peek: a code found before the
// cut counts. found is false when there is no code; bad when a code is
// present but unusable (too long, not printable ASCII).
func bodyCode(b []byte) (code string, found, bad bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if len(b) == 0 {
		return "", false, false
	}
	var raw []byte
	var esc bool
	switch b[0] {
	case '{':
		raw, esc, found = jsonCode(b)
	case '<':
		raw, found = xmlCode(b)
	}
	if !found {
		return "", false, false
	}
	if esc {
		var s string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
			return "", true, true
		}
		raw = []byte(s)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > maxCode {
		return "", true, true
	}
	for _, c := range raw {
		if c < ' ' || c >= 0x7f {
			return "", true, true
		}
	}
	return internCode(raw), true, false
}

// internCode returns the well-known codes without allocating.
func internCode(b []byte) string {
	for _, c := range knownCodes {
		if string(b) == c {
			return c
		}
	}
	return string(b)
}

var knownCodes = [...]string{
	"Throttling", "Throttling.User", "Throttling.Api", "Throttling.Resource",
	"Rejected.Throttling", "ServiceUnavailable",
}

// jsonCode scans the top level of the JSON object in b for a "Code" or
// "code" member with a string value and returns the value's raw bytes and
// whether they hold escapes. It never recurses and stops quietly at
// anything it cannot read.
func jsonCode(b []byte) (raw []byte, esc, found bool) {
	i := 1
	for {
		i = skipJSONSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil, false, false
		}
		key, kesc, j, ok := jsonString(b, i)
		if !ok {
			return nil, false, false
		}
		i = skipJSONSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, false, false
		}
		i = skipJSONSpace(b, i+1)
		if i >= len(b) {
			return nil, false, false
		}
		if !kesc && b[i] == '"' && (string(key) == "Code" || string(key) == "code") {
			raw, esc, _, ok = jsonString(b, i)
			return raw, esc, ok
		}
		if i, ok = skipJSONValue(b, i); !ok {
			return nil, false, false
		}
		i = skipJSONSpace(b, i)
		if i >= len(b) || b[i] != ',' {
			return nil, false, false
		}
		i++
	}
}

// jsonString reads the string whose opening quote is b[i]; it returns the
// raw content, whether it holds escapes and the index after the closing
// quote.
func jsonString(b []byte, i int) (raw []byte, esc bool, next int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return b[i+1 : j], esc, j + 1, true
		}
	}
	return nil, false, len(b), false
}

// skipJSONValue skips the value starting at b[i], counting brackets rather
// than recursing, and returns the index after it.
func skipJSONValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			_, _, j, ok := jsonString(b, i)
			if !ok {
				return i, false
			}
			if i = j; depth == 0 {
				return i, true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i, true
			}
			if depth--; depth == 0 {
				return i + 1, true
			}
		case ',':
			if depth == 0 {
				return i, true
			}
		}
		i++
	}
	return i, false
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// xmlCode returns the content of the first <Code> element, as the Alibaba
// Cloud gateway writes it in XML error answers.
func xmlCode(b []byte) ([]byte, bool) {
	_, rest, ok := bytes.Cut(b, []byte("<Code>"))
	if !ok {
		return nil, false
	}
	code, _, ok := bytes.Cut(rest, []byte("</Code>"))
	if !ok || len(code) > maxCode {
		return nil, ok
	}
	return code, true
}
