package main

import (
	"github.com/spf13/cobra"
)

func newRoot(a *app, code *int) *cobra.Command {
	stdout, stderr := a.stdout, a.stderr
	root := &cobra.Command{
		Use:   "runner",
		Short: "Declarative load-test scenario runner with honest numbers",
		Long: `runner reads a YAML scenario that says what load to offer (warmup, ramps,
open-model arrival rate or closed-model connections, in-flight cap, repeats),
over which protocol, and what must hold (p99 < 20ms, errors == 0). It compiles
the scenario into a plan, drives the target, measures without coordinated
omission, judges the rules and exits with the verdict:

  0 pass · 1 a rule failed · 2 invalid scenario or usage
  3 could not run or interrupted · 4 inconclusive (e.g. too few samples)

Start with:
  runner run scenarios/quickstart.yaml     run against a spawned reference target
  runner plan scenarios/quickstart.yaml    show what would be sent, send nothing
  runner validate scenarios/*.yaml         check scenarios, send nothing`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// --version and -v, as cobra offers them, print what `runner version`
	// prints.
	root.Version = "set"
	root.SetVersionTemplate(versionLine() + "\n")
	root.Flags().BoolP("version", "v", false, "print the version, its commit, the Go version and the platform")
	root.AddCommand(
		newRunCmd(a, code),
		newValidateCmd(a, code),
		newPlanCmd(a, code),
		newServeCmd(stdout, stderr),
		newMergeCmd(a, code),
		newCompareCmd(stdout, stderr),
		newReportCmd(stdout, stderr),
		newCalibrateCmd(stdout, stderr),
		newVersionCmd(stdout),
		newInitCmd(stdout, stderr),
	)
	return root
}
