package shapes

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/stats"
)

// Sample is one run's figures, by the names of the figures the family's
// distribution shows (settled goodput, throttled share beyond shedding,
// cold-start throttles over budget, p99 over Little's wait, time over the
// bare transport's, failed calls): those that apply to the run. It is
// what -save keeps of a run and -compare sets beside a new run of the
// same seed.
type Sample struct {
	Seed    uint64             `json:"seed"`
	Short   bool               `json:"short,omitempty"` // the run was shortened (Options.Short)
	Figures map[string]float64 `json:"figures"`
}

// SampleOf returns the figures of row, one run of a cell or draw as o
// says.
func SampleOf(o Options, row Row) Sample {
	s := Sample{Seed: o.Seed, Short: o.Short, Figures: map[string]float64{}}
	for _, f := range figures {
		if x, ok := f.get(row); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
			s.Figures[f.name] = x
		}
	}
	return s
}

// Saved is what -save writes and -compare reads: the per-seed figures of
// each cell's runs, by the cell's name, and of each draw.
type Saved struct {
	Cells map[string][]Sample `json:"cells,omitempty"`
	Draws []Sample            `json:"draws,omitempty"`
}

// WriteSaved writes s to the file at path as JSON.
func WriteSaved(path string, s *Saved) error {
	b, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadSaved reads a file WriteSaved wrote.
func ReadSaved(path string) (*Saved, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Saved
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Verdicts of a comparison.
const (
	Better = "better"
	Worse  = "worse"
	Noise  = "noise"
)

// Comparison is one figure of one cell (or of the family) before and now:
// the medians, the difference now − before with its bootstrap 90%
// interval, the p-value of the test that judges it, and the verdict.
//
// For a cell the difference is that of the medians of its runs, and the
// test is Mann-Whitney's U over the runs, unpaired. A cell's runs are
// replications of one server that differ by their seeds' jitter and by
// the order goroutines happened to run in; the same seed before and now
// gives alike runs, which only makes the unpaired test more cautious.
// For the family the difference is the median of the draws' differences,
// paired by seed (each draw is its own server), and the test is the sign
// test over the draws that changed.
type Comparison struct {
	Name, Figure string
	Runs         int // runs (or draws) on each side
	Before, Now  float64
	Diff         float64
	Lo, Hi       float64 // the 90% interval of Diff
	P            float64
	MinP         float64 // the smallest p-value these runs can give
	Verdict      string
}

// Compared is a set of comparisons judged together: each is called better
// or worse only if its p-value is below Alpha ÷ len(List) (Bonferroni), so
// that Alpha bounds the chance that any of them is a false alarm. The
// intervals come from a percentile bootstrap of Reps resamples seeded
// with Seed. A comparison whose MinP is not below that threshold has too
// few runs to be anything but noise.
type Compared struct {
	Alpha float64
	Reps  int
	Seed  uint64
	List  []Comparison
}

// Threshold is the p-value below which a comparison is better or worse:
// Alpha ÷ len(List).
func (c *Compared) Threshold() float64 {
	return c.Alpha / float64(max(len(c.List), 1))
}

// pair is one figure's samples on each side: by seed where paired.
type pair struct {
	name, figure string
	higher       bool
	before, now  []float64
	paired       bool
}

// compareReps is the number of bootstrap resamples behind each 90%
// interval: enough to place its ends, each in a 5% tail, on 100
// resamples.
const compareReps = 2000

// Compare compares, figure by figure, the runs of each cell in before
// with the runs in now of the same cell and seed, and the draws of the
// family paired by seed (see Comparison). Cells, seeds and draws on one
// side only are left out. alpha is the family-wise false-alarm rate of
// the verdicts; seed seeds the bootstrap of the intervals.
func Compare(before, now *Saved, alpha float64, seed uint64) *Compared {
	var pairs []pair
	names := make([]string, 0, len(before.Cells))
	for name := range before.Cells {
		if _, ok := now.Cells[name]; ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		b, n := bySeed(before.Cells[name]), bySeed(now.Cells[name])
		for _, f := range figures {
			var xs, ys []float64
			for s, fb := range b {
				fn, ok := n[s]
				if !ok {
					continue
				}
				if x, ok := fb[f.name]; ok {
					xs = append(xs, x)
				}
				if y, ok := fn[f.name]; ok {
					ys = append(ys, y)
				}
			}
			if len(xs) > 0 && len(ys) > 0 {
				slices.Sort(xs)
				slices.Sort(ys)
				pairs = append(pairs, pair{name: name, figure: f.name, higher: f.higher, before: xs, now: ys})
			}
		}
	}
	if len(before.Draws) > 0 && len(now.Draws) > 0 {
		b, n := bySeed(before.Draws), bySeed(now.Draws)
		seeds := make([]uint64, 0, len(b))
		for s := range b {
			seeds = append(seeds, s)
		}
		slices.Sort(seeds)
		for _, f := range figures {
			p := pair{name: "family", figure: f.name, higher: f.higher, paired: true}
			for _, s := range seeds {
				x, okb := b[s][f.name]
				y, okn := n[s][f.name]
				if okb && okn {
					p.before, p.now = append(p.before, x), append(p.now, y)
				}
			}
			if len(p.before) > 0 {
				pairs = append(pairs, p)
			}
		}
	}

	c := &Compared{Alpha: alpha, Seed: seed, Reps: compareReps}
	rng := rand.New(rand.NewPCG(seed, 0x636f6d70617265)) // "compare"
	for _, p := range pairs {
		cp := Comparison{Name: p.name, Figure: p.figure, Runs: len(p.before)}
		if p.paired {
			cp.Before, cp.Now, cp.Diff = median(sorted(p.before)), median(sorted(p.now)), median(differences(p))
		} else {
			cp.Before, cp.Now = median(p.before), median(p.now)
			cp.Diff = cp.Now - cp.Before
		}
		var up int
		up, cp.P, cp.MinP = p.test()
		cp.Verdict = verdict(p, up, cp.P, alpha/float64(len(pairs)))
		diffs := bootstrap(rng, p, c.Reps)
		cp.Lo, cp.Hi = percentile(diffs, 0.05), percentile(diffs, 0.95)
		c.List = append(c.List, cp)
	}
	return c
}

// test tests whether p's now differs from its before: the sign test if
// paired, else the U test. It returns the direction of the change (+1
// up, −1 down, 0 none), its two-sided p-value, and the smallest p-value
// the test can give with these numbers of runs.
func (p pair) test() (up int, pv, minP float64) {
	if p.paired {
		d := differences(p)
		up, pv = signTest(d)
		return up, pv, signTestMinP(len(d))
	}
	up, pv = uTest(p.before, p.now)
	return up, pv, uTestMinP(len(p.before), len(p.now))
}

// verdict judges a change of p's figure in direction up with p-value pv:
// noise unless pv is below threshold, else better or worse as the figure
// counts.
func verdict(p pair, up int, pv, threshold float64) string {
	switch {
	case pv >= threshold || up == 0:
		return Noise
	case (up > 0) == p.higher:
		return Better
	default:
		return Worse
	}
}

// uTest returns the direction in which now differs from before (+1 if
// its values tend to be higher, −1 lower, 0 alike) and the two-sided
// p-value of Mann-Whitney's U test, exact for the small numbers of runs
// a cell has (go-moremath's, as benchstat uses). Samples that are all
// one value give p = 1.
func uTest(before, now []float64) (up int, p float64) {
	r, err := stats.MannWhitneyUTest(now, before, stats.LocationDiffers)
	if err != nil {
		return 0, 1
	}
	half := float64(r.N1*r.N2) / 2
	switch {
	case r.U > half:
		up = 1
	case r.U < half:
		up = -1
	}
	return up, r.P
}

// uTestMinP is the smallest two-sided p-value of the U test with n and m
// runs: both ways of the runs of one side all above the other's, 2 ÷
// C(n+m, n).
func uTestMinP(n, m int) float64 {
	return min(1, 2/binomial(n+m, n))
}

// signTest returns the direction of the differences d (+1 if more rose
// than fell, −1 if more fell, 0 as many) and the two-sided p-value of the
// sign test over those that are not zero.
func signTest(d []float64) (up int, p float64) {
	var rose, fell int
	for _, x := range d {
		switch {
		case x > 0:
			rose++
		case x < 0:
			fell++
		}
	}
	n := rose + fell
	if n == 0 {
		return 0, 1
	}
	switch {
	case rose > fell:
		up = 1
	case rose < fell:
		up = -1
	}
	tail := stats.BinomialDist{N: n, P: 0.5}.CDF(float64(min(rose, fell)))
	return up, min(1, 2*tail)
}

// signTestMinP is the smallest two-sided p-value of the sign test over n
// differences: all of one sign, 2 ÷ 2^n.
func signTestMinP(n int) float64 {
	return min(1, math.Ldexp(2, -n))
}

// binomial returns C(n, k) as a float64.
func binomial(n, k int) float64 {
	c := 1.0
	for i := range k {
		c = c * float64(n-i) / float64(i+1)
	}
	return c
}

// differences returns now − before, draw by draw, sorted.
func differences(p pair) []float64 {
	d := make([]float64, len(p.before))
	for i := range d {
		d[i] = p.now[i] - p.before[i]
	}
	slices.Sort(d)
	return d
}

// sorted returns a sorted copy of xs.
func sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// bySeed indexes samples by seed.
func bySeed(ss []Sample) map[uint64]map[string]float64 {
	m := make(map[uint64]map[string]float64, len(ss))
	for _, s := range ss {
		m[s.Seed] = s.Figures
	}
	return m
}

// bootstrap returns reps resampled differences, sorted: of the medians,
// now − before, resampling each side on its own; or, where paired, the
// median of the differences, resampling the draws.
func bootstrap(rng *rand.Rand, p pair, reps int) []float64 {
	diffs := make([]float64, reps)
	xs, ys := make([]float64, len(p.before)), make([]float64, len(p.now))
	for r := range diffs {
		if p.paired {
			for i := range ys {
				j := rng.IntN(len(p.before))
				ys[i] = p.now[j] - p.before[j]
			}
			slices.Sort(ys)
			diffs[r] = median(ys)
			continue
		}
		for i := range xs {
			xs[i] = p.before[rng.IntN(len(p.before))]
		}
		for i := range ys {
			ys[i] = p.now[rng.IntN(len(p.now))]
		}
		slices.Sort(xs)
		slices.Sort(ys)
		diffs[r] = median(ys) - median(xs)
	}
	slices.Sort(diffs)
	return diffs
}

// median returns the median of sorted xs (the mean of the middle two if
// their number is even).
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Write writes the comparisons as a Markdown table: the worse first, then
// the better, then the noise; with how they were judged.
func (c *Compared) Write(w io.Writer) error {
	var b strings.Builder
	count := map[string]int{}
	for _, cp := range c.List {
		count[cp.Verdict]++
	}
	threshold := c.Threshold()
	fmt.Fprintf(&b, "%d comparisons: %d worse, %d better, %d noise. A comparison is better or worse if its p-value is below %.2g, the family-wise false-alarm rate %g over the %d comparisons (Bonferroni): Mann-Whitney's U test over a cell's runs, the sign test over the family's draws paired by seed. The difference is now − before: of the medians for a cell, the median of the draws' differences for the family; its 90%% interval is a bootstrap of %d resamples seeded %d.\n",
		len(c.List), count[Worse], count[Better], count[Noise], threshold, c.Alpha, len(c.List), c.Reps, c.Seed)
	few := 0
	for _, cp := range c.List {
		if cp.MinP >= threshold {
			few++
		}
	}
	if few > 0 {
		fmt.Fprintf(&b, "\n%d of the comparisons have too few runs to reach p = %.2g at all, and can only say noise: save with more runs (-runs), or compare fewer cells.\n", few, threshold)
	}
	b.WriteString("\n| cell | figure | runs | before | now | difference (90% interval) | p | verdict |\n|---|---|---|---|---|---|---|---|\n")
	rank := map[string]int{Worse: 0, Better: 1, Noise: 2}
	list := slices.Clone(c.List)
	slices.SortStableFunc(list, func(a, b Comparison) int { return cmp.Compare(rank[a.Verdict], rank[b.Verdict]) })
	for _, cp := range list {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s (%s, %s) | %.2g | %s |\n", cp.Name, cp.Figure, cp.Runs,
			figureString(cp.Figure, cp.Before), figureString(cp.Figure, cp.Now),
			figureString(cp.Figure, cp.Diff), figureString(cp.Figure, cp.Lo), figureString(cp.Figure, cp.Hi), cp.P, cp.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// figureString formats a value of the named figure as the distribution
// shows it.
func figureString(name string, x float64) string {
	for _, f := range figures {
		if f.name == name {
			return f.format(x)
		}
	}
	return fmt.Sprint(x)
}
