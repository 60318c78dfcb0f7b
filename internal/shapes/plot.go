package shapes

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one run of a cell, bucket by bucket, as the server counted it,
// for a picture: what the server admitted and throttled in each bucket,
// what the server's policy allowed, and what the learner believed.
//
// Bucket i covers [i·Bucket, (i+1)·Bucket) from the start of the run.
// Admitted and Throttled have one entry per bucket and must be equally
// long. Quota and Estimate are either nil (no line is drawn) or exactly
// as long as Admitted; a NaN or infinite entry leaves a gap in its line.
type Series struct {
	Title     string        // e.g. "fixed 200 per 10s, 32 callers"
	Bucket    time.Duration // width of each bucket (the server's window, or 1 s)
	Admitted  []int         // requests the server admitted in each bucket
	Throttled []int         // requests the server answered as throttles in each bucket
	Quota     []float64     // what the policy allows per bucket; NaN where no rate quota applies
	Estimate  []float64     // the learner's estimate of the same, in requests per bucket, its mean over the bucket; NaN where it has none
	Marks     []Mark        // vertical lines, e.g. "settled from", "quota step"
}

// Mark is a labelled moment in a Series, as an offset from its start.
type Mark struct {
	At    time.Duration
	Label string
}

// ErrBadSeries is wrapped by the error WriteSVG returns for a Series it
// cannot draw: no buckets, slices of different lengths, a negative count,
// a Bucket that is not positive, or a Mark outside the run.
var ErrBadSeries = errors.New("shapes: series cannot be drawn")

// Default picture size, in points: 16 cm by 7 cm.
const (
	defaultWidth  = 16 * float64(vg.Centimeter)
	defaultHeight = 7 * float64(vg.Centimeter)

	// The smallest picture WriteSVG draws, in points: 4 by 1.5 inches,
	// the legend taking about 1.5 inches of the width.
	minWidth  = 4 * float64(vg.Inch)
	minHeight = 1.5 * float64(vg.Inch)
)

// Colours and strokes of the picture.
var (
	admittedColor  = color.RGBA{R: 0x4c, G: 0x9a, B: 0x8a, A: 0xff} // calm teal
	throttledColor = color.RGBA{R: 0xd6, G: 0x3c, B: 0x32, A: 0xff} // red
	markColor      = color.Gray{Y: 0x99}

	quotaLine = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}
	guessLine = draw.LineStyle{
		Color:  color.RGBA{R: 0xf0, G: 0x8c, B: 0x00, A: 0xff}, // orange
		Width:  vg.Points(1.4),
		Dashes: []vg.Length{vg.Points(4), vg.Points(2.5)},
	}
	markLine = draw.LineStyle{Color: markColor, Width: vg.Points(0.6)}
)

// The picture's font: Liberation Sans, which has Arial's metrics, named
// in the SVG with fallbacks so a viewer without it still lays the text
// out at the widths it was measured at. No font is embedded.
var (
	sansFont     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansFamily   = []byte("font-family:Liberation Sans;")
	sansFallback = []byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;")
)

