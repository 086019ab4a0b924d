// Package compare compares two sets of runs of one scenario, BASE and
// NEW, loaded from their JSON reports: per phase and metric, the median
// and range of each side over its repeats, the change of the medians and
// whether it stands out from the noise (Mann–Whitney U test), and every
// parameter of the setup that differs between the two sides, so that a
// change is attributed to one cause only when only one thing changed.
package compare

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/runner-dev/runner/reports"
)

// Side is one side of a comparison: the reports it pools. Every phase
// result of every report is one more repeat of that side.
type Side struct {
	// Label is "BASE" or "NEW".
	Label string
	// Arg is the path given on the command line (a file or a directory).
	Arg string
	// Files are the reports pooled, in name order; Runs the loaded reports
	// in the same order.
	Files []string
	Runs  []*reports.Run
	// Skipped lists the *.json files of a directory that were left out
	// because they are not runner reports, with the reason; Other counts
	// the reports of other scenarios left out by --scenario.
	Skipped []string
	Other   int
}

// Scenario is the scenario name shared by every report of the side.
func (s *Side) Scenario() string {
	if len(s.Runs) == 0 {
		return ""
	}
	return scenarioName(s.Runs[0])
}

func scenarioName(r *reports.Run) string {
	if r.Scenario == nil {
		return ""
	}
	return r.Scenario.Name
}

// LoadSide reads one side: a JSON report, or a directory whose *.json
// reports are pooled (not recursive; a file there that is not a runner
// report, reports.ErrNotReport, is skipped and listed in Skipped, but a
// runner report that reports.Load refuses, of a newer format say, is an
// error). When scenario is not empty, only
// reports of that scenario are kept from a directory (a file given
// explicitly must be of it). The reports of one side must all be of one
// scenario: pooling runs of different scenarios is refused.
func LoadSide(label, path, scenario string) (*Side, error) {
	s := &Side{Label: label, Arg: path}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if !st.IsDir() {
		r, err := reports.Load(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if scenario != "" && scenarioName(r) != scenario {
			return nil, fmt.Errorf("%s: %s is a report of scenario %q, not %q", label, path, scenarioName(r), scenario)
		}
		s.Files, s.Runs = []string{path}, []*reports.Run{r}
		return s, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	sort.Strings(files)
	names := map[string][]string{}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		r, err := reports.Load(f)
		switch {
		case errors.Is(err, reports.ErrNotReport):
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s: %v", f, err))
			continue
		case err != nil:
			// A runner report it cannot read (a newer format, figures
			// that do not hold together): refused, as when given alone.
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		name := scenarioName(r)
		if scenario != "" && name != scenario {
			s.Other++
			continue
		}
		names[name] = append(names[name], f)
		s.Files = append(s.Files, f)
		s.Runs = append(s.Runs, r)
	}
	if len(s.Runs) == 0 {
		if scenario != "" {
			return nil, fmt.Errorf("%s: %s holds no runner JSON report of scenario %q", label, path, scenario)
		}
		return nil, fmt.Errorf("%s: %s holds no runner JSON report (*.json)", label, path)
	}
	if len(names) > 1 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(names)) {
			parts = append(parts, fmt.Sprintf("%q (%d)", n, len(names[n])))
		}
		return nil, fmt.Errorf("%s: %s mixes reports of several scenarios: %s; runs of different scenarios are not repeats of one another: pass --scenario NAME to pick one",
			label, path, strings.Join(parts, ", "))
	}
	return s, nil
}

// ErrNoCommonPhase is returned when the two sides share no non-warmup
// phase measured in at least one repeat.
var ErrNoCommonPhase = errors.New("no common phase")
