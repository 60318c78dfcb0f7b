package shapes

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/retry"
	"github.com/tollgate-go/tollgate/transport"
)

// What the callers call, as whom, and where.
const (
	action   = "DescribeInstances"
	akid     = "AKIDshapes"
	endpoint = "http://ecs.cn-hangzhou.aliyuncs.com"
)

// Bounds on one run, so that no cell runs away.
const (
	// callTimeout is each call's deadline: longer than any pause a 60 s
	// window can cause.
	callTimeout = 2 * time.Minute
	// idleWait is how long a caller waits after an error that came back at
	// once and reported no wait of its own.
	idleWait = 100 * time.Millisecond
	// maxCalls bounds the calls of one run; a run that reaches it is cut
	// short and says so.
	maxCalls = 400_000
	// maxRun bounds a run of a cell with a number of calls (Cell.Calls).
	maxRun = 10 * time.Minute
)

// plan is a run's timeline, as offsets from its start, which is a boundary
// of every window (a synctest bubble starts at midnight).
type plan struct {
	bucket  time.Duration // the server's window, or 1 s
	begin   time.Duration // the callers start, 37% into the first window
	stepAt  time.Duration // the quota steps; 0 if it does not
	settled time.Duration // the settled stretch starts
	end     time.Duration // the settled stretch and the run end
}

// plan lays out c's run: settle for three windows (at least 3 s) from the
// start, or from a step down; from a step up, also for the 200 admissions
// at the old quota a probe needs first; then measure ten windows (at least
// 20 s), or three (at least 5 s) if short. A step comes after the first
// settled stretch, or at the window Cell.StepAfter names.
func (c Cell) plan(short bool) plan {
	w := c.window()
	p := plan{bucket: w, begin: (w * 37 / 100).Round(time.Millisecond)}
	settle := max(3*w, 3*time.Second)
	measure := max(10*w, 20*time.Second)
	if short {
		measure = max(3*w, 5*time.Second)
	}
	p.settled = ceilTo(p.begin+settle, w)
	p.end = p.settled + ceilTo(measure, w)
	if c.Calls > 0 {
		// Measured from the start, to the last call's end.
		p.settled, p.end = 0, maxRun
	}
	if c.Step > 0 {
		p.stepAt = p.end
		if c.StepAfter > 0 {
			p.stepAt = ceilTo(p.begin+c.StepAfter, w)
		}
		after := settle
		if c.Step > 1 {
			after += time.Duration(200 / c.rate(c.limit(false)) * float64(time.Second))
		}
		p.settled = p.stepAt + ceilTo(after, w)
		p.end = p.settled + ceilTo(measure, w)
	}
	return p
}

// ceilTo rounds d up to a multiple of unit.
func ceilTo(d, unit time.Duration) time.Duration {
	return (d + unit - 1) / unit * unit
}

// buckets returns the number of buckets in the run.
func (p plan) buckets() int { return int(p.end / p.bucket) }

// Options say how to run a cell.
type Options struct {
	Bare  bool   // the same callers and retry.Policy over the bare transport, without tollgate
	Short bool   // the shorter settled stretch of the default test
	Seed  uint64 // the fake cloud's seed (its faults and latency jitter)
	// Classless runs a cell with priority classes (Cell.Interactive) with
	// every caller Default: the same load without classes.
	Classless bool
	// Rules are every client's static rules (transport.Config.Rules), as
	// a user may set them; nil means none, the learner's cold start.
	Rules *quota.Rules
	// Trace keeps every client's learner at each bucket's end
	// (Result.Learners), for WriteWindows.
	Trace bool
}

// Run runs c from a cold start, through tollgate (a Transport per client
// under retry.Do, as a user wires them) or over the bare transport, and
// measures it. It must run inside a testing/synctest bubble that has not
// slept yet: the fake cloud is in memory and time is virtual. Every
// goroutine Run starts has ended when it returns.
func Run(c Cell, o Options) *Result {
	r, _ := run(c, o, false) // in memory, it cannot fail
	return r
}