// WriteSVG draws s as an SVG picture to w: requests admitted (teal) and
// throttled (red, stacked above) per bucket as bars, the quota as a black
// step line, the learner's estimate as a dashed orange step line, each
// Mark as a thin grey vertical line with its label, and a legend to the
// right. The x axis is seconds from the start, the y axis requests per
// bucket. The legend names all four even when a line is missing, so the
// pictures of different cells read alike. WriteSVG changes no global
// state and may be called from several goroutines at once.
//
// width and height are in points (1/72 inch); zero means 16 cm by 7 cm,
// and a picture smaller than 4 by 1.5 inches is refused. The output is the
// same bytes for the same s and size, and embeds no font: about 12 KB
// for 40 buckets, and under 100 KB for 800 that all differ.
//
// WriteSVG returns an error wrapping ErrBadSeries, and writes nothing, if
// s has no buckets, if Admitted and Throttled differ in length, if Quota
// or Estimate is neither nil nor as long as Admitted, if a count is
// negative, if Bucket is not positive, or if a Mark is outside
// [0, len(Admitted)·Bucket]. It returns a plain error, and writes
// nothing, for a size it refuses. Otherwise it returns only w's error.
func (s Series) WriteSVG(w io.Writer, width, height float64) error {
	if err := s.check(); err != nil {
		return err
	}
	if width == 0 {
		width = defaultWidth
	}
	if height == 0 {
		height = defaultHeight
	}
	if !(width >= minWidth && height >= minHeight) || math.IsInf(width, 0) || math.IsInf(height, 0) {
		return fmt.Errorf("shapes: picture of %v by %v points: want at least %v by %v", width, height, minWidth, minHeight)
	}

	c := vgsvg.New(vg.Length(width), vg.Length(height))
	s.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	_, err := w.Write(bytes.ReplaceAll(buf.Bytes(), sansFamily, sansFallback))
	return err
}

// check returns an error wrapping ErrBadSeries if s cannot be drawn.
func (s Series) check() error {
	n := len(s.Admitted)
	switch {
	case n == 0:
		return fmt.Errorf("%w: no buckets", ErrBadSeries)
	case len(s.Throttled) != n:
		return fmt.Errorf("%w: %d admitted buckets but %d throttled", ErrBadSeries, n, len(s.Throttled))
	case s.Quota != nil && len(s.Quota) != n:
		return fmt.Errorf("%w: %d buckets but %d quota values", ErrBadSeries, n, len(s.Quota))
	case s.Estimate != nil && len(s.Estimate) != n:
		return fmt.Errorf("%w: %d buckets but %d estimates", ErrBadSeries, n, len(s.Estimate))
	case s.Bucket <= 0:
		return fmt.Errorf("%w: bucket width %v", ErrBadSeries, s.Bucket)
	}
	for i := range n {
		if s.Admitted[i] < 0 || s.Throttled[i] < 0 {
			return fmt.Errorf("%w: bucket %d has %d admitted and %d throttled", ErrBadSeries, i, s.Admitted[i], s.Throttled[i])
		}
	}
	end := time.Duration(n) * s.Bucket
	for _, m := range s.Marks {
		if m.At < 0 || m.At > end {
			return fmt.Errorf("%w: mark %q at %v is outside the run's %v", ErrBadSeries, m.Label, m.At, end)
		}
	}
	return nil
}

