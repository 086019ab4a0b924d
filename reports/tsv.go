package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

// tsvLayout is the TSV's columns in order, before the catalogue's columns
// that it does not name (appended in catalogue order). A column is a
// cell of the run or the phase (tsvCells) or, otherwise, the metric of
// the catalogue (metric.All) whose TSV column it is. The first 13 columns
// (through note) are fixed and never move (docs/design.md, "Outputs");
// the rest may grow at the end. step names the flow step a row is of
// ("-" for a phase's own row); it came last, after target_rss, and a file
// begun before it still takes rows (AppendTSV).
var tsvLayout = []string{
	"timestamp", "runId", "tool", "connections", "requests", "throughput", "p50", "p95", "p99", "errors", "cpu", "gcPause", "note",
	"scenario", "phase", "repeat", "model", "warmup", "offered_rate", "achieved_rate", "ok", "error_rate", "dropped", "cancelled",
	"p90", "p999", "max", "mean", "samples", "service_p99", "littleL", "inflight_mean", "connections_opened", "verdict",
	"arrivals", "cancelled_unsent", "target_cpu", "target_cpu_max_thread", "target_rss", "step",
}

// stepColumn is the column that names a row's flow step.
const stepColumn = "step"

// tsvCells are the columns that are no metric: cells of the run, of the
// phase's plan and of its verdict.
var tsvCells = map[string]func(r *Run, pr *engine.PhaseResult) string{
	"timestamp": func(_ *Run, pr *engine.PhaseResult) string {
		return pr.Start.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	},
	"runId":    func(r *Run, _ *engine.PhaseResult) string { return r.RunID },
	"tool":     func(r *Run, _ *engine.PhaseResult) string { return r.Tool },
	"note":     (*Run).note,
	"scenario": func(r *Run, _ *engine.PhaseResult) string { return r.Scenario.Name },
	"phase":    func(_ *Run, pr *engine.PhaseResult) string { return pr.Phase.Name },
	"repeat":   func(_ *Run, pr *engine.PhaseResult) string { return strconv.Itoa(pr.Repeat) },
	"model":    func(_ *Run, pr *engine.PhaseResult) string { return string(pr.Phase.Model) },
	"warmup":   func(_ *Run, pr *engine.PhaseResult) string { return strconv.FormatBool(pr.Phase.Warmup) },
	"verdict": func(r *Run, pr *engine.PhaseResult) string {
		if st, judged := engine.PhaseStatus(r.Plan, pr); judged {
			return st.String()
		}
		return "-"
	},
	stepColumn: func(*Run, *engine.PhaseResult) string { return "-" },
}

// tsvColumn is one column: its name and how its cell is made.
type tsvColumn struct {
	name string
	cell func(r *Run, pr *engine.PhaseResult) string // nil for a metric
	def  metric.Def
}

// columns are the TSV's columns now: tsvLayout, then the catalogue's
// other TSV columns.
func columns() []tsvColumn {
	byTSV := map[string]metric.Def{}
	var rest []metric.Def
	for _, d := range metric.All() {
		if d.TSV == "" {
			continue
		}
		byTSV[d.TSV] = d
		if !slices.Contains(tsvLayout, d.TSV) {
			rest = append(rest, d)
		}
	}
	var out []tsvColumn
	for _, name := range tsvLayout {
		out = append(out, tsvColumn{name: name, cell: tsvCells[name], def: byTSV[name]})
	}
	for _, d := range rest {
		out = append(out, tsvColumn{name: d.TSV, def: d})
	}
	return out
}

// Columns is the TSV header as it stands: TSVColumns, and the columns of
// metrics added to the catalogue since (metric.Add).
func Columns() []string {
	var out []string
	for _, c := range columns() {
		out = append(out, c.name)
	}
	return out
}

// TSVColumns is the TSV header: tsvLayout, then the catalogue's other TSV
// columns.
var TSVColumns = Columns()

