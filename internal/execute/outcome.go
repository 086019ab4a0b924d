package execute

import (
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/reports"
)

// Outcomes of a run, one word each, as its report records them
// (reports.Run.Outcome) beside their exit code (reports.Run.ExitCode).
const (
	Pass         = "pass"          // every rule holds and the measurement supports it
	Fail         = "fail"          // a rule failed
	Inconclusive = "inconclusive"  // the measurement cannot support a verdict
	CouldNotRun  = "could-not-run" // the run could not complete or lost its results
	Interrupted  = "interrupted"   // a signal stopped it
	// Ran is a scale-out segment's outcome when it ran (exit 0): a
	// segment is not judged, the merge of every segment is.
	Ran = "ran"
	// Incomplete marks the report written after each phase, until the
	// run's final write replaces it: if it is all that is left (the
	// process was killed), it must not read as a finished run.
	Incomplete = "incomplete"
)

// Exit codes, recorded with each outcome (the command exits with the worst
// of its runs'). The report records them so that a CI job reading only the
// JSON sees what the process exited with.
const (
	ExitPass         = 0 // every rule holds
	ExitFail         = 1 // a rule failed
	ExitInvalid      = 2 // invalid scenario or usage; nothing was sent
	ExitCouldNotRun  = 3 // target unreachable, interrupted, crashed target, client limits, results lost
	ExitInconclusive = 4 // the measurement cannot support a verdict
)

// Decide sets a judged run's outcome and exit code from what it records:
// a run that could not complete (Error) or was interrupted is never judged
// as passed; otherwise the verdict decides, a failed rule winning over an
// inconclusive one, and a warning that invalidates the measurement (the
// generator was the bottleneck) makes a pass inconclusive.
func Decide(rep *reports.Run) {
	rep.Outcome, rep.ExitCode = outcome(rep)
}

func outcome(rep *reports.Run) (string, int) {
	switch {
	case rep.Error != "":
		return CouldNotRun, ExitCouldNotRun
	case rep.Result.Interrupted:
		return Interrupted, ExitCouldNotRun
	case rep.Segment != nil:
		return Ran, ExitPass
	}
	if rep.Verdict == nil {
		return Inconclusive, ExitInconclusive // never judged: never a pass
	}
	switch rep.Verdict.Status {
	case rules.Fail:
		return Fail, ExitFail
	case rules.Inconclusive, rules.Error:
		return Inconclusive, ExitInconclusive
	}
	if engine.Invalidating(rep.Warnings) {
		// The generator was the bottleneck: a pass would measure us.
		return Inconclusive, ExitInconclusive
	}
	return Pass, ExitPass
}

// ResultsLost marks a run whose output file could not be written: it
// could not complete (exit 3), whatever its verdict; err is added to its
// Error.
func ResultsLost(rep *reports.Run, err error) {
	msg := "results lost: " + err.Error()
	if rep.Error != "" {
		msg = rep.Error + "; " + msg
	}
	rep.Error = msg
	rep.Outcome, rep.ExitCode = CouldNotRun, ExitCouldNotRun
}