// draw draws the checked s onto c.
func (s Series) draw(c draw.Canvas) {
	n := len(s.Admitted)
	b := s.Bucket.Seconds()
	low := make([]float64, n)  // bottom of each bucket's throttled bar
	high := make([]float64, n) // its top
	top := 0.0
	for i := range n {
		low[i] = float64(s.Admitted[i])
		high[i] = low[i] + float64(s.Throttled[i])
		top = max(top, high[i])
	}
	for _, vs := range [][]float64{s.Quota, s.Estimate} {
		for _, v := range vs {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = max(top, v)
			}
		}
	}
	if top <= 0 {
		top = 1 // all zero: still draw an axis
	}

	p := plot.New()
	p.Title.Text = s.Title
	p.Title.TextStyle.Font = font.From(sansFont, 11)
	p.Title.Padding = vg.Points(4)
	p.X.Label.Text = "seconds from start"
	p.Y.Label.Text = "requests per " + bucketString(s.Bucket)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sansFont, 9)
		a.Tick.Label.Font = font.From(sansFont, 8)
		a.Padding = 0
		a.Tick.Marker = plainTicks{}
	}
	p.X.Min, p.X.Max = 0, float64(n)*b
	// Headroom above the data for the marks' labels.
	p.Y.Min, p.Y.Max = 0, top*1.18

	zero := make([]float64, n)
	p.Add(
		barPlotter{bucket: b, low: zero, high: low, color: admittedColor},
		barPlotter{bucket: b, low: low, high: high, color: throttledColor},
		stepPlotter{bucket: b, values: s.Quota, style: quotaLine},
		stepPlotter{bucket: b, values: s.Estimate, style: guessLine},
		markPlotter{marks: s.Marks, style: text.Style{
			Color:   color.Gray{Y: 0x55},
			Font:    font.From(sansFont, 7),
			Handler: p.TextHandler,
		}},
	)

	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sansFont, 9)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(16)
	l.Padding = vg.Points(3)
	l.Add("admitted", fillThumb(admittedColor))
	l.Add("throttled", fillThumb(throttledColor))
	l.Add("quota", lineThumb(quotaLine))
	l.Add("learner's estimate", lineThumb(guessLine))
	// The label is measured in Liberation Sans; a viewer may fall back to a
	// wider font, so leave it a fifth more room.
	labelWidth := l.TextStyle.Width("learner's estimate") * 6 / 5
	strip := l.ThumbnailWidth + labelWidth + vg.Points(16)

	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	p.BackgroundColor = nil
	p.Draw(draw.Crop(c, 0, -strip, 0, 0))
	titleHeight := p.Title.TextStyle.Rectangle(s.Title).Size().Y + p.Title.Padding
	l.Draw(draw.Crop(c, c.Size().X-strip+vg.Points(8), 0, 0, -titleHeight-vg.Points(4)))
}

// plainTicks are plot.DefaultTicks labelled without trailing zeros:
// "250", not "250.00".
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(math.Round(t.Value*1e9)/1e9, 'f', -1, 64)
		}
	}
	return ticks
}

// bucketString returns d as "10 s", "1.5 s" or "250 ms", for an axis label.
func bucketString(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'g', -1, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) + " s"
}

// barPlotter draws bucket i as a bar from low[i] to high[i], all bars in
// one SVG path. Bars wide enough to tell apart are drawn apart, with a
// gap; narrower ones are drawn as the step outline of each run of
// non-empty buckets, which is the same picture in fewer points.
type barPlotter struct {
	bucket    float64 // seconds
	low, high []float64
	color     color.Color
}

// Plot implements plot.Plotter.
func (bp barPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x := func(i int) vg.Length { return trX(float64(i) * bp.bucket) }
	gap := vg.Length(0)
	if width := x(1) - x(0); width >= 5 {
		gap = min(width*0.15, 3)
	}
	var path vg.Path
	for from := 0; from < len(bp.low); {
		if bp.high[from] <= bp.low[from] {
			from++
			continue
		}
		if gap > 0 {
			x0, x1 := x(from)+gap/2, x(from+1)-gap/2
			y0, y1 := trY(bp.low[from]), trY(bp.high[from])
			path.Move(vg.Point{X: x0, Y: y0})
			path.Line(vg.Point{X: x0, Y: y1})
			path.Line(vg.Point{X: x1, Y: y1})
			path.Line(vg.Point{X: x1, Y: y0})
			path.Close()
			from++
			continue
		}
		to := from
		for to+1 < len(bp.low) && bp.high[to+1] > bp.low[to+1] {
			to++
		}
		outline := stepEdge(nil, x, trY, bp.high, from, to)
		outline = stepEdgeBack(outline, x, trY, bp.low, from, to)
		path.Move(outline[0])
		for _, pt := range outline[1:] {
			path.Line(pt)
		}
		path.Close()
		from = to + 1
	}
	if len(path) == 0 {
		return
	}
	c.SetColor(bp.color)
	c.Fill(path)
}

// stepEdge appends to pts the step line of values[from] to values[to],
// left to right: level across each bucket, vertical between buckets,
// with no point where the level does not change.
func stepEdge(pts []vg.Point, x func(int) vg.Length, y func(float64) vg.Length, values []float64, from, to int) []vg.Point {
	for i := from; i <= to; i++ {
		if i == from || values[i] != values[i-1] {
			pts = append(pts, vg.Point{X: x(i), Y: y(values[i])})
		}
		if i == to || values[i+1] != values[i] {
			pts = append(pts, vg.Point{X: x(i + 1), Y: y(values[i])})
		}
	}
	return pts
}

