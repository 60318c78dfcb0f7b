package redisquota

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/quotastore"
)

var _ quotastore.Store = (*Store)(nil)

// Store shares tenants' paces and pauses among processes through Redis: a
// quotastore.Store (see the package doc). Each method is one script call,
// bounded by Config.Timeout. Store is safe for concurrent use.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	peerTTL int64 // microseconds
	estTTL  int64 // milliseconds
	id      string

	calls, errs atomic.Uint64
}

// Stats counts a Store's commands to Redis, each a round trip (go-redis's
// own retries of a command aside).
type Stats struct {
	Calls  uint64 // commands sent: an EVALSHA per call that reaches Redis, an EVAL after each NOSCRIPT, and Warm's SCRIPT LOADs
	Errors uint64 // commands that failed, NOSCRIPT answers aside
}

// New returns a Store on cfg.Client. It fails if the client is nil, if its
// options do not set ContextTimeoutEnabled (see Config.Client), or if a
// field of cfg is invalid. It sends nothing to Redis.
func New(cfg Config) (*Store, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &Store{
		client:  cfg.Client,
		prefix:  cfg.Prefix,
		timeout: cfg.Timeout,
		peerTTL: micros(cfg.PeerTTL),
		estTTL:  max(cfg.EstimateTTL.Milliseconds(), 1),
		id:      cfg.ID,
	}, nil
}

// Reserve takes tenant k's next admission at pace p if it is due within
// maxWait, and says when it is due; otherwise it takes nothing and says
// when it would be. The admission is due at the latest of: now; the
// tenant's theoretical arrival time less Burst-1 intervals (GCRA); the end
// of its pause; and, with a window limit, the Limit-th latest admission
// plus Window, and the latest admission (admissions are due in the order
// they are taken). Taking it moves the arrival time one Interval past the
// later of itself and the due time. Reservation.Peers counts the processes
// that reserved for k within Config.PeerTTL, this one included, whether or
// not the admission was taken. A zero Pace takes the admission at the pace
// of the latest one taken, window included; if none is in force, nothing
// is taken, and NoPace says so.
//
// Durations beyond 10 years are cut to 10 years, and a window limit above
// 10000 is kept over a shorter window, for Redis to keep at most 10000 due
// times per tenant: with m = ceil(Limit/10000), at most Limit/m per
// Window/m, which never lets more than Limit through in a Window.
func (s *Store) Reserve(ctx context.Context, k quota.Key, p adaptive.Pace, maxWait time.Duration) (quotastore.Reservation, error) {
	a := reserveArgsOf(p, maxWait)
	ks := keysOf(s.prefix, k)
	cmd := s.run(ctx, reserveScript, ks.all(),
		a.interval, a.tau, a.maxWait, a.logLimit, a.logWindow, s.id, s.peerTTL, s.estTTL, 0)
	v, err := cmd.Int64Slice()
	if err == nil && len(v) != 5 {
		err = fmt.Errorf("script returned %d values, want 5", len(v))
	}
	if err != nil {
		return quotastore.Reservation{}, fmt.Errorf("redisquota: reserve: %w", err)
	}
	return reservationOf(v), nil
}

// reservationOf reads the reserve script's first five values (see
// reserveScript).
func reservationOf(n []int64) quotastore.Reservation {
	return quotastore.Reservation{
		OK:       n[0] == 1,
		NoPace:   n[0] == 2,
		Wait:     time.Duration(n[1]) * time.Microsecond,
		Interval: time.Duration(n[4]) * time.Microsecond,
		Peers:    int(n[2]),
		Token:    n[3],
	}
}

// The leader of a tenant the processes learn as one (see ReserveLearned).
const (
	// leaderLease is how long, at least, a leader leads without a call
	// (four intervals of its pace, if longer, and the hold it asked for):
	// a process that stops calling hands the tenant to the next that
	// calls.
	leaderLease = 500 * time.Millisecond
	// heldPoll is how long a follower held by its leader waits before it
	// asks again, at most.
	heldPoll = 25 * time.Millisecond
	// maxAge bounds the age of a relayed answer.
	maxAge = time.Hour
)

