package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/targets"
	"github.com/spf13/cobra"
)

// minCalibration is the shortest repeat calibrate measures over.
const minCalibration = 100 * time.Millisecond

func newCalibrateCmd(stdout, stderr io.Writer) *cobra.Command {
	var conns int
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "calibrate [--connections 50] [--duration 5s]",
		Short: "Measure this machine's client ceiling against a built-in null target, and save it",
		Long: `calibrate spawns the HTTP reference target with no delay and drives it
over loopback with a closed model (keep-alive) for three repeats of the
given duration: the median achieved rate is the most this machine's client
can generate. It is saved (` + "$XDG_CONFIG_HOME/runner/calibration.json" + `)
with the CPU model and cores; later HTTP runs on the same kind of machine
warn (client-ceiling) when a phase achieves 80 % of it or more.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A ceiling measured over less than 100 ms (a few requests)
			// would replace a good calibration with a meaningless one.
			switch {
			case conns < 1 || conns > engine.MaxConnections:
				fmt.Fprintf(stderr, "runner calibrate: --connections %d: want 1 to %d\n", conns, engine.MaxConnections)
				return exitError(exitInvalid)
			case dur < minCalibration || dur > engine.MaxTime:
				fmt.Fprintf(stderr, "runner calibrate: --duration %s: want %s to %s\n", dur, minCalibration, engine.MaxTime)
				return exitError(exitInvalid)
			}
			fmt.Fprintf(stderr, "runner calibrate: %d connections against the built-in null target, 3 repeats of %s after a 1 s warmup each (about %s)\n", conns, dur, (3 * (dur + time.Second)).Round(time.Second))
			exe, err := targets.Self()
			if err != nil {
				fmt.Fprintln(stderr, "runner calibrate: find the runner executable to spawn the target:", err)
				return exitError(exitCouldNotRun)
			}
			tuneGC()
			c, err := execute.Calibrate(cmd.Context(), exe, conns, dur, stderr)
			if err != nil {
				fmt.Fprintln(stderr, "runner calibrate:", err)
				return exitError(exitCouldNotRun)
			}
			p, err := execute.CalibrationPath()
			if err == nil {
				err = writeAtomically(p, func(w io.Writer) error {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(c)
				})
			}
			if err != nil {
				fmt.Fprintln(stderr, "runner calibrate: saving:", err)
				return exitError(exitCouldNotRun)
			}
			fmt.Fprintf(stdout, "client ceiling %.0f requests/s (%d connections, keep-alive, %s × 3, %s, %d cores); saved to %s\n", c.Rate, c.Connections, c.Duration, c.CPUModel, c.Cores, p)
			fmt.Fprintf(stdout, "repeats %s requests/s: the median is the ceiling; a wide range means a busy machine, so calibrate again when it is quiet\n", rateList(c.Repeats))
			return nil
		},
	}
	cmd.Flags().IntVar(&conns, "connections", 50, "closed-model connections")
	cmd.Flags().DurationVar(&dur, "duration", 5*time.Second, "length of each of the three repeats")
	return cmd
}

// rateList formats rates as "a, b, c".
func rateList(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strings.Join(parts, ", ")
}
