package shapes

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// stepSeries returns n one-second buckets: a quota of 100 that steps to
// 50 halfway, a learner with no estimate for the first 3 buckets, and
// two marks.
func stepSeries(n int) Series {
	s := Series{
		Title:     "fixed 100 per 1s, stepping to 50, 32 callers",
		Bucket:    time.Second,
		Admitted:  make([]int, n),
		Throttled: make([]int, n),
		Quota:     make([]float64, n),
		Estimate:  make([]float64, n),
		Marks: []Mark{
			{At: 5 * time.Second, Label: "settled from"},
			{At: time.Duration(n/2) * time.Second, Label: "quota step"},
		},
	}
	for i := range n {
		q := 100.0
		if i >= n/2 {
			q = 50
		}
		s.Quota[i] = q
		s.Admitted[i] = int(q) - i%7
		s.Throttled[i] = (i * 13) % 9
		s.Estimate[i] = q * (0.8 + 0.01*float64(i%10))
		if i < 3 {
			s.Estimate[i] = math.NaN()
		}
	}
	return s
}

// writeSVG returns s drawn at the default size, failing t on an error.
func writeSVG(t *testing.T, s Series) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.WriteSVG(&buf, 0, 0); err != nil {
		t.Fatalf("WriteSVG: %v", err)
	}
	return buf.Bytes()
}

// checkSVG fails t unless out is well-formed XML whose root is <svg>.
func checkSVG(t *testing.T, out []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(out))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("output is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element is <%s>, want <svg>", root)
	}
}

func TestWriteSVG(t *testing.T) {
	s := stepSeries(30)
	out := writeSVG(t, s)
	checkSVG(t, out)
	for _, want := range []string{
		s.Title,
		"admitted", "throttled", "quota", "learner&#39;s estimate",
		"settled from", "quota step",
		"seconds from start", "requests per 1 s",
		"font-family:Liberation Sans,Arial,Helvetica,sans-serif;",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
	if bytes.Contains(out, []byte("NaN")) || bytes.Contains(out, []byte("Inf")) {
		t.Error("output has a NaN or Inf coordinate")
	}
	if bytes.Contains(out, []byte("@font-face")) {
		t.Error("output embeds a font")
	}
	if again := writeSVG(t, s); !bytes.Equal(out, again) {
		t.Error("two writes of the same series differ")
	}
}

// TestWriteSVGGaps checks that NaN breaks a line rather than drawing
// zero: each run of finite estimates is its own dashed path, and the
// legend's thumbnail is one more.
func TestWriteSVGGaps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nan   []int
		zero  []int
		paths int
	}{
		{"leading NaN", []int{0, 1, 2}, nil, 2},
		{"leading and middle NaN", []int{0, 1, 2, 10, 11}, nil, 3},
		{"NaN at the end too", []int{0, 1, 2, 10, 29}, nil, 3},
		{"all NaN", nil, nil, 1},
		{"zeros, not NaN", nil, []int{0, 1, 2, 10, 11}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stepSeries(30)
			for i := range s.Estimate {
				s.Estimate[i] = 80
			}
			for _, i := range tc.nan {
				s.Estimate[i] = math.NaN()
			}
			for _, i := range tc.zero {
				s.Estimate[i] = 0
			}
			if tc.name == "all NaN" {
				for i := range s.Estimate {
					s.Estimate[i] = math.NaN()
				}
			}
			out := writeSVG(t, s)
			if n := bytes.Count(out, []byte("stroke-dasharray")); n != tc.paths {
				t.Errorf("%d dashed paths, want %d", n, tc.paths)
			}
		})
	}
}