// ReserveLearned takes tenant k's next admission for a tenant whose pace
// no process is told, which the processes learn as one (see
// quotastore.LearnedTurn), in the same script as Reserve. The caller leads
// the tenant if it did at its last call, or if no process led it within
// its lease (see leaderLease): then its Pace (if any) is the tenant's, its
// Hold holds the others, and it gets the answers they relayed since its
// last call; a leader with no pace takes no turn. Otherwise it follows:
// held while the leader holds (nothing is taken: ask again after Wait, at
// most heldPoll), or a turn at the leader's pace, at most BookAhead ahead;
// its answers go to the leader, and a throttle among them holds the
// followers until the leader has heard it. Each hold begun counts in
// LearnedReservation.Epoch. A pace said to another process (Reserve)
// while in force is taken as a follower's, leader or not. A caller that
// knows nothing yet (Fresh), or finds no pace in force, gets the estimate
// Publish kept, and reading it keeps it another Config.EstimateTTL.
// Relayed answers travel as ages on Redis's clock, so processes whose
// clocks disagree still agree on when they came; at most 1024 wait for the
// leader.
func (s *Store) ReserveLearned(ctx context.Context, k quota.Key, lt quotastore.LearnedTurn) (quotastore.LearnedReservation, error) {
	a := reserveArgsOf(lt.Pace, lt.MaxWait)
	ks := keysOf(s.prefix, k)
	now := time.Now()
	fresh := 0
	if lt.Fresh {
		fresh = 1
	}
	cmd := s.run(ctx, reserveScript, ks.all(),
		a.interval, a.tau, a.maxWait, a.logLimit, a.logWindow, s.id, s.peerTTL, s.estTTL, 1,
		micros(min(lt.Hold, maxPause)), micros(leaderLease), micros(heldPoll), encodeRelayed(lt.Answers, now), fresh,
		micros(min(lt.NotBefore.Sub(now), maxPause)), micros(min(lt.BookAhead, maxPause)))
	v, err := cmd.Slice()
	if err == nil && len(v) < 12 {
		err = fmt.Errorf("script returned %d values, want 12 or more", len(v))
	}
	var n [12]int64
	for i := 0; err == nil && i < len(n); i++ {
		var ok bool
		if n[i], ok = v[i].(int64); !ok {
			err = fmt.Errorf("script returned %T at %d, want an integer", v[i], i)
		}
	}
	if err != nil {
		return quotastore.LearnedReservation{}, fmt.Errorf("redisquota: reserve: %w", err)
	}
	back := time.Now()
	r := quotastore.LearnedReservation{
		Reservation: reservationOf(n[:5]),
		Leader:      n[9] == 1,
		Held:        n[0] == 3,
		Epoch:       n[10],
		Said:        n[11] == 1,
	}
	r.Learned = estimateOf(n[5], n[6], n[7], n[8])
	for _, x := range v[12:] {
		if str, ok := x.(string); ok {
			if a, ok := decodeRelayed(str, back); ok {
				r.Answers = append(r.Answers, a)
			}
		}
	}
	return r, nil
}

// encodeRelayed writes answers for the reserve script: each as its ages
// at now (sent, answered) in microseconds, and a flag.
func encodeRelayed(answers []quotastore.Relayed, now time.Time) string {
	var b []byte
	for _, a := range answers {
		flag := byte('0')
		switch {
		case a.Throttled:
			flag = '1'
		case a.Transient:
			flag = '2'
		}
		b = strconv.AppendInt(b, micros(min(max(now.Sub(a.Sent), 0), maxAge)), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, micros(min(max(now.Sub(a.Answered), 0), maxAge)), 10)
		b = append(b, ',', flag, ';')
	}
	return string(b)
}

// decodeRelayed reads an answer the reserve script relayed, its ages
// taken at now; false for garbage.
func decodeRelayed(s string, now time.Time) (quotastore.Relayed, bool) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return quotastore.Relayed{}, false
	}
	sent, err1 := strconv.ParseInt(parts[0], 10, 64)
	ans, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || sent < 0 || ans < 0 || sent > int64(maxAge/time.Microsecond) || ans > sent {
		return quotastore.Relayed{}, false
	}
	return quotastore.Relayed{
		Sent:      now.Add(-time.Duration(sent) * time.Microsecond),
		Answered:  now.Add(-time.Duration(ans) * time.Microsecond),
		Throttled: parts[2] == "1",
		Transient: parts[2] == "2",
	}, true
}

