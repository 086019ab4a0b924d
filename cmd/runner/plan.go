package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/internal/redact"
)

func newPlanCmd(stdout, stderr io.Writer, code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "plan FILE",
		Short: "Print the execution plan of a scenario; send nothing",
		Long: `plan compiles a scenario and prints, per phase, the load model, connections,
rate schedule, in-flight cap, bound (duration or request count), expected
requests and expected time, then the totals and the rules. It sends nothing.
Values read from ${ENV} are redacted, as in every report.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, pl, err := execute.Compile(args[0])
			if err != nil {
				printErrors(stderr, err)
				return exitError(exitInvalid)
			}
			fmt.Fprint(stdout, redact.New(pl.Scenario.Secrets).String(pl.Describe()))
			return nil
		},
	}
}