// Rows renders one finished (repeat, phase) as TSV rows, cells in
// Columns order: the phase's own row (step "-"; for a phase that ran
// flows its figures are the iterations', and its note says
// "iterations"), then one row per flow step in mix order (step the
// step's name, note "flow=NAME"), whose metric columns are the step's
// own where a step has the metric (metric.Def.Step: counts, rates,
// Little's law, latencies from when the step came due), "-" in the
// others (the phase's: connections, dropped, offered rate, client and
// target usage) and in verdict. Cells: timestamps ISO-8601 UTC; each metric in its unit
// (tsvCell): latencies in ms with 3 decimals, rates in 1/s with 1
// decimal, cpu in percent of one core, gcPause the longest GC pause in
// ms; target_cpu the spawned target's CPU in percent of the machine,
// target_cpu_max_thread its busiest thread in percent of one core,
// target_rss its resident set in bytes at the phase's end ("-" when the
// target was not measured). A percentile without samples is "n/a".
func (r *Run) Rows(pr *engine.PhaseResult) [][]string {
	ph := pr.MetricPhase()
	rows := [][]string{r.row(pr, ph, func(c tsvColumn) (string, bool) { return "", false })}
	for _, st := range pr.Steps {
		sph := &metric.Phase{Summary: st.Summary}
		rows = append(rows, r.row(pr, sph, func(c tsvColumn) (string, bool) {
			switch {
			case c.name == stepColumn:
				return st.Name, true
			case c.name == "note":
				return r.noteOf(pr, st.Summary, "flow="+st.Flow), true
			case c.name == "verdict":
				return "-", true
			case c.cell == nil && !c.def.Step:
				return "-", true
			}
			return "", false
		}))
	}
	return rows
}

// row renders one row: each column's cell from over when it says so
// (ok), else the column's own cell of the run and phase pr, else its
// metric read from ph; tabs and newlines become spaces and secrets are
// redacted.
func (r *Run) row(pr *engine.PhaseResult, ph *metric.Phase, over func(c tsvColumn) (string, bool)) []string {
	var row []string
	for _, c := range columns() {
		cell, ok := over(c)
		switch {
		case ok:
		case c.cell != nil:
			cell = c.cell(r, pr)
		case c.def.Read != nil:
			cell = tsvCell(c.def, ph)
		default:
			cell = "-"
		}
		row = append(row, strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(r.redact(cell)))
	}
	return row
}

// tsvCell formats metric d of ph in its unit: counts and bytes whole,
// rates with 1 decimal, durations in ms with 3, fractions with 4, means
// with 3, CPU shares in percent with 1; d.Missing without a value.
func tsvCell(d metric.Def, ph *metric.Phase) string {
	v, ok := d.Read(ph)
	if !ok {
		return d.Missing
	}
	switch d.Unit {
	case metric.Count, metric.Bytes:
		return strconv.FormatInt(int64(v), 10)
	case metric.PerSecond:
		return rate(v)
	case metric.Duration:
		return fmt.Sprintf("%.3f", metric.Ms(v))
	case metric.Fraction:
		return fmt.Sprintf("%.4f", v)
	case metric.CoreShare:
		return fmt.Sprintf("%.1f", 100*v)
	}
	return fmt.Sprintf("%.3f", v)
}

// note is the TSV's note cell of a phase's own row: what the row's
// figures are or leave out or rest on ("iterations" for a phase that ran
// flows; interrupted, warmup, cancelled=N of the arrivals an interrupt
// cancelled, left_over=N of the left-over arrivals (the drain's cuts
// among them: never in cancelled=N too) with left_over_thinking=N of them
// cut between a flow's steps, replies no request waited for, an
// unverified TLS certificate), or "-".
func (r *Run) note(pr *engine.PhaseResult) string {
	if isFlow(pr) {
		return r.noteOf(pr, pr.Summary, "iterations")
	}
	return r.noteOf(pr, pr.Summary)
}

// noteOf is the note cell of a row of pr whose figures are s: first what
// it is (what), then note's notes of pr and s.
func (r *Run) noteOf(pr *engine.PhaseResult, s *measure.Summary, what ...string) string {
	if s == nil {
		s = &measure.Summary{}
	}
	notes := slices.Clone(what)
	if pr.Interrupted {
		notes = append(notes, "interrupted")
	}
	if pr.Phase.Warmup {
		notes = append(notes, "warmup")
	}
	if n := interruptCancelled(s); n > 0 {
		// The drain's cuts are left over, counted there once.
		notes = append(notes, fmt.Sprintf("cancelled=%d", n))
	}
	if n := s.LeftOver(); n > 0 {
		// Not a column: the header stays the one earlier files have.
		notes = append(notes, fmt.Sprintf("left_over=%d", n))
		if s.CancelledThinking > 0 {
			notes = append(notes, fmt.Sprintf("left_over_thinking=%d", s.CancelledThinking))
		}
	}
	for _, c := range []struct {
		name string
		n    int64
	}{{"late", s.Late}, {"unknown_id", s.UnknownID}, {"duplicate_id", s.DuplicateID}} {
		if c.n > 0 {
			notes = append(notes, fmt.Sprintf("%s=%d", c.name, c.n))
		}
	}
	if r.Insecure {
		notes = append(notes, "tls-unverified")
	}
	if len(notes) == 0 {
		return "-"
	}
	return strings.Join(notes, ",")
}

func rate(v float64) string { return fmt.Sprintf("%.1f", v) }

