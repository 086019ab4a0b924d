package compare

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/schema"
)

// A metric declared in one place, the catalogue, is read everywhere: a
// rule compiles and judges it (and validate's list names it), the JSON
// metrics block has its key (and reads it back), the TSV its column, the
// repeat summary its spread, and compare compares it.
func TestOneMetricAddedEverywhere(t *testing.T) {
	t.Cleanup(metric.Add(metric.Def{
		Name: "answered", JSON: "answered", TSV: "answered", Missing: "n/a", Across: "answered", Compare: 10, Judged: true,
		Unit: metric.Count, Worse: metric.LowerIsWorse,
		Read: func(p *metric.Phase) (float64, bool) {
			if p.Summary == nil {
				return 0, false
			}
			return float64(p.Summary.Responded), true
		},
	}))
	run := func(responded int64) *reports.Run {
		r := &reports.Run{RunID: "x", Tool: "runner", Scenario: &schema.Scenario{Name: "s"}, Plan: &engine.Plan{Repeats: 3},
			Result: &engine.Result{}}
		plan := &engine.PhasePlan{Name: "main", Model: engine.Closed}
		for i := range int64(3) {
			// A summary that holds together (reports.Load checks it):
			// responded + i ok responses, recorded.
			rec := measure.NewRecorder(1, measure.Options{Duration: time.Second})
			rec.AddArrivals(responded + i)
			for k := range responded + i {
				at := time.Duration(k+1) * time.Millisecond
				rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: at, Sent: at, Done: at + time.Millisecond,
					Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
			}
			pr := &engine.PhaseResult{Repeat: int(i) + 1, Phase: plan, Summary: rec.Summary(time.Second)}
			pr.Metrics = engine.MetricsOf(pr)
			r.Result.Phases = append(r.Result.Phases, pr)
		}
		return r
	}
	base, new := run(10), run(100)
	pr := base.Result.Phases[0]

	// Rules: compiled, judged, worst(x) by its direction, and listed.
	for src, want := range map[string]rules.Status{
		"answered >= 10": rules.Pass, "answered > 10": rules.Fail, "answered * 2 == 20": rules.Pass,
		"baseline.answered == 10": rules.Pass,
	} {
		r, err := rules.Compile(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		env := engine.RuleEnv(pr)
		env = env.WithBaseline(&env)
		if v := r.Eval(env); v.Status != want {
			t.Errorf("%s: %s (%s), want %s", src, v.Status, v.Reason, want)
		}
	}
	r, _ := rules.Compile("worst(answered) >= 10 && median(answered) == 11")
	var envs []rules.Env
	for _, pr := range base.Result.Phases {
		envs = append(envs, engine.RuleEnv(pr))
	}
	if j := rules.Judge(r, envs); j.Status != rules.Pass {
		t.Errorf("worst/median: %s (%s)", j.Status, j.Reason)
	}
	if _, err := rules.Compile("answerd > 1"); err == nil || !strings.Contains(err.Error(), "did you mean answered?") ||
		!strings.Contains(err.Error(), " answered;") {
		t.Errorf("a misspelt name: %v, want a suggestion and the name in the list", err)
	}
	if _, err := rules.Compile("answered > 1ms"); err == nil {
		t.Error("a count compared with a duration compiled")
	}

	// JSON: its key after the fields, read back.
	b, err := json.Marshal(pr.Metrics)
	if err != nil || !bytes.HasSuffix(b, []byte(`,"answered":10}`)) {
		t.Errorf("JSON metrics %s (%v), want answered last", b, err)
	}
	var back engine.Metrics
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if v, ok := back.Value("answered"); !ok || v != 10 {
		t.Errorf("answered read back as %v %v", v, ok)
	}

	// TSV: its column at the end, its cell in the row.
	cols := reports.Columns()
	row := base.Rows(pr)[0]
	if cols[len(cols)-1] != "answered" || len(row) != len(cols) || row[len(row)-1] != "10" {
		t.Errorf("TSV header ends %v, row %v", cols[len(cols)-3:], row[len(row)-3:])
	}
	if !slices.Equal(cols[:len(cols)-1], reports.TSVColumns) {
		t.Error("the columns before it moved")
	}

	// The repeat summary.
	if s := engine.Across(base.Result)[0].Metrics["answered"]; s.Median != 11 || s.Min != 10 || s.Max != 12 {
		t.Errorf("across: %+v", s)
	}

	// Compare, from the JSON reports written and loaded again.
	dir := t.TempDir()
	for name, r := range map[string]*reports.Run{"base.json": base, "new.json": new} {
		if err := reports.WriteJSON(filepath.Join(dir, name), r); err != nil {
			t.Fatal(err)
		}
	}
	bs, err := LoadSide("BASE", filepath.Join(dir, "base.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := LoadSide("NEW", filepath.Join(dir, "new.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(bs, ns)
	if err != nil {
		t.Fatal(err)
	}
	var got *MetricComparison
	for _, m := range res.Phases[0].Metrics {
		if m.Metric.Name == "answered" {
			got = m
		}
	}
	if got == nil || got.Base.Median != 11 || got.New.Median != 101 || got.Worse() {
		t.Fatalf("compare: %+v", got)
	}
}
