package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/reports"
)

func newMergeCmd(a *app, code *int) *cobra.Command {
	stdout, stderr := a.stdout, a.stderr
	var f runFlags
	var allowIncomplete bool
	cmd := &cobra.Command{
		Use:   "merge FILE...|DIR",
		Short: "Merge the JSON reports of a scale-out's segments and judge them as one run",
		Long: `merge reads the JSON reports of the N segments of one run (runner run
--segment K/N, one per generator) and makes the report one generator would
have made: every count adds up and every histogram merges exactly. Then it
judges every rule, the repeats (median and range) and the self-checks as
runner run does, and writes every report the flags or the scenario's
outputs.* name ({segment} expands to "merged").

A DIR stands for its *.json reports of segments (other reports in it are
left out, and said so). Every segment 0 to N−1 must be given exactly once,
all of one plan (the same scenario, environment and runner version: its
hash), one start instant, phase gap and target, their open phases'
arrivals adding up to the plan's schedule; otherwise nothing is merged
(exit 2).

A segment that could not run makes the merge could-not-run (exit 3); an
interrupted one too, unless --allow-incomplete, which merges the phases
every segment completed and marks the result interrupted (exit 3). A
segment whose generator was the bottleneck (a late release on the
timetable counts as its lateness) makes a pass inconclusive. Target
counters a dial-in moves are shown ± what the segments' readings leave
open, and rules on them are then inconclusive.

Exit code: as runner run: 0 pass, 1 a rule failed, 2 invalid input,
3 could not run, 4 inconclusive.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, parts, skipped, err := loadSegments(args)
			for _, s := range skipped {
				fmt.Fprintf(stderr, "runner merge: left out %s\n", s)
			}
			if err != nil {
				fmt.Fprintf(stderr, "runner merge: %v\n", err)
				return exitError(exitInvalid)
			}
			var base *engine.Result
			var ref *reports.BaselineRef
			if f.baseline != "" {
				b, err := loadBaseline(f.baseline)
				if err != nil {
					fmt.Fprintf(stderr, "runner merge: --baseline: %v\n", err)
					return exitError(exitInvalid)
				}
				base, ref = b.Result, &reports.BaselineRef{File: f.baseline, RunID: b.RunID, Scenario: scenarioNameOf(b)}
			}
			rep, err := execute.Merge(parts, files, execute.MergeOptions{AllowIncomplete: allowIncomplete, Baseline: base, BaselineRef: ref})
			if err != nil {
				fmt.Fprintf(stderr, "runner merge: %v\n", err)
				return exitError(exitInvalid)
			}
			var bad []error
			for _, o := range runOutputs(rep, f) {
				if o.format == "tsv" {
					bad = append(bad, checkTSV(rep, o, stderr, "runner merge"))
				} else {
					bad = append(bad, reports.CheckOutput(o.format, o.expanded))
				}
			}
			if err := errors.Join(bad...); err != nil {
				fmt.Fprintf(stderr, "runner merge: %v\n", err)
				return exitError(exitInvalid)
			}
			var inputs []os.FileInfo
			for _, in := range append(files, f.baseline) {
				if st, err := os.Stat(in); err == nil && in != "" {
					inputs = append(inputs, st)
				}
			}
			for _, o := range runOutputs(rep, f) {
				st, err := os.Stat(o.expanded)
				if err == nil && slices.ContainsFunc(inputs, func(in os.FileInfo) bool { return os.SameFile(in, st) }) {
					fmt.Fprintf(stderr, "runner merge: %s %s is one of the reports merged: it would be overwritten\n", o.from, o.expanded)
					return exitError(exitInvalid)
				}
			}
			tsvPath, jsonPath := outputPaths(rep, f)
			var lost []error
			if tsvPath != "" && rep.Result != nil {
				var rows [][]string
				for _, pr := range rep.Result.Phases {
					rows = append(rows, rep.Rows(pr)...)
				}
				if err := a.appendTSV(tsvPath, rows); err != nil {
					lost = append(lost, err)
					execute.ResultsLost(rep, err)
				}
			}
			lost, written := a.writeResults(rep, jsonPath, f, lost)
			if err := stepSummary(rep); err != nil {
				fmt.Fprintf(stderr, "runner merge: GITHUB_STEP_SUMMARY: %v\n", err)
			}
			out, flush := coloured(stdout)
			reports.Console(rep.Redactor().Writer(out), rep, !f.quiet)
			flush()
			if jsonPath != "" {
				written = append([]string{"json " + jsonPath}, written...)
			}
			if tsvPath != "" {
				written = append([]string{"tsv " + tsvPath}, written...)
			}
			if len(lost) == 0 && len(written) > 0 {
				fmt.Fprintf(stdout, "results: %s\n", strings.Join(written, "; "))
			}
			for _, err := range lost {
				fmt.Fprintf(stderr, "runner merge: results lost: %v\n", err)
			}
			*code = rep.ExitCode
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowIncomplete, "allow-incomplete", false, "merge interrupted segments too: the phases every segment completed, the result marked interrupted (exit 3)")
	cmd.Flags().StringVar(&f.tsv, "tsv", "", "append the merged TSV rows to this file (overrides outputs.tsv)")
	cmd.Flags().StringVar(&f.json, "json", "", "write the merged JSON report to this file (overrides outputs.json; {segment} expands to merged)")
	cmd.Flags().StringVar(&f.markdown, "markdown", "", "write the Markdown report to this file (overrides outputs.markdown)")
	cmd.Flags().StringVar(&f.junit, "junit", "", "write the JUnit XML report to this file (overrides outputs.junit)")
	cmd.Flags().StringVar(&f.html, "html", "", "write the HTML report to this file (overrides outputs.html)")
	cmd.Flags().StringVar(&f.hdr, "hdr", "", "write an HdrHistogram interval log to this file (overrides outputs.hdr)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the header, rules, warnings and verdict")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "a saved JSON result (a run's or a merge's): rules may read baseline.<metric> of the same phase, as in runner run")
	return cmd
}

// loadSegments loads the reports args name: each file as given, each
// directory's *.json reports of segments in name order (the others are
// returned in skipped, with why). A file that is not a report, or a
// directory without a segment's report, is an error, and so is a report
// in a directory that reports.Load refuses (reports.ErrNotReport aside).
func loadSegments(args []string) (files []string, runs []*reports.Run, skipped []string, err error) {
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, nil, skipped, err
		}
		if !st.IsDir() {
			r, err := reports.Load(arg)
			if err != nil {
				return nil, nil, skipped, err
			}
			files, runs = append(files, arg), append(runs, r)
			continue
		}
		found, _ := filepath.Glob(filepath.Join(arg, "*.json"))
		slices.Sort(found)
		n := 0
		for _, file := range found {
			r, err := reports.Load(file)
			switch {
			case errors.Is(err, reports.ErrNotReport):
				skipped = append(skipped, fmt.Sprintf("%s: %v", file, err))
			case err != nil:
				// A runner report it refuses (a newer format, figures
				// that do not hold together): refused, as when given alone.
				return nil, nil, skipped, err
			case r.Segment == nil:
				skipped = append(skipped, file+": not a segment's report")
			default:
				files, runs = append(files, file), append(runs, r)
				n++
			}
		}
		if n == 0 {
			return nil, nil, skipped, fmt.Errorf("%s: no segment's JSON report in it", arg)
		}
	}
	return files, runs, skipped, nil
}

// loadBaseline loads a saved result for --baseline: a run's or a merge's,
// never one segment's, whose counts are its share of a run.
func loadBaseline(path string) (*reports.Run, error) {
	b, err := reports.Load(path)
	if err != nil {
		return nil, err
	}
	if s := b.Segment; s != nil {
		return nil, fmt.Errorf("%s is the report of segment %d/%d, a share of a run: give the merged report (runner merge --json)", path, s.K, s.N)
	}
	return b, nil
}
