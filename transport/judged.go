package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/tollgate-go/tollgate/breaker"
)

// judgedBody hands on the body of an answer the breaker would count as a
// success, and tells the breaker the outcome once the body ends: a read
// error (the connection dropped mid-answer) is a failure, unless the
// caller's context ended it; the end of the body, or a Close, a success.
// A service that answers with headers and then drops its connections is
// failing, and only the body shows it.
type judgedBody struct {
	body io.ReadCloser
	ctx  context.Context
	pass breaker.Pass
	once sync.Once
}

// judgeBody has resp's body report pass's outcome (see judgedBody), and
// reports whether it does; it does not for an answer without a body, nor
// for a 101 Switching Protocols, whose body is the connection.
func judgeBody(resp *http.Response, ctx context.Context, pass breaker.Pass) bool {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		return false
	}
	resp.Body = &judgedBody{body: resp.Body, ctx: ctx, pass: pass}
	return true
}

func (b *judgedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		b.finish(breaker.Success)
	default:
		b.finish(breaker.JudgeError(b.ctx, err))
	}
	return n, err
}

func (b *judgedBody) Close() error {
	b.finish(breaker.Success) // the caller is done with an answer that came
	return b.body.Close()
}

func (b *judgedBody) finish(o breaker.Outcome) {
	b.once.Do(func() { b.pass.Done(o) })
}
