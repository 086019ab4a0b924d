package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/runner-dev/runner/reports"
)

// output is one file a run writes.
type output struct {
	// format is the flag's name: tsv, json, markdown, junit, html or hdr.
	format string
	// from says where the path came from: "--json" or "outputs.json".
	from string
	// path is as given, {run_id} and {scenario} unexpanded; expanded is
	// the file the run writes.
	path, expanded string
}

// runOutputs lists the files the run rep writes, in the order tsv, json,
// markdown, junit, html, hdr: a flag wins over the scenario's outputs.*,
// and {run_id}, {scenario} and {segment} are expanded with rep's. A
// scale-out segment writes its JSON report alone.
func runOutputs(rep *reports.Run, f runFlags) []output {
	out := rep.Scenario.Outputs
	var list []output
	for _, o := range []struct{ format, flag, scenario string }{
		{"tsv", f.tsv, out.TSV}, {"json", f.json, out.JSON}, {"markdown", f.markdown, out.Markdown},
		{"junit", f.junit, out.JUnit}, {"html", f.html, out.HTML}, {"hdr", f.hdr, out.HDR},
	} {
		from, p := "--"+o.format, o.flag
		if p == "" {
			from, p = "outputs."+o.format, o.scenario
		}
		if p != "" && (rep.Segment == nil || o.format == "json") {
			// A segment writes its JSON report only: the other reports
			// are the merge's.
			list = append(list, output{format: o.format, from: from, path: p, expanded: rep.Expand(p)})
		}
	}
	return list
}

// extraOutputs are the reports written once a run is judged, beyond the
// TSV and JSON written as it goes.
func extraOutputs(rep *reports.Run, f runFlags) []output {
	var list []output
	for _, o := range runOutputs(rep, f) {
		if o.format != "tsv" && o.format != "json" {
			list = append(list, o)
		}
	}
	return list
}

// renderer is the name in renderers of an output format.
func renderer(format string) string {
	if format == "markdown" {
		return "md"
	}
	return format
}

// planned is one scenario of a `runner run` whose outputs passed the
// checks before any traffic: its file, its report (run ID decided) and
// the locks on its output files.
type planned struct {
	file  string
	rep   *reports.Run
	locks []*reports.OutputLock
}

// heldLocks are the output locks this process holds, for a forced exit
// (a second Ctrl-C) to release: the kernel would release the flocks, but
// the lock files would be left beside the results.
var heldLocks struct {
	sync.Mutex
	locks []*reports.OutputLock
}

// hold records l among the locks held.
func hold(l *reports.OutputLock) {
	heldLocks.Lock()
	defer heldLocks.Unlock()
	heldLocks.locks = append(heldLocks.locks, l)
}

// release gives back every output lock of runs.
func release(runs []planned) {
	heldLocks.Lock()
	defer heldLocks.Unlock()
	for _, p := range runs {
		for _, l := range p.locks {
			l.Release()
			heldLocks.locks = slices.DeleteFunc(heldLocks.locks, func(h *reports.OutputLock) bool { return h == l })
		}
	}
}

// releaseHeld gives back every output lock this process holds; a forced
// exit calls it last.
func releaseHeld() {
	heldLocks.Lock()
	defer heldLocks.Unlock()
	for _, l := range heldLocks.locks {
		l.Release()
	}
	heldLocks.locks = nil
}

// checkTSV is reports.CheckTSV of o, the TSV output of rep. When rep's
// scenario has flows and the file's header is from before the step
// column (reports.TSVLeavesOutSteps), it also says on stderr, after
// prefix, that the steps' rows will not be appended and how to have
// them: rows dropped without a word would read as a run without steps.
func checkTSV(rep *reports.Run, o output, stderr io.Writer, prefix string) error {
	if err := reports.CheckTSV(o.expanded); err != nil {
		return err
	}
	if rep.Plan != nil && len(rep.Plan.FlowSteps) > 0 && reports.TSVLeavesOutSteps(o.expanded) {
		fmt.Fprintf(stderr, "%s: note: %s %s was begun before the step column: each phase's own row is appended to it, its flow steps' rows are not (its header has no step column); to have them, write to a new file (--tsv NEW.tsv)\n", prefix, o.from, o.expanded)
	}
	return nil
}

