package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/schema"
)

// Run is everything known about one run of one scenario: the input to
// every report. It is self-contained: the JSON report is this value.
type Run struct {
	// FormatVersion is the version of the JSON document's format
	// (reports.FormatVersion when written; "" in a report from before it
	// existed, which Load reads as "1.0").
	FormatVersion string `json:"format_version"`
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
	// ExitCode is the process exit code for this scenario
	// (docs/design.md, "Exit codes").
	ExitCode int `json:"exit_code"`
	// Baseline names the saved run `baseline.<metric>` read, when one
	// was given (--baseline); nil otherwise.
	Baseline *BaselineRef `json:"baseline,omitempty"`
	// Segment is set in the report of a scale-out segment (runner run
	// --segment K/N): it is not judged, its merge is. Merged is set in
	// the result `runner merge` made of segments.
	Segment *Segment `json:"segment,omitempty"`
	Merged  *Merged  `json:"merged,omitempty"`
	// Redact, when set, is the run's redactor, built once from
	// Scenario.Secrets; nil builds one from them when needed.
	Redact *redact.Redactor `json:"-"`
}

// BaselineRef identifies a baseline run.
type BaselineRef struct {
	File     string `json:"file"`
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
}

// Expand replaces {run_id}, {scenario} and {segment} (K-of-N, e.g.
// 2-of-4; "merged" for a merge of segments; "whole" for a run that is
// not a segment) in an output path. A secret
// in the scenario's name is redacted: a file name is written too; and the
// name is one path component (fileNamePart).
func (r *Run) Expand(path string) string {
	name := "scenario"
	if r.Scenario != nil {
		name = fileNamePart(r.redact(r.Scenario.Name))
	}
	seg := "whole"
	switch {
	case r.Segment != nil:
		seg = fmt.Sprintf("%d-of-%d", r.Segment.K, r.Segment.N)
	case r.Merged != nil:
		seg = "merged"
	}
	return strings.NewReplacer("{run_id}", r.RunID, "{scenario}", name, "{segment}", seg).Replace(path)
}

// fileNamePart makes a scenario name one component of a path: a path
// separator (/ or \) becomes _, and so does a name of only dots, so that
// {scenario} never leaves the directory it is written in (a name such as
// ../../etc/x, from a scenario in a pull request, would).
func fileNamePart(name string) string {
	name = strings.NewReplacer("/", "_", "\\", "_", "\x00", "_").Replace(name)
	if strings.Trim(name, ".") == "" {
		name = strings.Repeat("_", max(len(name), 1))
	}
	return name
}

// Redactor is the run's redactor: Redact, or one built from the
// scenario's secrets (values interpolated from ${ENV}) when it is nil.
func (r *Run) Redactor() *redact.Redactor {
	switch {
	case r.Redact != nil:
		return r.Redact
	case r.Scenario == nil:
		return nil
	}
	return redact.New(r.Scenario.Secrets)
}

// redact replaces every secret in s, and the front part of one where s
// was shortened (redact.Redactor.String).
func (r *Run) redact(s string) string { return r.Redactor().String(s) }
