package quota

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// ParseDeferred is Parse that never waits for the body. For an answer whose
// body Parse would peek at (status >= 400), it replaces resp.Body with a
// reader that hands the caller every original byte, unchanged, and keeps a
// copy of the first MaxBody of them; done gets the Observation, error code
// included, when the peek ends: once MaxBody bytes, the end of the body or
// a read error have been read, or when the body is closed, whichever comes
// first. For any other answer done is called before ParseDeferred returns.
// done is called exactly once, from the goroutine that reads or closes the
// body; it must not use resp.Body.
//
// So a server that stalls or drips an error body does not stall the code
// that called ParseDeferred, but an error code is only seen as far as the
// caller reads it: a body closed unread gives an Observation from the
// status and headers alone. A caller that neither reads to the end nor
// closes the body (which net/http requires) never gets its Observation.
func (p *Parser) ParseDeferred(resp *http.Response, now time.Time, done func(Observation)) {
	if !p.Defers(resp) {
		done(p.Parse(resp, now))
		return
	}
	b := &deferredBody{p: p, max: int(p.maxBody()), done: done, body: resp.Body}
	p.parseHead(&b.o, resp.StatusCode, resp.Header, now)
	resp.Body = b
}

// Defers reports whether ParseDeferred would defer resp's Observation until
// its body is read: resp is an error answer (status >= 400) with a body to
// peek at. A caller may test it first so as to build done only then.
func (p *Parser) Defers(resp *http.Response) bool {
	return resp != nil && resp.StatusCode >= 400 && p.maxBody() > 0 && resp.Body != nil && resp.Body != http.NoBody
}

// deferredBody passes a body through to its reader, keeping a copy of its
// start, and reports the Observation once the peek ends (see ParseDeferred).
type deferredBody struct {
	p    *Parser
	o    Observation // the head's, read at once
	max  int
	body io.ReadCloser

	mu   sync.Mutex // guards what follows: Close may come from another goroutine than Read
	buf  []byte
	done func(Observation) // nil once called
}

func (b *deferredBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	if b.done == nil {
		b.mu.Unlock()
		return n, err
	}
	if take := min(n, b.max-len(b.buf)); take > 0 {
		b.buf = append(b.buf, p[:take]...)
	}
	end := err != nil || len(b.buf) >= b.max
	b.mu.Unlock()
	if end {
		b.finish()
	}
	return n, err
}

func (b *deferredBody) Close() error {
	b.finish()
	return b.body.Close()
}

// finish reports the Observation of what was read, once.
func (b *deferredBody) finish() {
	b.mu.Lock()
	done, buf := b.done, b.buf
	b.done, b.buf = nil, nil
	b.mu.Unlock()
	if done != nil {
		b.p.parseBody(&b.o, buf)
		done(b.o)
	}
}
