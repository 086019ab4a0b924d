package main

import (
	"fmt"
	"io"

	"github.com/runner-dev/runner/internal/execute"
	"github.com/spf13/cobra"
)

func newValidateCmd(stdout, stderr io.Writer, code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files: format, units, rules and plan; send nothing",
		Long: `validate loads each scenario strictly (unknown keys, wrong types, missing
units, impossible values), compiles its rules and its plan, and reports every
problem of every file with file:line:col and the key path. It sends nothing.
Exit 0 when all files are valid, 2 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			bad := 0
			for _, f := range files {
				if _, _, err := execute.Compile(f); err != nil {
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
}