// Publish keeps e as what a learner last settled on for tenant k, for a
// process that starts cold on it (see ReserveLearned), for
// Config.EstimateTTL.
// An estimate that is not Valid costs no call.
func (s *Store) Publish(ctx context.Context, k quota.Key, e adaptive.Estimate) error {
	if !e.Valid() {
		return nil
	}
	ks := keysOf(s.prefix, k)
	if err := s.run(ctx, publishScript, []string{ks.learn},
		e.Limit, micros(e.Window), micros(max(e.WindowLow, 0)), micros(max(e.WindowHigh, 0)), s.estTTL).Err(); err != nil {
		return fmt.Errorf("redisquota: publish: %w", err)
	}
	return nil
}

// estimateOf reads an estimate the reserve script returned: a limit and
// three spans in microseconds. What is not Valid (nothing kept, or
// garbage) is the zero Estimate.
func estimateOf(limit, window, lo, hi int64) adaptive.Estimate {
	const most = int64(1<<63-1) / 1000
	if window > most || lo > most || hi > most {
		return adaptive.Estimate{}
	}
	e := adaptive.Estimate{
		Limit:      limit,
		Window:     time.Duration(window) * time.Microsecond,
		WindowLow:  time.Duration(lo) * time.Microsecond,
		WindowHigh: time.Duration(hi) * time.Microsecond,
	}
	if !e.Valid() {
		return adaptive.Estimate{}
	}
	return e
}

// Cancel gives back reservation r of tenant k if it is the latest taken,
// as a token bucket gives back a token: the tenant's arrival time goes back
// one interval, and r's due time leaves the window log. Once one is given
// back, none before it can be. A reservation that was not OK took nothing,
// and costs no call.
func (s *Store) Cancel(ctx context.Context, k quota.Key, r quotastore.Reservation) error {
	if !r.OK || r.Token == 0 {
		return nil
	}
	ks := keysOf(s.prefix, k)
	if err := s.run(ctx, cancelScript, []string{ks.tat, ks.log}, strconv.FormatInt(r.Token, 10)).Err(); err != nil {
		return fmt.Errorf("redisquota: cancel: %w", err)
	}
	return nil
}

// Pause holds tenant k's shared pacer until until: no admission reserved
// after the call is due before it. The end is sent relative to this
// process's clock, and kept on Redis's. A pause that ends no later than
// one already set changes nothing; one that has ended costs no call; one
// longer than an hour is cut to an hour.
func (s *Store) Pause(ctx context.Context, k quota.Key, until time.Time) error {
	d := min(time.Until(until), maxPause)
	if d <= 0 {
		return nil
	}
	ks := keysOf(s.prefix, k)
	if err := s.run(ctx, pauseScript, []string{ks.pause}, micros(d)).Err(); err != nil {
		return fmt.Errorf("redisquota: pause: %w", err)
	}
	return nil
}

// Warm loads the Store's scripts into Redis (SCRIPT LOAD, on every shard
// of a cluster), which opens a connection too. Without it, the first call
// of each script dials, is answered NOSCRIPT and sends the script whole,
// three round trips within one Timeout: on a loaded machine that can time
// out, and the Transport then takes the store for down until its next
// try. Call Warm once at start, with a context that bounds it (Warm has no
// Timeout of its own); a Store that was not warmed works the same, its
// first calls cost more. Each script loaded counts as a command in Stats.
func (s *Store) Warm(ctx context.Context) error {
	for _, sc := range scripts {
		s.calls.Add(1)
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			s.errs.Add(1)
			return fmt.Errorf("redisquota: warm: %w", err)
		}
	}
	return nil
}

// Stats returns the counts of the Store's commands so far.
func (s *Store) Stats() Stats {
	return Stats{Calls: s.calls.Load(), Errors: s.errs.Load()}
}

// run runs script sc within the Store's timeout: EVALSHA, then EVAL if
// Redis does not have the script (NOSCRIPT: it restarted, or its script
// cache was flushed), as redis.Script.Run does, counting each command.
func (s *Store) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.calls.Add(1)
	cmd := sc.EvalSha(ctx, s.client, keys, args...)
	if err := cmd.Err(); err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
		s.calls.Add(1)
		cmd = sc.Eval(ctx, s.client, keys, args...)
	}
	if cmd.Err() != nil {
		s.errs.Add(1)
	}
	return cmd
}
