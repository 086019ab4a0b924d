package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/reports"
)

// TestFlowShop_Truth runs the shipped flow (log in → list → open one)
// against the reference target's shop and holds it to what is known
// exactly, not to wall-clock luck:
//   - each step's response time counts from when it came due (the
//     previous step's completion plus its think time), so for every
//     iteration its response time is the sum of its steps' plus the
//     think times; summed over the phase, to the nanosecond;
//   - the target's own per-endpoint counters equal each step's requests
//     (the scenario's reconcile rules pass: difference 0);
//   - a step's service time is at least the delay the target was told to
//     take for its path (--delay-path /login=3ms,/items=1ms).
func TestFlowShop_Truth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for about 6 s")
	}
	out := filepath.Join(t.TempDir(), "flow.json")
	code, stdout, stderr := cli(t, "run", "--log-level", "disabled", "--set", "repeats=1", "--json", out, filepath.Join("..", "..", "scenarios", "flow-shop.yaml"))
	if code != 0 && code != exitInconclusive {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	readJSON(t, out) // the result follows the published schema
	r, err := reports.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Verdict.Expect {
		if e.Status != rules.Pass {
			t.Errorf("reconciliation %s: %s", e.Source, e.Status)
		}
	}
	think := map[string]time.Duration{"login": 0, "items": 20 * time.Millisecond, "item": 10 * time.Millisecond}
	minService := map[string]time.Duration{"login": 3 * time.Millisecond, "items": time.Millisecond}
	for _, pr := range r.Result.Phases {
		s := pr.Summary
		if s.OK != s.Requests || s.LeftOver() != 0 {
			t.Fatalf("phase %s: %d of %d iterations ok, %d left over: the identity below needs every iteration whole", pr.Phase.Name, s.OK, s.Requests, s.LeftOver())
		}
		if len(pr.Steps) != 3 {
			t.Fatalf("phase %s: %d steps, want login, items, item", pr.Phase.Name, len(pr.Steps))
		}
		var sum time.Duration
		for _, st := range pr.Steps {
			ss := st.Summary
			if ss.Requests != s.Requests || ss.OK != s.OK {
				t.Errorf("phase %s step %s: %d requests, %d ok; the phase ran %d iterations", pr.Phase.Name, st.Name, ss.Requests, ss.OK, s.Requests)
			}
			sum += ss.Response.Sum() + time.Duration(ss.OK)*think[st.Name]
			if lo, _ := ss.Service.Min(); lo < minService[st.Name] {
				t.Errorf("phase %s step %s: fastest service %s, below the target's own delay %s", pr.Phase.Name, st.Name, lo, minService[st.Name])
			}
		}
		if got := s.Response.Sum(); got != sum {
			t.Errorf("phase %s: iterations' response times add up to %s, their steps' and think times to %s: want equal", pr.Phase.Name, got, sum)
		}
	}
}
