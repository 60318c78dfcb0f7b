package adaptive

// saidShare estimates what share of a quota the server says (its limit L
// and Remaining R, in headers) is ours, where others spend it too: other
// processes without a store, a consumer we cannot see. Paced at L per W
// each, n processes send n times the quota, and the server throttles all
// but one in n of their requests.
//
// The model: what the server counts against the quota now, L − R, it
// counted over its counting period: since its window began (a fixed
// window, where the reset it says moves on by a window), else the
// trailing window W (a sliding log). Of that count, ours are the requests
// we sent in that period and it did not throttle. Our share is
//
//	s = ours in the period ÷ (L − R),
//
// both counted without the request answered, and the pacer paces at
// s · L per W. Every process that does likewise paces at its share, and
// together at the limit. Where the period is longer than the window the
// headers are read as (a sliding log's reset says only when its oldest
// request leaves, which may be well before W), our count falls short
// and so does s; but s · L per W is then our rate times L ÷ (L − R), which
// rises while the server counts less than its limit, and the processes
// settle where its count is the limit all the same. A token bucket's
// count is its depth less what is left, no count of a period: where it
// is dry, s is about ours of the last W; where it is not, more than 1.
// Alone, every request counted is ours and s is 1.
//
// Each answer moves the estimate halfway to what it says (L − R is one
// count, off by the requests in flight), taken up to 2, and the share
// paced at is the estimate up to 1: alone, the answers say 1 give or take
// their noise, and a share cut at 1 before the average would sit below it.
//
// Its record is a ring of samples of our admission and throttle counts,
// at answers to requests sent an eighth of W apart at least, which
// reaches a window or two back. It begins at the first throttle of a
// tenant whose server says its limit: a tenant never throttled costs
// nothing.
type saidShare struct {
	ring [shareSamples]shareSample
	n    int     // samples taken, up to shareSamples
	head int     // where the next sample goes
	thr  uint64  // our throttles answered so far
	from int64   // when the newest window began, as our first answer in it was sent (Unix ns); 0 if none seen
	est  float64 // the share the answers say, averaged; up to 2
}

// shareSample is our admissions up to one, and the throttles among them
// answered so far.
type shareSample struct {
	at       int64 // Unix ns, when admission seq was sent
	seq, thr uint64
}

// shareSamples is how many samples the ring keeps, an eighth of a window
// apart at least: it reaches a window back, or two.
const shareSamples = 16

// newSaidShare returns an estimator with a share of 1 and no sample.
func newSaidShare() *saidShare { return &saidShare{est: 1} }

// share returns the share paced at: the estimate, at most 1.
func (h *saidShare) share() float64 { return min(h.est, 1) }

// sample records the answered admission seq, sent at at, with the
// throttles answered so far, if the newest sample was sent an eighth of w
// before it. (Admissions are numbered as they are reserved, and a
// reservation may be for later: the number and the time sent are taken
// from one ticket, so that the admissions between two samples are those
// sent between them.)
func (h *saidShare) sample(at int64, seq uint64, w int64) {
	if h.n > 0 && at-h.ring[(h.head+shareSamples-1)%shareSamples].at < w/(shareSamples/2) {
		return
	}
	h.ring[h.head] = shareSample{at: at, seq: seq, thr: h.thr}
	h.head = (h.head + 1) % shareSamples
	h.n = min(h.n+1, shareSamples)
}

// throttled takes a throttle to our admission seq: it was not counted,
// and neither among the admissions up to the samples from it on.
func (h *saidShare) throttled(seq uint64) {
	h.thr++
	for i := range h.n {
		if s := &h.ring[(h.head+shareSamples-1-i)%shareSamples]; s.seq >= seq {
			s.thr++
		}
	}
}

// update takes a success to our admission seq, sent at at, whose answer
// says the server counts spent (L − R) with it, where the limit is said
// per w: our count in the period (since the window began, or w back,
// from the newest sample before its start, so that the period's first
// request is ours if it was) over the server's, both without this
// request. It does nothing where the ring does not reach
// back to the period's start, or the server counts nothing else.
func (h *saidShare) update(at int64, seq uint64, spent, w int64) {
	from := max(at-w, h.from)
	var old *shareSample
	for i := range h.n {
		if s := &h.ring[(h.head+shareSamples-1-i)%shareSamples]; s.at < from {
			old = s
			break
		}
	}
	if old == nil || seq <= old.seq || spent <= 1 {
		return
	}
	ours := float64(seq-old.seq-1) - float64(h.thr-min(old.thr, h.thr))
	raw := min(max(ours, 0)/float64(spent-1), 2)
	h.est = max((h.est+raw)/2, 1/float64(spent))
}
