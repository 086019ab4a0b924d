package reports

import (
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
)

// TestRulePercentilesLine: the latency lines show the percentiles the
// plan's rules read beyond p50 … p99.9, thin ones marked.
func TestRulePercentilesLine(t *testing.T) {
	rec := measure.NewRecorder(1, measure.Options{})
	for i := 1; i <= 100; i++ {
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: time.Duration(i) * time.Millisecond, Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
	}
	s := rec.Summary(time.Second)
	var pl engine.Plan
	for _, src := range []string{"p75 < 1s", "errors == 0", "median(service.p99.99) < 1s"} {
		r, err := rules.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		pl.Rules = append(pl.Rules, &engine.ScopedRule{Rule: r})
	}
	want := "  p75 75.008ms  p99.99 100.000ms*" // a bucket top; 100 samples: p99.99 needs 100000
	if got := rulePercentilesLine(&s.Response, &pl); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := rulePercentilesLine(&s.Response, nil); got != "" {
		t.Errorf("no plan: %q", got)
	}
}
