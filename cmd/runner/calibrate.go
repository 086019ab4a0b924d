package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/reports"
)

// CeilingFraction is how close to the client's calibrated ceiling a
// phase's achieved rate may come before client-ceiling warns (80 %).
const CeilingFraction = 0.8

// Calibration is this machine's measured client ceiling: the request
// rate runner alone generates over loopback against the built-in null
// target (`runner serve http`, no delay) with a closed model.
type Calibration struct {
	// Rate is the achieved rate, requests/s: the median of the repeats.
	Rate float64 `json:"rate"`
	// Repeats are the repeats' achieved rates, requests/s, ascending.
	Repeats     []float64 `json:"repeats"`
	Connections int       `json:"connections"`
	Duration    string    `json:"duration"`
	CPUModel    string    `json:"cpu_model"`
	Cores       int       `json:"cores"`
	Runner      string    `json:"runner_version"`
	Measured    time.Time `json:"measured"`
}

// calibrationPath is where the calibration is kept:
// $XDG_CONFIG_HOME/runner/calibration.json (or the OS's config directory).
func calibrationPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "runner", "calibration.json"), nil
}

// loadCalibration reads the saved calibration if it was made on a machine
// like env's (same CPU model and cores); nil otherwise.
func loadCalibration(env sysinfo.Env) *Calibration {
	p, err := calibrationPath()
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var c Calibration
	if json.Unmarshal(b, &c) != nil || c.Rate <= 0 || c.CPUModel != env.CPUModel || c.Cores != env.Cores {
		return nil
	}
	return &c
}

// ceilingWarnings warns for each measured HTTP phase whose achieved rate
// came within CeilingFraction of the calibrated client ceiling: the
// client may be the bottleneck, not the target.
func ceilingWarnings(rep *reports.Run, c *Calibration) []engine.Warning {
	if c == nil || rep.Result == nil || rep.Scenario == nil || rep.Scenario.Driver.HTTP == nil {
		return nil
	}
	var ws []engine.Warning
	for _, pr := range rep.Result.Phases {
		if pr.Phase.Warmup || pr.Summary == nil {
			continue
		}
		if a := pr.Summary.AchievedRate(); a >= CeilingFraction*c.Rate {
			ws = append(ws, engine.Warning{Code: "client-ceiling", Phase: pr.Phase.Name, Repeat: pr.Repeat,
				Message: fmt.Sprintf("repeat %d, phase %s: achieved %.0f/s is %.0f %% of this machine's client ceiling (%.0f/s, runner calibrate of %s): the load generator may be the bottleneck, not the target", pr.Repeat, pr.Phase.Name, a, 100*a/c.Rate, c.Rate, c.Measured.Format("2006-01-02"))})
		}
	}
	return ws
}

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
			if conns < 1 || dur <= 0 {
				fmt.Fprintln(stderr, "runner calibrate: --connections must be ≥ 1 and --duration positive")
				return exitError(exitInvalid)
			}
			fmt.Fprintf(stderr, "runner calibrate: %d connections against the built-in null target, 3 repeats of %s after a 1 s warmup each (about %s)\n", conns, dur, (3 * (dur + time.Second)).Round(time.Second))
			c, err := calibrate(cmd.Context(), conns, dur, stderr)
			if err != nil {
				fmt.Fprintln(stderr, "runner calibrate:", err)
				return exitError(exitCouldNotRun)
			}
			p, err := calibrationPath()
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

// calibrate runs the null-target scenario and returns its median rate.
func calibrate(ctx context.Context, conns int, dur time.Duration, stderr io.Writer) (*Calibration, error) {
	dir, err := os.MkdirTemp("", "runner-calibrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "calibrate.yaml")
	yaml := fmt.Sprintf(`version: 1
name: calibrate
target: {serve: http}
driver: {http: {path: /null}}
phases:
  - {name: warmup, warmup: true, closed: {connections: %d}, duration: 1s}
  - {name: ceiling, closed: {connections: %d}, duration: %s}
repeats: 3
`, conns, conns, dur)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	_, pl, err := compile(file)
	if err != nil {
		return nil, err
	}
	js := filepath.Join(dir, "r.json")
	f := runFlags{json: js, quiet: true}
	tuneGC()
	if code := runOne(ctx, newReport(pl), f, func(io.Writer) zerolog.Logger { return zerolog.Nop() }, io.Discard, stderr); code != exitPass {
		return nil, fmt.Errorf("the calibration run ended with exit code %d", code)
	}
	r, err := reports.Load(js)
	if err != nil {
		return nil, err
	}
	var rates []float64
	for _, pr := range r.Result.Phases {
		if !pr.Phase.Warmup && pr.Summary != nil {
			rates = append(rates, pr.Summary.AchievedRate())
		}
	}
	if len(rates) == 0 {
		return nil, errors.New("no phase measured")
	}
	slices.Sort(rates)
	env := sysinfo.Collect()
	return &Calibration{Rate: rates[len(rates)/2], Repeats: rates, Connections: conns, Duration: dur.String(),
		CPUModel: env.CPUModel, Cores: env.Cores, Runner: env.Runner, Measured: time.Now().UTC()}, nil
}

// rateList formats rates as "a, b, c".
func rateList(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strings.Join(parts, ", ")
}
