package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd(a *app, code *int) *cobra.Command {
	stdout, stderr := a.stdout, a.stderr
	var envs []string
	var over overrides
	cmd := &cobra.Command{
		Use:   "validate FILE... (- for standard input)",
		Short: "Check scenario files: format, units, rules and plan; send nothing",
		Long: `validate loads each scenario strictly (unknown keys, wrong types, missing
units, impossible values), compiles its rules and its plan, and reports every
problem of every file with file:line:col and the key path. It sends nothing.
Exit 0 when all files are valid, 2 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			env, err := scenarioEnv(envs)
			if err != nil {
				fmt.Fprintf(stderr, "runner validate: %v\n", err)
				return exitError(exitInvalid)
			}
			bad, readStdin := 0, false
			for _, f := range files {
				if _, _, err := a.compileArg(f, env, over, &readStdin); err != nil {
					printErrors(stderr, err)
					bad++
					continue
				}
				fmt.Fprintf(stdout, "%s: valid\n", f)
			}
			if bad > 0 {
				fmt.Fprintf(stderr, "%d of %d file(s) invalid\n", bad, len(files))
				return exitError(exitInvalid)
			}
			return nil
		},
	}
	overrideFlags(cmd, &over)
	cmd.Flags().StringArrayVarP(&envs, "env", "e", nil, "KEY=VALUE: ${KEY} reads VALUE, before the process's environment (repeatable)")
	return cmd
}
