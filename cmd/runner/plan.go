package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/internal/redact"
)

func newPlanCmd(a *app, code *int) *cobra.Command {
	stdout, stderr := a.stdout, a.stderr
	var segment string
	var envs []string
	var over overrides
	var gap time.Duration
	cmd := &cobra.Command{
		Use:   "plan FILE (- for standard input)",
		Short: "Print the execution plan of a scenario; send nothing",
		Long: `plan compiles a scenario and prints, per phase, the load model, connections,
rate schedule, in-flight cap, bound (duration or request count), expected
requests and expected time, then the totals and the rules. It sends nothing.
Values read from ${ENV} are redacted, as in every report.

With --segment K/N it also says what segment K of N of a scale-out runs:
its share of each phase's connections, arrivals and bounds, and the
timetable on which segments started with --start-at start each phase.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := scenarioEnv(envs)
			if err != nil {
				fmt.Fprintf(stderr, "runner plan: %v\n", err)
				return exitError(exitInvalid)
			}
			_, pl, err := a.compileArg(args[0], env, over, new(bool))
			if err != nil {
				printErrors(stderr, err)
				return exitError(exitInvalid)
			}
			text := pl.Describe()
			if segment != "" {
				s, _, err := parseSegment(segment, os.Getenv)
				if err == nil {
					err = execute.CheckSegment(pl, s)
				}
				if err != nil {
					fmt.Fprintf(stderr, "runner plan: --segment: %v\n", err)
					return exitError(exitInvalid)
				}
				text += "\n" + pl.DescribeSegment(s, gap)
			}
			fmt.Fprint(stdout, redact.New(pl.Scenario.Secrets).String(text))
			return nil
		},
	}
	overrideFlags(cmd, &over)
	cmd.Flags().StringArrayVarP(&envs, "env", "e", nil, "KEY=VALUE: ${KEY} reads VALUE, before the process's environment (repeatable)")
	cmd.Flags().StringVar(&segment, "segment", "", "also say what segment K/N of a scale-out runs (its shares and the timetable); auto and auto/N as runner run's")
	cmd.Flags().DurationVar(&gap, "phase-gap", engine.DefaultPhaseGap, "the timetable's gap, as runner run --phase-gap")
	return cmd
}
