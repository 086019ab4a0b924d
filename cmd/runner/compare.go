package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/reports/compare"
)

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	var format, scenario string
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two runs of a scenario from their JSON reports",
		Long: `compare reads the JSON reports of two runs of one scenario (written by
run --json) and says, per non-warmup phase and metric (throughput, p50, p90,
p99, p999, mean, error_rate, achieved_rate, littleL), each side's median and
range [min – max] over its repeats, the change of the medians, and whether it
is distinguishable from noise: a Mann–Whitney U test on the per-repeat values
(α = 0.05), with its p-value. Percentiles are never averaged.

BASE and NEW are each a JSON report or a directory: every *.json report in it
is pooled as more repeats of that side; they must all be of one scenario
(--scenario NAME picks one from a directory of several).

It lists every parameter that differs between the two sides: the scenario's
values, the target command (or URL), the runner and Go versions, the machine
(OS, kernel, CPU model, cores) and the commits. When more than one differs,
a change cannot be attributed to one cause: change one variable at a time.

With fewer than 3 repeats on a side the values are shown without a
significance claim. With 3 and 3 repeats the smallest p-value the test can
give is 0.1, so no change can be called significant: use 5 repeats or more.

Exit code: 0 the comparison was made (whatever it found), 2 usage or invalid
input (unreadable file, not a report, mixed scenarios, no common phase).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "md" {
				fmt.Fprintf(stderr, "runner compare: --format %q: want text or md\n", format)
				return exitError(exitInvalid)
			}
			base, err := compare.LoadSide("BASE", args[0], scenario)
			if err != nil {
				fmt.Fprintf(stderr, "runner compare: %v\n", err)
				return exitError(exitInvalid)
			}
			nw, err := compare.LoadSide("NEW", args[1], scenario)
			if err != nil {
				fmt.Fprintf(stderr, "runner compare: %v\n", err)
				return exitError(exitInvalid)
			}
			for _, s := range []*compare.Side{base, nw} {
				for _, sk := range s.Skipped {
					fmt.Fprintf(stderr, "runner compare: %s: skipped %s\n", s.Label, sk)
				}
				if s.Other > 0 {
					fmt.Fprintf(stderr, "runner compare: %s: left out %d reports of other scenarios\n", s.Label, s.Other)
				}
			}
			res, err := compare.Compare(base, nw)
			if err != nil {
				fmt.Fprintf(stderr, "runner compare: %v\n", err)
				return exitError(exitInvalid)
			}
			if format == "md" {
				err = res.WriteMarkdown(stdout)
			} else {
				err = res.WriteText(stdout)
			}
			if err != nil {
				fmt.Fprintf(stderr, "runner compare: %v\n", err)
				return exitError(exitInvalid)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or md (Markdown tables)")
	cmd.Flags().StringVar(&scenario, "scenario", "", "keep only the reports of this scenario from a directory")
	return cmd
}
