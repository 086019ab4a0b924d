package reports

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/internal/regularfile"
)

// MaxReport bounds a JSON report Load reads: 1 GiB.
const MaxReport = 1 << 30

// Load reads a JSON report written by a run (json.go) back into a Run, so
// that any report can be rendered again without re-running: console,
// TSV, Markdown, JUnit, HTML. Errors: an unreadable file, one that is not
// a runner JSON report (no run_id or no result), one whose
// format_version has a newer major number than FormatVersion's (a
// missing format_version is a report from before it existed: 1.0); a
// snapshot of a run that had not finished (outcome "incomplete") is
// loaded but says so in Outcome; one whose recorded figures contradict
// one another (engine.PhaseResult.Check: counts that do not add up,
// negative counts, intervals out of order, …), naming the repeat and
// phase. The saved metrics block of each phase is derived data, computed
// again from its summary (engine.MetricsOf), so that report, compare and
// merge read the same numbers. Anything but a regular file (a named pipe, a device) is
// refused, never read.
func Load(path string) (*Run, error) {
	// Only a regular file: a named pipe would block the command, a device
	// would never end (internal/regularfile).
	b, err := regularfile.ReadFile(path, MaxReport)
	if err != nil {
		return nil, err
	}
	r, err := parseRun(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ErrNotReport wraps Load's error for a file that is not a runner JSON
// report at all (not JSON, no run_id or no result, a part every report
// has missing): a command that pools a directory's *.json files skips
// such a file. Any other error of Load is about a runner report it
// refuses (a newer format, figures that contradict one another, a damaged
// value) and refuses the command too.
var ErrNotReport = errors.New("not a runner JSON report")

// parseRun reads a JSON report and compiles its rules again.
func parseRun(b []byte) (*Run, error) {
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		var head struct {
			RunID  string          `json:"run_id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(b, &head) == nil && head.RunID != "" && head.Result != nil {
			// A runner report with a value it cannot hold (an interval
			// edited, say): damaged, not foreign.
			return nil, fmt.Errorf("a damaged runner JSON report: %w", err)
		}
		return nil, fmt.Errorf("%w: %w", ErrNotReport, err)
	}
	if r.RunID == "" || r.Result == nil {
		return nil, fmt.Errorf("%w (no run_id or no result)", ErrNotReport)
	}
	if err := checkFormat(r.FormatVersion); err != nil {
		return nil, err
	}
	if r.FormatVersion == "" {
		r.FormatVersion = "1.0"
	}
	if err := r.complete(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReport, err)
	}
	// Compiled rules are not in the JSON: compile them again from their
	// source, so that a phase can be judged as the run judged it.
	if r.Plan != nil {
		for _, sr := range append(append([]*engine.ScopedRule(nil), r.Plan.Rules...), r.Plan.Expect...) {
			rule, err := rules.Compile(sr.Source)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", sr.Source, err)
			}
			sr.Rule = rule
		}
	}
	// A report saved before each phase recorded the cores its client
	// could use: they are the run's recorded environment's (judging never
	// reads the cores of the machine that judges again).
	if cores := r.Env.ClientCores(); cores > 0 {
		for _, pr := range r.Result.Phases {
			if pr.ClientCores <= 0 {
				pr.ClientCores = cores
			}
		}
	}
	// The figures a file holds are what every command reads: one edited
	// (or damaged) so that they contradict one another is refused here,
	// as merge refuses it, rather than rendered beside a verdict they
	// contradict.
	for _, pr := range r.Result.Phases {
		if err := pr.Check(); err != nil {
			return nil, fmt.Errorf("repeat %d, phase %s: the recorded figures do not hold together: %w", pr.Repeat, pr.Phase.Name, err)
		}
	}
	// The metrics block is derived data: computed again from the
	// summary, as the run computed it, so that every command reads the
	// same numbers whatever the file's block says.
	for _, pr := range r.Result.Phases {
		pr.Metrics = engine.MetricsOf(pr)
	}
	return &r, nil
}

// complete checks that a decoded report holds every part a run writes
// and every renderer reads: the scenario, the plan (its rules and
// expectations none null), and each phase result with its phase and its
// summary. A report edited by hand that lacks one is refused here, with
// the JSON path of what is missing, rather than read as if it were whole.
func (r *Run) complete() error {
	switch {
	case r.Scenario == nil:
		return errors.New("no scenario")
	case r.Plan == nil:
		return errors.New("no plan")
	}
	for _, list := range []struct {
		key   string
		rules []*engine.ScopedRule
	}{{"plan.rules", r.Plan.Rules}, {"plan.expect", r.Plan.Expect}} {
		for i, sr := range list.rules {
			if sr == nil {
				return fmt.Errorf("%s[%d] is null", list.key, i)
			}
		}
	}
	for i, pr := range r.Result.Phases {
		switch {
		case pr == nil:
			return fmt.Errorf("result.phases[%d] is null", i)
		case pr.Phase == nil:
			return fmt.Errorf("result.phases[%d].phase is missing", i)
		case pr.Summary == nil:
			return fmt.Errorf("result.phases[%d].summary is missing", i)
		}
	}
	return nil
}
