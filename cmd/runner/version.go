package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/sysinfo"
)

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the runner version, its commit and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e := sysinfo.Collect()
			commit := e.RunnerCommit
			if commit == "" {
				commit = "unknown"
			}
			fmt.Fprintf(stdout, "runner %s (commit %s, %s, %s/%s)\n", e.Runner, commit, e.GoVersion, e.OS, e.Arch)
			return nil
		},
	}
}
