package reports

import (
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/schema"
)

// Run is everything known about one run of one scenario: the input to
// every report. It is self-contained: the JSON report is this value.
type Run struct {
	// RunID names the run; it links TSV rows to the JSON report.
	RunID string `json:"run_id"`
	// Tool is "runner".
	Tool     string           `json:"tool"`
	Scenario *schema.Scenario `json:"scenario"`
	Plan     *engine.Plan     `json:"plan"`
	Env      sysinfo.Env      `json:"environment"`
	// Target is the base URL driven; TargetSpawned the reference target
	// command line when the runner started it.
	Target        string `json:"target"`
	TargetSpawned string `json:"target_spawned,omitempty"`
	// Insecure is true when TLS certificate verification was turned off.
	Insecure bool           `json:"tls_insecure,omitempty"`
	Started  time.Time      `json:"started"`
	Ended    time.Time      `json:"ended"`
	Result   *engine.Result `json:"result"`
	// Across is every phase's headline metrics across its repeats:
	// median, min and max, never an average (engine.Across).
	Across []engine.PhaseSpread `json:"across_repeats,omitempty"`
	// Verdict is nil until the run is judged.
	Verdict  *engine.Verdict  `json:"verdict,omitempty"`
	Warnings []engine.Warning `json:"warnings,omitempty"`
	// Error says why the run could not complete; empty when it did.
	Error string `json:"error,omitempty"`
	// Outcome is the run's result in one word, as the exit code says it:
	// "pass", "fail", "inconclusive", "could-not-run" or "interrupted";
	// "incomplete" (exit code 3) in the snapshots written after each phase
	// while the run goes on, replaced by the final write.
	Outcome string `json:"outcome,omitempty"`
	// ExitCode is the process exit code for this scenario (DESIGN.md §5).
	ExitCode int `json:"exit_code"`
	// Baseline names the saved run `baseline.<metric>` read, when one
	// was given (--baseline); nil otherwise.
	Baseline *BaselineRef `json:"baseline,omitempty"`
}

// BaselineRef identifies a baseline run.
type BaselineRef struct {
	File     string `json:"file"`
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
}

// Expand replaces {run_id} and {scenario} in an output path.
func (r *Run) Expand(path string) string {
	name := "scenario"
	if r.Scenario != nil {
		name = r.Scenario.Name
	}
	return strings.NewReplacer("{run_id}", r.RunID, "{scenario}", name).Replace(path)
}

// redact replaces every secret (a value interpolated from ${ENV}) in s.
func (r *Run) redact(s string) string {
	if r.Scenario == nil {
		return s
	}
	for _, sec := range r.Scenario.Secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}