// preflight checks, before any traffic, every file the scenarios of one
// `runner run` would write, with {run_id} and {scenario} expanded as
// each run will: each can be written (checkTSV, which also notes a TSV
// that will not take a flow run's step rows; reports.CheckOutput: no directory or device, names within the file
// system's limits); no file is written by two formats, nor by two
// scenarios (except the TSV, which rows are appended to, and the JUnit
// file, which then holds one <testsuite> per scenario); and no other run
// is writing one of them: the JSON, Markdown, JUnit, HTML and HDR files
// are locked (reports.LockOutput) until release. Each problem is printed
// on stderr with the scenario file and the flag naming the path; ok is
// false when there was any (exit 2: nothing was sent), and then nothing
// is locked.
func preflight(reps []planned, f runFlags, stderr io.Writer) (ok bool) {
	bad := false
	for _, p := range reps {
		var errs []error
		for _, o := range runOutputs(p.rep, f) {
			if o.format == "tsv" {
				errs = append(errs, checkTSV(p.rep, o, stderr, "runner: "+p.file))
			} else {
				errs = append(errs, reports.CheckOutput(o.format, o.expanded))
			}
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(stderr, "runner: %s: %v; nothing was sent\n", p.file, err)
			bad = true
		}
	}
	if bad {
		return false
	}
	type use struct {
		file string
		o    output
	}
	seen := map[string]use{}
	for _, p := range reps {
		for _, o := range runOutputs(p.rep, f) {
			key := o.expanded
			if abs, err := filepath.Abs(key); err == nil {
				key = abs
			}
			first, dup := seen[key]
			if !dup {
				seen[key] = use{p.file, o}
				continue
			}
			switch {
			case first.o.format != o.format:
				who := fmt.Sprintf("%s: %s and %s", p.file, first.o.from, o.from)
				if first.file != p.file {
					who = fmt.Sprintf("%s %s and %s %s", first.file, first.o.from, p.file, o.from)
				}
				fmt.Fprintf(stderr, "runner: %s both name %s (one would replace or corrupt the other); give each its own file; nothing was sent\n", who, o.expanded)
				bad = true
			case o.format == "tsv" || o.format == "junit":
				// Rows are appended; the JUnit file holds every suite.
			default:
				fmt.Fprintf(stderr, "runner: %s names one file for several scenarios (%s and %s would both write %s, the last replacing the first); put {scenario} or {run_id} in it; nothing was sent\n",
					o.from, first.file, p.file, o.expanded)
				bad = true
			}
		}
	}
	if bad {
		return false
	}
	locked := map[string]bool{}
	for i := range reps {
		p := &reps[i]
		for _, o := range runOutputs(p.rep, f) {
			if o.format == "tsv" || locked[o.expanded] {
				continue
			}
			holder := fmt.Sprintf("pid %d, runner run %s, run %s, since %s", os.Getpid(), p.file, p.rep.RunID, time.Now().UTC().Format(time.RFC3339))
			l, err := reports.LockOutput(o.format, o.expanded, holder)
			if err != nil {
				hint := ""
				if held := (*reports.HeldError)(nil); errors.As(err, &held) {
					hint = "; wait for it, or choose another file (put {run_id} in the path)"
					if p.rep.Segment != nil {
						hint = "; wait for it, or choose another file (put {segment} in the path: each segment writes its own)"
					}
				}
				fmt.Fprintf(stderr, "runner: %s: %v%s; nothing was sent\n", p.file, err, hint)
				release(reps)
				return false
			}
			locked[o.expanded] = true
			p.locks = append(p.locks, l)
			hold(l)
		}
	}
	return true
}

// junitDocs holds, per JUnit path, the runs of this command already
// written there: a JUnit file named by several scenarios is rewritten
// after each with one <testsuite> per scenario so far. nil (a lone run,
// as `runner calibrate` makes) keeps nothing.
type junitDocs map[string][]*reports.Run

// add appends rep to path's runs and returns them all.
func (d junitDocs) add(path string, rep *reports.Run) []*reports.Run {
	if d == nil {
		return []*reports.Run{rep}
	}
	if !slices.Contains(d[path], rep) { // a run written again (a late signal) is one suite
		d[path] = append(d[path], rep)
	}
	return d[path]
}

// writeReports writes the run's Markdown, JUnit, HTML and HDR reports
// (each atomically) and returns what was written ("junit PATH") and the
// errors of those that could not be, each naming its format and path.
func (a *app) writeReports(rep *reports.Run, f runFlags) (written []string, lost []error) {
	for _, o := range extraOutputs(rep, f) {
		write := func(w io.Writer) error { return render(w, a.renderers[renderer(o.format)], rep) }
		if o.format == "junit" {
			runs := f.junitDocs.add(o.expanded, rep)
			// Each scenario's suite holds its own secrets.
			write = func(w io.Writer) error { return renderRuns(w, reports.JUnitRuns, runs) }
		}
		if err := writeAtomically(o.expanded, write); err != nil {
			lost = append(lost, fmt.Errorf("%s report %s: %w", o.format, o.expanded, err))
			continue
		}
		written = append(written, o.format+" "+o.expanded)
	}
	return written, lost
}
