package shapes

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	matrix = flag.Bool("matrix", false, "run every cell of the shape matrix for its full length, and rewrite the table in docs/matrix.md and the pictures in docs/shapes")
	runs   = flag.Int("runs", 5, "with -matrix, runs of each cell, seeded 1 to runs; the table shows their medians")
	onCell = flag.String("cell", "", "run the cell of this name alone, for its full length, seeded -seed, and print its row and its run window by window, each client's learner beside (and write its picture to the temporary directory); with -compare, compare that cell's runs alone")
)

// pictures are the cells drawn in docs/matrix.md, and the files in
// docs/shapes they go to. docs/matrix.md links each as shapes/<file>; those
// links lie outside the generated section, so a new picture needs one added
// by hand (TestMatrixDoc checks that each is there).
var pictures = map[string]string{
	"fixed 200/10s":             "fixed-200-per-10s.svg",
	"sliding 50/1s":             "sliding-50-per-1s.svg",
	"fixed 50/1s, step to 40%":  "fixed-50-per-1s-step-down.svg",
	"fixed 50/1s, step to 160%": "fixed-50-per-1s-step-up.svg",
	"fixed 50/1s, 256 callers":  "fixed-50-per-1s-256-callers.svg",
}

// TestMatrix runs the shape matrix: by default a few cells, shortened, as
// a smoke test (each runs to its end in virtual time, the callers' counts
// agree with the server's, no signed request is resent); with -matrix
// every cell at full length, and it rewrites the generated section of
// docs/matrix.md (the table) and the pictures in docs/shapes:
//
//	go test ./internal/shapes -run TestMatrix -count=1 -args -matrix
//
// -save FILE keeps each run's figures; -compare FILE runs what FILE holds
// again on the code at hand and says, figure by figure, whether it got
// better, worse or stayed within noise (see Compare), and rewrites no
// docs; with -cell NAME, that cell's runs alone. Otherwise -cell NAME
// runs that cell once, seeded -seed, and prints it window by window,
// each client's learner beside: how a cell's run went, for whoever
// changes the learner. Every run is checked (checkRun); no
// goodput figure is asserted: the table reports them against the goals.
func TestMatrix(t *testing.T) {
	cells, opts := matrixRuns(t)
	if len(cells) == 0 {
		t.Skipf("%s holds no cells", *compareFile)
	}
	rows := make([]Row, len(cells))
	samples := make([][]Sample, len(cells))
	t.Run("cells", func(t *testing.T) {
		for i, c := range cells {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				var tg, bare, classless []*Result
				for _, o := range opts[i] {
					var run Row
					synctest.Test(t, func(t *testing.T) { run.Result = Run(c, o) })
					tg = append(tg, run.Result)
					if c.Baseline {
						o := o
						o.Bare = true
						synctest.Test(t, func(t *testing.T) { run.Bare = Run(c, o) })
						bare = append(bare, run.Bare)
					}
					if c.classed() {
						o := o
						o.Classless = true
						synctest.Test(t, func(t *testing.T) { run.Classless = Run(c, o) })
						classless = append(classless, run.Classless)
					}
					samples[i] = append(samples[i], SampleOf(o, run))
				}
				for _, r := range slices.Concat(tg, bare, classless) {
					checkRun(t, r)
				}
				row := Row{Result: Summarize(tg)}
				if len(bare) > 0 {
					row.Bare = Summarize(bare)
				}
				if len(classless) > 0 {
					row.Classless = Summarize(classless)
				}
				t.Logf("%d calls in %v of wall time; misses: %v", row.Result.Calls, time.Since(began).Round(time.Millisecond), row.Misses())
				rows[i] = row
			})
		}
	})
	if t.Failed() {
		return
	}
	now := &Saved{Cells: map[string][]Sample{}}
	for i, c := range cells {
		now.Cells[c.Name] = samples[i]
	}
	report(t, now)
	if *onCell != "" {
		logRun(t, rows[0], fmt.Sprintf("tollgate-cell-%d.svg", *firstSeed))
		return
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if !*matrix || *compareFile != "" {
		return
	}
	for _, row := range rows {
		name, ok := pictures[row.Result.Cell.Name]
		if !ok {
			continue
		}
		var svg bytes.Buffer
		if err := row.Result.Series.WriteSVG(&svg, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docsDir, "shapes", name), svg.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := rewriteDoc(matrixDoc, beginMark, endMark, table.String()); err != nil {
		t.Fatal(err)
	}
}

// checkRun reports as errors on t what must hold of every run: the
// callers' counts agree with the server's, no signed request was resent,
// the run was not cut short.
func checkRun(t *testing.T, r *Result) {
	t.Helper()
	if err := r.Agree(); err != nil {
		t.Error(err)
	}
	if r.Replays != 0 {
		t.Errorf("%s: %d SignatureNonceUsed answers: a signed request was resent", r.Cell.Name, r.Replays)
	}
	if r.Cut {
		t.Errorf("%s: cut short at %d calls", r.Cell.Name, maxCalls)
	}
}

// matrixRuns returns the cells TestMatrix runs and the Options of each
// one's runs: with -compare, those its file holds (of the -cell named
// alone, if one is); else with -cell that
// cell, once, traced; else with -matrix every cell, at full length,
// seeded 1 to -runs; else the smoke cells, shortened, seeded 1.
func matrixRuns(t *testing.T) ([]Cell, [][]Options) {
	b := comparing(t)
	var cells []Cell
	var opts [][]Options
	if *onCell != "" && b == nil {
		for _, c := range Cells() {
			if c.Name == *onCell {
				return []Cell{c}, [][]Options{{{Seed: *firstSeed, Trace: true}}}
			}
		}
		t.Fatalf("-cell %q: no cell has that name", *onCell)
	}
	for _, c := range Cells() {
		var o []Options
		switch {
		case b != nil && *onCell != "" && c.Name != *onCell:
			// -compare with -cell: that cell's runs alone.
		case b != nil:
			o = optionsOf(b.Cells[c.Name])
		case *matrix || c.Smoke:
			n := 1
			if *matrix {
				n = max(*runs, 1)
			}
			for seed := range uint64(n) {
				o = append(o, Options{Short: !*matrix, Seed: seed + 1})
			}
		}
		if len(o) > 0 {
			cells, opts = append(cells, c), append(opts, o)
		}
	}
	if *onCell != "" && len(cells) == 0 {
		t.Fatalf("-cell %q: %s holds no runs of a cell of that name", *onCell, *compareFile)
	}
	return cells, opts
}

// docsDir is the repository's docs directory, seen from this package's
// directory, where go test runs; matrixDoc is the page that shows the
// matrix.
var (
	docsDir   = filepath.Join("..", "..", "docs")
	matrixDoc = filepath.Join(docsDir, "matrix.md")
)

// The generated section of docs/matrix.md lies between these lines.
const (
	beginMark = "<!-- shapes:begin (generated by go test ./internal/shapes -run TestMatrix -args -matrix; do not edit) -->"
	endMark   = "<!-- shapes:end -->"
)

// rewriteDoc replaces the generated section of the Markdown file at path
// (docs/matrix.md) between the lines begin and end with text, keeping
// everything outside them.
func rewriteDoc(path, begin, end, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no generated section between %q and %q", path, begin, end)
	}
	s = s[:i+len(begin)] + "\n\n" + text + "\n" + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// TestMatrixDoc checks, without running the matrix, that docs/matrix.md has
// the marker lines of each generated section (the table, the family's
// distribution, the real-time cells) once each and in order, and a link
// to each picture relative to docs/; and that a rewrite of a copy of it
// replaces a generated section only.
func TestMatrixDoc(t *testing.T) {
	b, err := os.ReadFile(matrixDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range pictures {
		if !strings.Contains(doc, "](shapes/"+name+")") {
			t.Errorf("%s: no link to shapes/%s", matrixDoc, name)
		}
		if _, err := os.Stat(filepath.Join(docsDir, "shapes", name)); err != nil {
			t.Error(err)
		}
	}
	for _, marks := range [][2]string{{beginMark, endMark}, {familyBegin, familyEnd}, {realtimeBegin, realtimeEnd}} {
		begin, end := marks[0], marks[1]
		for _, m := range marks {
			if n := strings.Count(doc, m); n != 1 {
				t.Errorf("%s: %d lines %q, want 1", matrixDoc, n, m)
			}
		}
		i, j := strings.Index(doc, begin)+len(begin), strings.Index(doc, end)
		if i > j {
			t.Errorf("%s: %q comes before %q", matrixDoc, end, begin)
			continue
		}

		// Rewrite a copy: once with another text, which must replace the
		// generated section only, and once with the text the page shows,
		// which must give the page back byte for byte.
		shown, ok := strings.CutPrefix(doc[i:j], "\n\n")
		if ok {
			shown, ok = strings.CutSuffix(shown, "\n")
		}
		if !ok {
			t.Errorf("%s: the section after %q is not a blank line, the text and a newline", matrixDoc, begin)
		}
		copyPath := filepath.Join(t.TempDir(), "matrix.md")
		if err := os.WriteFile(copyPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		const other = "| cell |\n|---|\n| new |\n"
		for _, c := range []struct{ text, want string }{
			{other, doc[:i] + "\n\n" + other + "\n" + doc[j:]},
			{shown, doc},
		} {
			if err := rewriteDoc(copyPath, begin, end, c.text); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(copyPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("rewriteDoc of a copy of %s after %q:\n%s\nwant:\n%s", matrixDoc, begin, got, c.want)
			}
		}
	}
}
