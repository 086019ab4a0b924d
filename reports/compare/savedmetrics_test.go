package compare

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/schema"
)

// A hostile tester edited the saved metrics block (throughput 1e308):
// `runner compare` read it and printed a 300-digit number and "(++Inf%)",
// while `runner report` recomputed 10/s from the summary. The block is
// derived data: loading computes it again from the summary, so every
// command reads the same numbers.
func TestCompareReadsMetricsFromTheSummaryNotTheSavedBlock(t *testing.T) {
	path := writeEdited(t, t.TempDir(), "r.json", func(doc map[string]any) {
		for _, ph := range doc["result"].(map[string]any)["phases"].([]any) {
			ph.(map[string]any)["metrics"].(map[string]any)["throughput"] = 1e308
		}
	})
	side, err := LoadSide("BASE", path, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range side.Runs[0].Result.Phases {
		if pr.Metrics == nil {
			t.Fatalf("repeat %d: no metrics", pr.Repeat)
		}
		if pr.Metrics.Throughput != 10 {
			t.Errorf("repeat %d: throughput %v, want 10/s (10 ok in 1 s), not the edited 1e308", pr.Repeat, pr.Metrics.Throughput)
		}
	}
}

// `runner compare DIR` skipped a report of a newer major format with a
// note on stderr and exit 0, though the README says compare refuses one
// (as report and merge do). A file that is not a runner report at all is
// still skipped.
func TestCompareDirRefusesANewerFormat(t *testing.T) {
	dir := t.TempDir()
	writeEdited(t, dir, "a.json", func(map[string]any) {})
	if err := os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{"hello": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	side, err := LoadSide("BASE", dir, "")
	if err != nil || len(side.Runs) != 1 || len(side.Skipped) != 1 || !strings.Contains(side.Skipped[0], "notes.json") {
		t.Fatalf("a report and a foreign file: %v, %+v; want the report pooled, notes.json skipped", err, side)
	}
	writeEdited(t, dir, "b.json", func(doc map[string]any) { doc["format_version"] = "2.0" })
	side, err = LoadSide("BASE", dir, "")
	if err == nil || !strings.Contains(err.Error(), "b.json") || !strings.Contains(err.Error(), "format_version 2.0 is newer") {
		t.Errorf("a report of format 2.0 in the directory: %v, %+v; want it refused, naming b.json", err, side)
	}
}

// writeEdited writes a run's JSON report (one closed phase, three repeats
// of 10 ok responses in 1 s: 10/s), decoded into generic maps and changed
// by edit, to dir/name, and returns its path.
func writeEdited(t *testing.T, dir, name string, edit func(doc map[string]any)) string {
	t.Helper()
	r := &reports.Run{RunID: "x", FormatVersion: reports.FormatVersion, Tool: "runner", Scenario: &schema.Scenario{Name: "s"},
		Plan: &engine.Plan{Repeats: 3}, Result: &engine.Result{}}
	plan := &engine.PhasePlan{Name: "main", Model: engine.Closed}
	for rep := 1; rep <= 3; rep++ {
		rec := measure.NewRecorder(1, measure.Options{Duration: time.Second})
		rec.AddArrivals(10)
		for k := range 10 {
			at := time.Duration(k+1) * time.Millisecond
			rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: at, Sent: at, Done: at + time.Millisecond,
				Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
		}
		pr := &engine.PhaseResult{Repeat: rep, Phase: plan, Summary: rec.Summary(time.Second)}
		pr.Metrics = engine.MetricsOf(pr)
		r.Result.Phases = append(r.Result.Phases, pr)
	}
	var doc map[string]any
	if b, err := json.Marshal(r); err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatal(err)
	}
	edit(doc)
	b, err := json.Marshal(doc)
	path := filepath.Join(dir, name)
	if err != nil || os.WriteFile(path, b, 0o644) != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
	return path
}

// The change of a metric whose percentage overflowed to +Inf printed
// "(++Inf%)": FormatFloat signs an infinity itself. A huge value printed
// all of its 309 digits.
func TestInfiniteChangeHasOneSign(t *testing.T) {
	m := &MetricComparison{Base: Spread{Values: []float64{1}, Median: 1}, New: Spread{Values: []float64{2}, Median: 2},
		Delta: 1e308, DeltaPct: math.Inf(1)}
	if got, want := m.change(), "+1e+308 (+Inf%)"; got != want {
		t.Errorf("change %q, want %q", got, want)
	}
	m.Delta, m.DeltaPct = -1e308, math.Inf(-1)
	if got, want := m.change(), "-1e+308 (-Inf%)"; got != want {
		t.Errorf("change %q, want %q", got, want)
	}
	m.Delta, m.DeltaPct = 2, 100
	if got, want := m.change(), "+2.000 (+100.0%)"; got != want {
		t.Errorf("change %q, want %q", got, want)
	}
}
