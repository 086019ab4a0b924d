package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

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

// CalibrationPath is where the calibration is kept:
// $XDG_CONFIG_HOME/runner/calibration.json (or the OS's config directory).
func CalibrationPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "runner", "calibration.json"), nil
}

// LoadCalibration reads the saved calibration if it was made on a machine
// like env's (same CPU model and cores); nil otherwise.
func LoadCalibration(env sysinfo.Env) *Calibration {
	p, err := CalibrationPath()
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

// Calibrate measures this machine's client ceiling: it runs, in this
// process, a scenario that spawns the HTTP reference target with no delay
// (exe is the runner executable, see targets.Self) and drives it over
// loopback with conns closed-model keep-alive connections for three
// repeats of dur after a 1 s warmup each, and returns the median achieved
// rate. The target's stderr goes to stderr. Errors: the run did not pass
// (its exit code is in the message), or no phase was measured.
func Calibrate(ctx context.Context, exe string, conns int, dur time.Duration, stderr io.Writer) (*Calibration, error) {
	yaml := fmt.Sprintf(`version: 1
name: calibrate
target: {serve: http}
driver: {http: {path: /null}}
phases:
  - {name: warmup, warmup: true, closed: {connections: %d}, duration: 1s}
  - {name: ceiling, closed: {connections: %d}, duration: %s}
repeats: 3
`, conns, conns, dur)
	_, pl, err := CompileData("calibrate.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	rep := NewReport(pl)
	if err := Run(ctx, rep, Options{Executable: exe, TargetStderr: stderr, Log: zerolog.Nop()}); err != nil {
		return nil, err
	}
	if rep.ExitCode != ExitPass {
		return nil, fmt.Errorf("the calibration run ended with exit code %d", rep.ExitCode)
	}
	var rates []float64
	for _, pr := range rep.Result.Phases {
		if !pr.Phase.Warmup && pr.Summary != nil {
			rates = append(rates, pr.Summary.AchievedRate())
		}
	}
	if len(rates) == 0 {
		return nil, errors.New("no phase measured")
	}
	slices.Sort(rates)
	return &Calibration{Rate: rates[len(rates)/2], Repeats: rates, Connections: conns, Duration: dur.String(),
		CPUModel: rep.Env.CPUModel, Cores: rep.Env.Cores, Runner: rep.Env.Runner, Measured: time.Now().UTC()}, nil
}