func TestWriteSVGEdgeCases(t *testing.T) {
	zeros := Series{
		Bucket:    10 * time.Second,
		Admitted:  make([]int, 13),
		Throttled: make([]int, 13),
	}
	checkSVG(t, writeSVG(t, zeros)) // all zero, no lines, no title

	noQuota := stepSeries(40)
	for i := range noQuota.Quota {
		noQuota.Quota[i] = math.NaN()
	}
	noQuota.Estimate[7] = math.Inf(1)
	checkSVG(t, writeSVG(t, noQuota))

	atEnd := stepSeries(10)
	atEnd.Marks = append(atEnd.Marks, Mark{At: 10 * time.Second, Label: "end"}, Mark{At: 0})
	checkSVG(t, writeSVG(t, atEnd))
}

func TestWriteSVGRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Series)
		want   string // in the error's text
	}{
		{"empty", func(s *Series) { *s = Series{} }, "no buckets"},
		{"no buckets", func(s *Series) { s.Admitted, s.Throttled, s.Quota, s.Estimate = nil, nil, nil, nil }, "no buckets"},
		{"short throttled", func(s *Series) { s.Throttled = s.Throttled[:29] }, "30 admitted buckets but 29 throttled"},
		{"long throttled", func(s *Series) { s.Throttled = append(s.Throttled, 1) }, "30 admitted buckets but 31 throttled"},
		{"short quota", func(s *Series) { s.Quota = s.Quota[:29] }, "29 quota values"},
		{"empty quota", func(s *Series) { s.Quota = []float64{} }, "0 quota values"},
		{"long estimate", func(s *Series) { s.Estimate = append(s.Estimate, 1) }, "31 estimates"},
		{"zero bucket", func(s *Series) { s.Bucket, s.Marks = 0, nil }, "bucket width 0s"},
		{"negative bucket", func(s *Series) { s.Bucket, s.Marks = -time.Second, nil }, "bucket width -1s"},
		{"negative admitted", func(s *Series) { s.Admitted[4] = -1 }, "bucket 4 has -1 admitted"},
		{"negative throttled", func(s *Series) { s.Throttled[29] = -2 }, "and -2 throttled"},
		{"mark before start", func(s *Series) { s.Marks[0].At = -time.Millisecond }, `"settled from" at -1ms`},
		{"mark after end", func(s *Series) { s.Marks[1].At = 30*time.Second + 1 }, `"quota step" at 30.000000001s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stepSeries(30)
			tc.change(&s)
			var buf bytes.Buffer
			err := s.WriteSVG(&buf, 0, 0)
			if !errors.Is(err, ErrBadSeries) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteSVG error = %v, want ErrBadSeries with %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteSVG wrote %d bytes with an error", buf.Len())
			}
		})
	}

	// Nil Quota and Estimate are allowed: no line is drawn.
	s := stepSeries(30)
	s.Quota, s.Estimate = nil, nil
	out := writeSVG(t, s)
	checkSVG(t, out)
	if n := bytes.Count(out, []byte("stroke-dasharray")); n != 1 {
		t.Errorf("nil Estimate: %d dashed paths, want only the legend's", n)
	}

	for _, size := range [][2]float64{{287, 0}, {0, 107}, {-1, -1}, {math.NaN(), 0}, {math.Inf(1), 0}} {
		if err := stepSeries(30).WriteSVG(io.Discard, size[0], size[1]); err == nil {
			t.Errorf("WriteSVG at %v by %v points: no error", size[0], size[1])
		}
	}
}

// TestWriteSVGSize keeps pictures small: no embedded font, one path per
// layer of bars.
func TestWriteSVGSize(t *testing.T) {
	for _, tc := range []struct {
		buckets, limit int
	}{
		{40, 40 << 10},
		{800, 200 << 10},
	} {
		out := writeSVG(t, stepSeries(tc.buckets))
		t.Logf("%d buckets: %d bytes", tc.buckets, len(out))
		if len(out) > tc.limit {
			t.Errorf("%d buckets: %d bytes, want at most %d", tc.buckets, len(out), tc.limit)
		}
		if n := strings.Count(string(out), "<path"); n > 60 {
			t.Errorf("%d buckets: %d paths, want the bars in a few", tc.buckets, n)
		}
	}
}
