package quota

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/iotest"
)

// TestParseDeferredFollowsTheReader: the Observation comes when the body
// ends, reaches MaxBody, or is closed; not before; and only once.
func TestParseDeferredFollowsTheReader(t *testing.T) {
	body := []byte(aliThrottle)
	for _, tt := range []struct {
		name    string
		maxBody int64
		read    int // bytes read before Close; -1 reads to the end
		code    string
	}{
		{"read to the end", 0, -1, "Throttling.User"},
		{"closed after the code", 0, 80, "Throttling.User"},
		{"closed unread", 0, 0, ""},
		{"MaxBody reached", 16, 16, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &Parser{MaxBody: tt.maxBody}
			resp := &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
			var got []Observation
			p.ParseDeferred(resp, now, func(o Observation) { got = append(got, o) })
			if len(got) != 0 {
				t.Fatalf("told before the body was read: %+v", got)
			}
			if tt.read < 0 {
				io.ReadAll(resp.Body)
			} else {
				io.ReadFull(resp.Body, make([]byte, tt.read))
			}
			resp.Body.Close()
			resp.Body.Close()
			if len(got) != 1 {
				t.Fatalf("told %d times, want once", len(got))
			}
			if got[0].Code != tt.code || got[0].Throttled != (tt.code != "") {
				t.Errorf("code %q throttled %v, want %q", got[0].Code, got[0].Throttled, tt.code)
			}
		})
	}
}

// FuzzParseDeferred: whatever the body and however it is read, the caller
// reads every original byte, and the Observation is the one ParseParts
// gives for the first MaxBody bytes.
func FuzzParseDeferred(f *testing.F) {
	f.Add(400, []byte(aliThrottle), 0, uint8(1))
	f.Add(503, []byte(`{"Code":"ServiceUnavailable"}`), 8, uint8(3))
	f.Add(400, []byte(`{"Code": "Throttl`), 0, uint8(0))
	f.Fuzz(func(t *testing.T, status int, body []byte, maxBody int, mode uint8) {
		p := &Parser{MaxBody: int64(maxBody % 4096)}
		h := http.Header{"Retry-After": {"2"}}
		var r io.Reader = bytes.NewReader(body)
		switch mode % 3 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		}
		resp := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(r)}
		var got []Observation
		p.ParseDeferred(resp, now, func(o Observation) { got = append(got, o) })
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(b, body) {
			t.Fatalf("read %q (%v), want %q", b, err, body)
		}
		if len(got) != 1 {
			t.Fatalf("told %d times, want once", len(got))
		}
		peek := body
		if m := p.maxBody(); m <= 0 {
			peek = nil // never read
		} else if int64(len(peek)) > m {
			peek = peek[:m]
		}
		if want := p.ParseParts(status, h, peek, now); got[0] != want {
			t.Fatalf("deferred %+v, want %+v", got[0], want)
		}
	})
}