// RunRealtime runs c as Run does, but with the wall clock, outside any
// synctest bubble, on fakecloud's HTTP server over loopback, each client
// with its own connections. A fixed window's grid is set at the run's
// start, as a bubble's midnight sets it for Run. Calls still out at the
// run's end are given drain to finish, then cut, and not counted. It
// fails only if the server cannot listen.
func RunRealtime(c Cell, o Options) (*Result, error) {
	return run(c, o, true)
}

// drain is how long RunRealtime lets calls still out at the run's end
// finish: a window and a round trip, at least 5 s. (Run lets them finish,
// in virtual time.)
func (c Cell) drain() time.Duration {
	return max(c.window()+c.rtt()+c.Jitter, 5*time.Second)
}

// errRunOver cuts a real-time run's calls still out after its drain.
var errRunOver = errors.New("shapes: the run is over")

func run(c Cell, o Options, realtime bool) (*Result, error) {
	start := time.Now()
	p := c.plan(o.Short)
	rec := newRecorder(start, p)
	q := c.Quota
	q.API = action
	if realtime && q.Policy == fakecloud.FixedWindow && q.Window > 0 {
		q.Offset = time.Duration(start.UnixNano() % int64(q.Window))
	}
	cfg := fakecloud.Config{
		Headers:              c.Headers,
		HeadersOnEveryAnswer: c.Every,
		ThrottleStatus:       c.ThrottleStatus,
		Faults:               c.Faults,
		Seed:                 o.Seed,
		OnRequest:            rec.server,
	}
	// The jitter splits between the two ways as the round trip does.
	jt := time.Duration(float64(c.Jitter) * float64(c.Arrival) / float64(c.rtt()))
	jb := c.Jitter - jt
	cfg.Faults.Arrival, cfg.Faults.ArrivalJitter = c.Arrival-jt, 2*jt
	if back := c.rtt() - c.Arrival - jb; back > 0 || jb > 0 {
		// (A latency of zero and no jitter would be fakecloud's default.)
		cfg.Faults.LatencyRate, cfg.Faults.Latency, cfg.Faults.LatencyJitter = 1, back, 2*jb
	}
	if !c.NoQuota {
		cfg.Quotas = []fakecloud.Quota{q}
		if c.Step > 0 {
			q.Limit = c.limit(true)
			cfg.Phases = []fakecloud.Phase{{At: p.stepAt, Quotas: []fakecloud.Quota{q}}}
		}
	}
	var cloud *fakecloud.Cloud
	var base func() http.RoundTripper // a client's own way to the cloud
	ctx := context.Background()
	if realtime {
		srv, err := fakecloud.Start(cfg)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		cloud = srv.Cloud
		base = func() http.RoundTripper {
			t := srv.Transport()
			t.MaxIdleConnsPerHost = c.callers()
			return t
		}
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		stop := time.AfterFunc(p.end+c.drain()-time.Since(start), func() { cancel(errRunOver) })
		defer stop.Stop()
		defer cancel(nil)
	} else {
		cloud = fakecloud.New(cfg)
		base = cloud.RoundTripper
	}

	clients := make([]*client, c.clients())
	for i := range clients {
		cl := &client{
			policy: &retry.Policy{Budget: retry.NewBudget(retry.BudgetConfig{})},
			rec:    rec,
		}
		rt := base()
		if t, ok := rt.(*http.Transport); ok {
			defer t.CloseIdleConnections()
		}
		if !o.Bare {
			cl.tr = transport.New(rt, transport.Config{Rules: o.Rules})
			rt = cl.tr
		}
		cl.http = &http.Client{Transport: rt}
		clients[i] = cl
	}

	var wg sync.WaitGroup
	var calls atomic.Int64
	for i := range c.callers() {
		cl := clients[i%len(clients)]
		prio := c.priority(i, o.Classless)
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(p.begin)))
			for time.Since(start) < p.end && ctx.Err() == nil {
				n := calls.Add(1)
				if c.Calls > 0 && n > int64(c.Calls) {
					return
				}
				if n > maxCalls {
					rec.cut.Store(true)
					return
				}
				cl.call(ctx, prio)
			}
		})
	}
	trs := make([]*transport.Transport, len(clients))
	for i, cl := range clients {
		trs[i] = cl.tr
	}
	wg.Go(func() { rec.sample(trs, o.Trace) })
	wg.Wait()
	r := rec.result(c)
	if c.classed() && !o.Classless {
		r.Classes = rec.classes(c)
	}
	st := cloud.Stats()
	r.Replays = st.Total.Replays
	r.UnseenThrottled = share(st.Unseen.Throttled, st.Unseen.Requests)
	return r, nil
}

