package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// Ticket is one admitted request, from admission to answer. Wait and
// ReserveAt return it by value, so admission allocates nothing. Finish every
// Ticket with exactly one call of Done (the request was sent and answered, or
// failed in transit) or Cancel (it was never sent); a second call corrupts
// the in-flight count.
//
// The Ticket carries the admission number that ties the answer to the
// admission: a throttle of a request admitted before the last rate cut is
// not cut for again.
//
// The zero Ticket belongs to no Limiter; its methods do nothing.
type Ticket struct {
	l     *Limiter
	seq   uint64 // admission number, from 1
	at    int64  // admission time, Unix ns
	probe int64  // the probe deadline if this request is the probe, else 0
	mark  int64  // the bucket's mark of its token, for Cancel

	waited  bool  // Wait held the caller back before admitting it
	relayed bool  // another process's request, answered there (see ObserveRelayed)
	level   int32 // requests in flight when it was sent, itself included; 0 if not counted
}

// Waited reports whether Wait held the caller back (slept) before admitting
// the request, as opposed to admitting it at once.
func (t Ticket) Waited() bool { return t.waited }

// Done reports the answer to the ticket's request: the request is no longer
// in flight and the Limiter learns from obs as Observe does, tied to this
// admission. For a request that failed without an answer, pass an
// Observation with Transient set.
func (t Ticket) Done(obs quota.Observation) {
	if t.l == nil {
		return
	}
	t.l.inflight.Add(-1)
	t.l.observe(obs, &t)
	t.l.sent.drop(int64(t.level))
}

// Cancel reports that the ticket's request was never sent: the token goes
// back to the bucket if no later one has been taken (otherwise giving it
// back would let two requests go together, and its place is lost), the
// request is no longer in flight, and a probe is handed on to the next
// request. The window keeps counting the request until it
// ages out, which is conservative.
func (t Ticket) Cancel() {
	if t.l == nil {
		return
	}
	t.l.b.giveBack(t.mark)
	t.l.dropPlace(true)
	t.l.sent.drop(int64(t.level))
	t.l.unprobe(t.probe)
}

// Probe reports whether the ticket's request is the probe after a pause:
// the other requests wait for its answer.
func (t Ticket) Probe() bool { return t.probe != 0 }

// Admitted returns when the request was admitted; the zero time for the
// zero Ticket.
func (t Ticket) Admitted() time.Time {
	if t.l == nil {
		return time.Time{}
	}
	return time.Unix(0, t.at)
}