// AppendTSV appends rows to the TSV file at path, creating it (and its
// directory) with the header when it is new or empty. The append is one
// write(2) on an O_APPEND descriptor under an exclusive flock, so rows of
// concurrent runs never interleave and the header is written once.
//
// An existing file must begin with exactly the TSVColumns header, or with
// the header from before the step column (TSVColumns without step): that
// file keeps its header and takes each phase's own row without the step
// cell, and no flow step's row (start a new file for those). A file with
// other columns is refused (an error naming it) rather than mixed with
// ours. When it does not end in a newline (a previous writer was
// killed mid-row) the new rows start on a new line, so none is glued to
// the partial one. Every error names path.
func AppendTSV(path string, rows [][]string) error {
	header := Columns()
	for _, r := range rows {
		if len(r) != len(header) {
			return fmt.Errorf("tsv row has %d cells, header %d", len(r), len(header))
		}
	}
	f, err := openTSV(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockWait(f); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer unlock(f)
	var b bytes.Buffer
	fresh, partial, legacy, err := tsvState(f, path)
	if err != nil {
		return err
	}
	if legacy {
		rows = withoutSteps(rows)
	}
	if partial {
		b.WriteByte('\n')
	}
	if fresh {
		b.WriteString(strings.Join(header, "\t"))
		b.WriteByte('\n')
	}
	for _, r := range rows {
		b.WriteString(strings.Join(r, "\t"))
		b.WriteByte('\n')
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		return fmt.Errorf("append to %s: %w", path, pathless(err))
	}
	return nil
}

// CheckTSV tells, before any traffic, whether AppendTSV could append to
// path: an existing file is opened for appending and, if it has content,
// its header checked; for a new one, its directory could be made (if need
// be) and take a new file. It creates nothing. It cannot see a device that
// refuses writes (/dev/full): AppendTSV reports that one. Every error
// names path.
func CheckTSV(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Prove that it can be created without creating it: a concurrent
		// run may create it and append rows meanwhile.
		return checkDir(path, "tsv", 0)
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		// A pipe or device would swallow the rows (a FIFO opened for
		// reading and writing reads its own writes) or refuse them.
		return fmt.Errorf("tsv %s: is not a regular file (%s); results must go to a file", path, st.Mode().Type())
	}
	f, err := openTSV(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, _, err = tsvState(f, path)
	return err
}

// TSVLeavesOutSteps reports whether AppendTSV would leave the flow
// steps' rows out of the file at path: it exists and its header is the
// one from before the step column (each phase's own row goes in, without
// the step cell). false for a new, empty or unreadable file, or one of
// other columns (CheckTSV says why those cannot take rows). It opens the
// file read-only and creates nothing.
func TSVLeavesOutSteps(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	_, _, legacy, err := tsvState(f, path)
	return err == nil && legacy
}

// withoutSteps is rows as a file begun before the step column takes
// them: the rows of flow steps left out, the step cell cut from the
// others.
func withoutSteps(rows [][]string) [][]string {
	i := slices.Index(Columns(), stepColumn)
	var out [][]string
	for _, r := range rows {
		if r[i] != "-" {
			continue
		}
		out = append(out, slices.Delete(slices.Clone(r), i, i+1))
	}
	return out
}

// legacyHeader is the TSV header from before the step column: Columns
// without it.
func legacyHeader() string {
	return strings.Join(slices.DeleteFunc(Columns(), func(c string) bool { return c == stepColumn }), "\t")
}

// openTSV opens path for reading and appending, creating it and its
// directory.
func openTSV(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("tsv %s: %w", path, pathless(err))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tsv %s: %w", path, pathless(err))
	}
	return f, nil
}

// tsvState reads what an append must know about the open TSV file f:
// fresh when it is empty (or not a regular file, e.g. a pipe: the header
// goes first), partial when its last line lacks its newline, legacy when
// its header is the one from before the step column (legacyHeader). A
// file whose first line is neither header is an error.
func tsvState(f *os.File, path string) (fresh, partial, legacy bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return false, false, false, fmt.Errorf("tsv %s: %w", path, err)
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size == 0 {
		return true, false, false, nil
	}
	header := strings.Join(Columns(), "\t")
	first := make([]byte, min(size, int64(len(header))+1))
	if _, err := f.ReadAt(first, 0); err != nil {
		return false, false, false, fmt.Errorf("tsv %s: %w", path, err)
	}
	line, _, _ := bytes.Cut(first, []byte{'\n'})
	legacy = string(line) == legacyHeader()
	if string(line) != header && !legacy {
		return false, false, false, fmt.Errorf("tsv %s: its first line is not runner's header (other columns); refusing to mix formats: choose another file", path)
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return false, false, false, fmt.Errorf("tsv %s: %w", path, err)
	}
	return false, last[0] != '\n', legacy, nil
}