// client is one process: its Transport (nil when bare), retry policy and
// HTTP client.
type client struct {
	tr     *transport.Transport
	policy *retry.Policy
	http   *http.Client
	rec    *recorder
}

// call makes one call of class p as a user would, retry.Do around a
// fresh signed request each attempt, and records it; after an error that
// came back at once it waits what the error reports, or idleWait, so that
// no caller spins without letting virtual time move. A call cut because
// parent ended with errRunOver is not recorded.
func (cl *client) call(parent context.Context, p transport.Priority) {
	ctx, cancel := context.WithTimeout(transport.WithPriority(parent, p), callTimeout)
	defer cancel()
	from := time.Now()
	err := retry.Do(ctx, cl.policy, cl.attempt)
	took := time.Since(from)
	if errors.Is(context.Cause(parent), errRunOver) {
		return
	}
	cl.rec.call(from, took, p, err)
	if err != nil && took < idleWait {
		t := time.NewTimer(reportedWait(err))
		defer t.Stop()
		select {
		case <-t.C:
		case <-parent.Done():
		}
	}
}

// failedAttempt is the kind of an attempt that got no answer: cut if its
// context ended (the request may have been sent and answered), else an
// error.
func failedAttempt(ctx context.Context) int {
	if ctx.Err() != nil {
		return attemptCut
	}
	return attemptError
}

// attempt sends one signed request and turns an error answer into an
// *answerError that retry classifies.
func (cl *client) attempt(ctx context.Context) error {
	req, err := fakecloud.NewRequest(ctx, endpoint, akid, action)
	if err != nil {
		return retry.Permanent(err)
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		cl.rec.attempts[failedAttempt(ctx)].Add(1)
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		cl.rec.attempts[failedAttempt(ctx)].Add(1)
		return err
	}
	if resp.StatusCode == http.StatusOK {
		cl.rec.attempts[attemptOK].Add(1)
		return nil
	}
	var e fakecloud.ErrorBody
	_ = json.Unmarshal(body, &e)
	if quota.IsThrottleCode(e.Code) {
		cl.rec.attempts[attemptThrottled].Add(1)
	} else {
		cl.rec.attempts[attemptError].Add(1)
	}
	return &answerError{status: resp.StatusCode, code: e.Code, header: resp.Header}
}

// reportedWait is the wait an error reports (a limiter's wait that would
// pass the deadline, or the retry that was refused), or idleWait.
func reportedWait(err error) time.Duration {
	var d time.Duration
	var we *adaptive.WaitError
	if errors.As(err, &we) {
		d = we.Wait
	}
	var ge *retry.GiveUpError
	if errors.As(err, &ge) {
		d = max(d, ge.Wait)
	}
	if d <= 0 {
		return idleWait
	}
	return min(d, callTimeout)
}

// answerError is an error answer, as a user's glue code would return it:
// retry reads its code, status and headers.
type answerError struct {
	status int
	code   string
	header http.Header
}

func (e *answerError) Error() string       { return http.StatusText(e.status) + " " + e.code }
func (e *answerError) ErrorCode() string   { return e.code }
func (e *answerError) HttpStatus() int     { return e.status }
func (e *answerError) Header() http.Header { return e.header }
