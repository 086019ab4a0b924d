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
			fmt.Fprintln(stdout, versionLine())
			return nil
		},
	}
}

// versionLine is what `runner version` and `runner --version` print:
// the version (as a release build, `go install …@vX` or a go build in a
// git checkout records it; "dev" when none did), the VCS revision the
// binary was built from (as a release build sets it or the Go toolchain
// recorded it; "unknown" when neither did), the Go version and the
// platform.
func versionLine() string {
	e := sysinfo.Collect()
	commit := e.RunnerCommit
	if commit == "" {
		commit = "unknown"
	}
	return fmt.Sprintf("runner %s (commit %s, %s, %s/%s)", e.Runner, commit, e.GoVersion, e.OS, e.Arch)
}