// stepEdgeBack is stepEdge right to left.
func stepEdgeBack(pts []vg.Point, x func(int) vg.Length, y func(float64) vg.Length, values []float64, from, to int) []vg.Point {
	for i := to; i >= from; i-- {
		if i == to || values[i] != values[i+1] {
			pts = append(pts, vg.Point{X: x(i + 1), Y: y(values[i])})
		}
		if i == from || values[i-1] != values[i] {
			pts = append(pts, vg.Point{X: x(i), Y: y(values[i])})
		}
	}
	return pts
}

// stepPlotter draws values as a step line, level across each bucket, with
// a gap wherever a value is NaN or infinite.
type stepPlotter struct {
	bucket float64 // seconds
	values []float64
	style  draw.LineStyle
}

// Plot implements plot.Plotter.
func (sp stepPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x := func(i int) vg.Length { return trX(float64(i) * sp.bucket) }
	finite := func(i int) bool { return !math.IsNaN(sp.values[i]) && !math.IsInf(sp.values[i], 0) }
	var lines [][]vg.Point
	for from := 0; from < len(sp.values); {
		if !finite(from) {
			from++
			continue
		}
		to := from
		for to+1 < len(sp.values) && finite(to+1) {
			to++
		}
		lines = append(lines, stepEdge(nil, x, trY, sp.values, from, to))
		from = to + 1
	}
	if len(lines) > 0 {
		c.StrokeLines(sp.style, c.ClipLinesXY(lines...)...)
	}
}

// markPlotter draws each mark as a vertical line across the data area,
// labelled near the top. A label goes on the first of three rows where it
// does not run into the label before it.
type markPlotter struct {
	marks []Mark
	style text.Style
}

// Plot implements plot.Plotter.
func (mp markPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	lineHeight := mp.style.Rectangle("M").Size().Y
	marks := slices.Clone(mp.marks)
	slices.SortStableFunc(marks, func(a, b Mark) int { return cmp.Compare(a.At, b.At) })
	var ends []vg.Length // right end of the last label on each row
	for _, m := range marks {
		x := trX(m.At.Seconds())
		c.StrokeLine2(markLine, x, c.Min.Y, x, c.Max.Y)
		if m.Label == "" {
			continue
		}
		sty := mp.style
		sty.YAlign = draw.YTop
		width := sty.Width(m.Label)
		left := x + 2
		if x+2+width > c.Max.X {
			// Near the right edge: label to the left of the line.
			sty.XAlign = draw.XRight
			left = x - 2 - width
		}
		row := 0
		for row < len(ends) && left < ends[row]+3 {
			row++
		}
		switch {
		case row == len(ends) && row < 3:
			ends = append(ends, 0)
		case row == len(ends):
			row = len(ends) - 1 // no room: overlap on the last row
		}
		ends[row] = left + width
		pt := vg.Point{X: x + 2, Y: c.Max.Y - 1 - vg.Length(row)*lineHeight}
		if sty.XAlign == draw.XRight {
			pt.X = x - 2
		}
		c.FillText(sty, pt, m.Label)
	}
}

// fillThumb is a legend thumbnail: a filled square.
type fillThumb color.RGBA

// Thumbnail implements plot.Thumbnailer.
func (t fillThumb) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(color.RGBA(t), []vg.Point{
		{X: c.Min.X, Y: c.Min.Y},
		{X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Min.Y},
	})
}

// lineThumb is a legend thumbnail: a horizontal line.
type lineThumb draw.LineStyle

// Thumbnail implements plot.Thumbnailer.
func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle(t), c.Min.X, y, c.Max.X, y)
}
