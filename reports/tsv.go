package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
)

// TSVColumns is the TSV header. The first 13 columns (through note) are
// fixed and never move (docs/design.md, "Outputs"); the rest may grow at
// the end.
var TSVColumns = []string{
	"timestamp", "runId", "tool", "connections", "requests", "throughput", "p50", "p95", "p99", "errors", "cpu", "gcPause", "note",
	"scenario", "phase", "repeat", "model", "warmup", "offered_rate", "achieved_rate", "ok", "error_rate", "dropped", "cancelled",
	"p90", "p999", "max", "mean", "samples", "service_p99", "littleL", "inflight_mean", "connections_opened", "verdict",
	"arrivals", "cancelled_unsent", "target_cpu", "target_cpu_max_thread", "target_rss",
}

// Rows renders one finished (repeat, phase) as a TSV row, cells in
// TSVColumns order: timestamps ISO-8601 UTC, latencies in ms with 3
// decimals, rates in 1/s with 1 decimal, cpu in percent of one core,
// gcPause the longest GC pause in ms; target_cpu the spawned target's CPU
// in percent of the machine, target_cpu_max_thread its busiest thread in
// percent of one core, target_rss its resident set in bytes at the
// phase's end ("-" when the target was not measured). A percentile
// without samples is "n/a".
func (r *Run) Rows(pr *engine.PhaseResult) [][]string {
	s := pr.Summary
	p := pr.Phase
	var notes []string
	if pr.Interrupted {
		notes = append(notes, "interrupted")
	}
	if p.Warmup {
		notes = append(notes, "warmup")
	}
	if s.Cancelled > 0 {
		notes = append(notes, fmt.Sprintf("cancelled=%d", s.Cancelled))
	}
	if n := s.LeftOver(); n > 0 {
		// Not a column: the header stays the one earlier files have.
		notes = append(notes, fmt.Sprintf("left_over=%d", n))
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
	note := strings.Join(notes, ",")
	if note == "" {
		note = "-"
	}
	offered := "-"
	if off, ok := engine.Offered(pr); ok {
		offered = rate(off)
	}
	row := []string{
		pr.Start.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		r.RunID,
		r.Tool,
		strconv.Itoa(pr.ConnectionsRequested),
		strconv.FormatInt(s.Requests, 10),
		rate(s.Throughput()),
		pct(&s.Response, 50),
		pct(&s.Response, 95),
		pct(&s.Response, 99),
		strconv.FormatInt(s.Errors, 10),
		fmt.Sprintf("%.1f", pr.ClientCPU*100),
		ms(pr.GCPauseMax),
		note,
		r.Scenario.Name,
		p.Name,
		strconv.Itoa(pr.Repeat),
		string(p.Model),
		strconv.FormatBool(p.Warmup),
		offered,
		rate(s.AchievedRate()),
		strconv.FormatInt(s.OK, 10),
		errorRate(s),
		strconv.FormatInt(s.Dropped, 10),
		strconv.FormatInt(s.Cancelled, 10),
		pct(&s.Response, 90),
		pct(&s.Response, 99.9),
		distMax(&s.Response),
		distMean(&s.Response),
		strconv.FormatInt(s.Response.Count(), 10),
		pct(&s.Service, 99),
		fmt.Sprintf("%.3f", s.LittleL()),
		fmt.Sprintf("%.3f", s.InflightMean()),
		strconv.FormatInt(s.ConnectionsOpened, 10),
		string(engine.JudgePhase(r.Plan, pr)),
		strconv.FormatInt(s.Arrivals, 10),
		strconv.FormatInt(s.CancelledUnsent, 10),
	}
	if t := pr.Target; t != nil {
		row = append(row, fmt.Sprintf("%.1f", 100*t.CPU), fmt.Sprintf("%.1f", 100*t.CPUMaxThread), strconv.FormatInt(t.RSS, 10))
	} else {
		row = append(row, "-", "-", "-")
	}
	for i, c := range row {
		row[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(r.redact(c))
	}
	return [][]string{row}
}

func rate(v float64) string { return fmt.Sprintf("%.1f", v) }

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func pct(d *measure.Dist, p float64) string {
	v, ok := d.Percentile(p)
	if !ok {
		return "n/a"
	}
	return ms(v)
}

func distMax(d *measure.Dist) string {
	if v, ok := d.Max(); ok {
		return ms(v)
	}
	return "n/a"
}

func distMean(d *measure.Dist) string {
	if v, ok := d.Mean(); ok {
		return ms(v)
	}
	return "n/a"
}

// errorRate is errors/requests with 4 decimals; "n/a" without requests.
func errorRate(s *measure.Summary) string {
	if r, ok := s.ErrorRate(); ok {
		return fmt.Sprintf("%.4f", r)
	}
	return "n/a"
}

// AppendTSV appends rows to the TSV file at path, creating it (and its
// directory) with the header when it is new or empty. The append is one
// write(2) on an O_APPEND descriptor under an exclusive flock, so rows of
// concurrent runs never interleave and the header is written once.
//
// An existing file must begin with exactly the TSVColumns header: a file
// with other columns is refused (an error naming it) rather than mixed
// with ours. When it does not end in a newline (a previous writer was
// killed mid-row) the new rows start on a new line, so none is glued to
// the partial one. Every error names path.
func AppendTSV(path string, rows [][]string) error {
	for _, r := range rows {
		if len(r) != len(TSVColumns) {
			return fmt.Errorf("tsv row has %d cells, header %d", len(r), len(TSVColumns))
		}
	}
	f, err := openTSV(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	var b bytes.Buffer
	fresh, partial, err := tsvState(f, path)
	if err != nil {
		return err
	}
	if partial {
		b.WriteByte('\n')
	}
	if fresh {
		b.WriteString(strings.Join(TSVColumns, "\t"))
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
	_, _, err = tsvState(f, path)
	return err
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
// goes first), partial when its last line lacks its newline. A file whose
// first line is not the TSVColumns header is an error.
func tsvState(f *os.File, path string) (fresh, partial bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return false, false, fmt.Errorf("tsv %s: %w", path, err)
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size == 0 {
		return true, false, nil
	}
	header := strings.Join(TSVColumns, "\t")
	first := make([]byte, min(size, int64(len(header))+1))
	if _, err := f.ReadAt(first, 0); err != nil {
		return false, false, fmt.Errorf("tsv %s: %w", path, err)
	}
	line, _, _ := bytes.Cut(first, []byte{'\n'})
	if string(line) != header {
		return false, false, fmt.Errorf("tsv %s: its first line is not runner's header (other columns); refusing to mix formats: choose another file", path)
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return false, false, fmt.Errorf("tsv %s: %w", path, err)
	}
	return false, last[0] != '\n', nil
}
