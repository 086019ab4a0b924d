package execute

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/reports"
)

// MergeOptions are what Merge needs besides the reports.
type MergeOptions struct {
	// AllowIncomplete merges interrupted segments: the phases every
	// segment completed, the result marked interrupted.
	AllowIncomplete bool
	// Baseline is a saved result rules may read as baseline.<metric>;
	// BaselineRef says which run it was (as Options').
	Baseline    *engine.Result
	BaselineRef *reports.BaselineRef
}

// ErrSegments means the reports given to Merge are not the segments of
// one run: one is missing, duplicated, not a segment's, or of another
// plan. Nothing is merged (exit 2, like any other invalid input).
var ErrSegments = errors.New("not the segments of one run")

// MaxStartSpread is how far apart (by their own clocks) the segments of
// a phase may start before the merged result is inconclusive: the same
// bound as the generator's own lateness (engine.LatenessLimit).
const MaxStartSpread = engine.LatenessLimit

// Merge combines the reports of the segments of one scale-out run (each
// from `runner run --segment K/N`; files names them, for messages) into
// the report one generator would have made, and judges it as a run is
// judged (Judge, Decide; against o.Baseline, when given), with these
// additions (docs/design.md,
// "Scale-out"):
//
//   - Every index 0 … N−1 must come exactly once, with one plan hash,
//     one start instant and one target; the fingerprints of each open
//     phase's arrivals must add up to the plan's (engine.Fingerprint).
//     Otherwise the error wraps ErrSegments and nothing is merged.
//   - A segment that could not run makes the merged result could not
//     run; one interrupted (or a snapshot of one still running) is
//     refused the same way unless o.AllowIncomplete, when the phases
//     every segment completed are merged and the result is marked
//     interrupted.
//   - Counts and histograms merge exactly (engine.MergeResults).
//   - A segment whose generator was the bottleneck in a measured phase
//     (engine.GeneratorFault: a late release on the timetable counts
//     there, as lateness), a phase whose segments were released further
//     apart than MaxStartSpread (by their own clocks), and segments on
//     several machines whose clocks are not synchronised are warnings.
//     The first makes a pass inconclusive, and so does the second when
//     the segments had no start instant to keep their arrivals on.
//
// The merged report's environment is the first segment's, with the
// coarsest timer any segment measured.
func Merge(parts []*reports.Run, files []string, o MergeOptions) (*reports.Run, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no report given", ErrSegments)
	}
	bySeg, err := order(parts, files)
	if err != nil {
		return nil, err
	}
	first := bySeg[0]
	rep := &reports.Run{
		RunID:    "merge-" + first.RunID,
		Tool:     first.Tool,
		Scenario: first.Scenario,
		Plan:     first.Plan,
		Env:      first.Env,
		Target:   first.Target,
		Insecure: first.Insecure,
		Started:  first.Started,
		Ended:    first.Ended,
		Result:   &engine.Result{},
		Merged:   &reports.Merged{N: len(bySeg), PlanHash: first.Segment.PlanHash},
	}
	if rep.Plan.Scenario == nil {
		rep.Plan.Scenario = rep.Scenario
	}
	var results []*engine.Result
	var problems []string
	incomplete := false
	for i, p := range bySeg {
		rep.Merged.Segments = append(rep.Merged.Segments, reports.MergedPart{
			File: fileOf(files, p, parts), RunID: p.RunID, Hostname: p.Env.Hostname, Outcome: p.Outcome, Segment: p.Segment, Started: p.Started})
		if p.Started.Before(rep.Started) {
			rep.Started = p.Started
		}
		if p.Ended.After(rep.Ended) {
			rep.Ended = p.Ended
		}
		if t := p.Env.Timer; t != nil && (rep.Env.Timer == nil || t.Precise > rep.Env.Timer.Precise) {
			rep.Env.Timer = t
		}
		results = append(results, p.Result)
		where := fmt.Sprintf("segment %d/%d (%s)", i, len(bySeg), fileOf(files, p, parts))
		switch p.Outcome {
		case Ran:
		case CouldNotRun:
			problems = append(problems, fmt.Sprintf("%s could not run: %s", where, p.Error))
		case Interrupted, Incomplete:
			incomplete = true
			if !o.AllowIncomplete {
				problems = append(problems, fmt.Sprintf("%s is %s (--allow-incomplete merges the phases every segment completed, marked interrupted)", where, p.Outcome))
			}
		default:
			return nil, fmt.Errorf("%w: %s has outcome %q, not a segment's (ran, could-not-run, interrupted or incomplete)", ErrSegments, where, p.Outcome)
		}
		if err := checkPart(p, where); err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		rep.Error = strings.Join(problems, "; ")
		Decide(rep)
		return rep, nil
	}
	if err := checkFingerprints(bySeg, files, parts); err != nil {
		return nil, err
	}
	merged, err := engine.MergeResults(rep.Plan, results)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSegments, err)
	}
	for _, pr := range merged.Phases {
		err := pr.Summary.Check()
		if err == nil {
			err = pr.CheckSteps()
		}
		if err != nil {
			// Counts that add up past int64, say.
			return nil, fmt.Errorf("%w: repeat %d, phase %s: the merged counts do not hold together: %v", ErrSegments, pr.Repeat, pr.Phase.Name, err)
		}
	}
	rep.Result = merged
	if n := len(rep.Plan.Phases) * rep.Plan.Repeats; len(merged.Phases) < n || incomplete {
		// A segment that ran every phase beside one interrupted: the
		// merge holds the phases all of them completed.
		merged.Interrupted = true
	}
	rep.Baseline = o.BaselineRef
	Judge(rep, o.Baseline, nil)
	rep.Warnings = append(rep.Warnings, segmentWarnings(bySeg)...)
	Decide(rep)
	return rep, nil
}

// order checks that parts are segments 0 … N−1 of one plan, each once,
// and returns them in segment order.
func order(parts []*reports.Run, files []string) ([]*reports.Run, error) {
	var n int
	for i, p := range parts {
		s := p.Segment
		if s == nil {
			return nil, fmt.Errorf("%w: %s is not a segment's report (runner run --segment K/N writes one)", ErrSegments, name(files, i))
		}
		if i == 0 {
			n = s.N
		}
		switch {
		case s.N < 1 || s.N > engine.MaxSegments:
			return nil, fmt.Errorf("%w: %s: segment.n is %d, not 1 to %d", ErrSegments, name(files, i), s.N, engine.MaxSegments)
		case s.N != n:
			return nil, fmt.Errorf("%w: %s is segment %d of %d, %s of %d", ErrSegments, name(files, i), s.K, s.N, name(files, 0), n)
		case s.K < 0 || s.K >= n:
			return nil, fmt.Errorf("%w: %s is segment %d of %d", ErrSegments, name(files, i), s.K, s.N)
		case s.PlanHash != parts[0].Segment.PlanHash:
			return nil, fmt.Errorf("%w: %s ran another plan than %s (plan hash %.12s…, not %.12s…): another scenario, environment or runner version", ErrSegments, name(files, i), name(files, 0), s.PlanHash, parts[0].Segment.PlanHash)
		case !sameInstant(s.StartAt, parts[0].Segment.StartAt):
			return nil, fmt.Errorf("%w: %s was started at %s, %s at %s", ErrSegments, name(files, i), instant(s.StartAt), name(files, 0), instant(parts[0].Segment.StartAt))
		case s.PhaseGap != parts[0].Segment.PhaseGap:
			return nil, fmt.Errorf("%w: %s ran the timetable with --phase-gap %s, %s with %s: their later phases started apart", ErrSegments, name(files, i), s.PhaseGap, name(files, 0), parts[0].Segment.PhaseGap)
		case p.Target != parts[0].Target:
			return nil, fmt.Errorf("%w: %s drove %s, %s drove %s", ErrSegments, name(files, i), p.Target, name(files, 0), parts[0].Target)
		}
	}
	bySeg := make([]*reports.Run, n)
	for i, p := range parts {
		k := p.Segment.K
		if bySeg[k] != nil {
			j := slices.Index(parts, bySeg[k])
			return nil, fmt.Errorf("%w: segment %d/%d given twice: %s and %s", ErrSegments, k, n, name(files, j), name(files, i))
		}
		bySeg[k] = p
	}
	var missing []string
	count := 0
	for k, p := range bySeg {
		if p == nil {
			if count++; count <= 10 {
				missing = append(missing, fmt.Sprintf("%d/%d", k, n))
			}
		}
	}
	if count > 10 {
		missing = append(missing, fmt.Sprintf("… %d in all", count))
	}
	if count > 0 {
		return nil, fmt.Errorf("%w: missing segment(s) %s (every K/%d, K from 0 to %d, must be given once)", ErrSegments, strings.Join(missing, ", "), n, n-1)
	}
	if err := samePlan(bySeg, files, parts); err != nil {
		return nil, err
	}
	return bySeg, nil
}

// checkFingerprints checks that the segments' arrivals of every open
// phase add up to the whole plan's schedule.
func checkFingerprints(bySeg []*reports.Run, files []string, parts []*reports.Run) error {
	pl := bySeg[0].Plan
	type key struct {
		repeat int
		phase  string
	}
	sums := map[key]engine.Fingerprint{}
	counted := map[key]int{}
	for _, p := range bySeg {
		for _, fp := range p.Segment.Arrivals {
			k := key{fp.Repeat, fp.Phase}
			if s, ok := sums[k]; ok {
				var err error
				if fp, err = engine.AddFingerprints(s, fp); err != nil {
					return fmt.Errorf("%w: %s: %v", ErrSegments, fileOf(files, p, parts), err)
				}
			}
			sums[k] = fp
			counted[k]++
		}
	}
	for rep := 1; rep <= pl.Repeats; rep++ {
		for i := range pl.Phases {
			want, ok := engine.ArrivalFingerprint(&pl.Phases[i], rep)
			k := key{rep, pl.Phases[i].Name}
			if !ok || counted[k] == 0 {
				continue // closed, or too many arrivals to fingerprint
			}
			if got := sums[k]; counted[k] != len(bySeg) || got != want {
				return fmt.Errorf("%w: repeat %d, phase %s: the segments' arrivals (%d, fingerprint %s, from %d segment(s)) are not the plan's schedule (%d, fingerprint %s)",
					ErrSegments, rep, k.phase, got.Count, got.Sum, counted[k], want.Count, want.Sum)
			}
		}
	}
	return nil
}

// segmentWarnings are the merge's own warnings: a segment's generator
// at fault, a phase whose segments started apart, and unsynchronised
// clocks on several machines.
func segmentWarnings(bySeg []*reports.Run) []engine.Warning {
	var ws []engine.Warning
	n := len(bySeg)
	for k, p := range bySeg {
		for _, pr := range p.Result.Phases {
			if why := engine.GeneratorFault(pr); why != "" {
				ws = append(ws, engine.Warning{Code: "segment-generator", Phase: pr.Phase.Name, Repeat: pr.Repeat, Invalidates: true,
					Message: fmt.Sprintf("repeat %d, phase %s: segment %d/%d: %s; the merged run measures that generator too", pr.Repeat, pr.Phase.Name, k, n, why)})
			}
		}
	}
	if len(bySeg) > 1 {
		rows := len(bySeg[0].Result.Phases)
		for _, p := range bySeg[1:] {
			rows = min(rows, len(p.Result.Phases))
		}
		for j := range rows {
			lo, hi := bySeg[0].Result.Phases[j].Start, bySeg[0].Result.Phases[j].Start
			for _, p := range bySeg[1:] {
				t := p.Result.Phases[j].Start
				if t.Before(lo) {
					lo = t
				}
				if t.After(hi) {
					hi = t
				}
			}
			pr := bySeg[0].Result.Phases[j]
			if spread := hi.Sub(lo); spread > MaxStartSpread {
				why := "each segment's arrivals kept their instants on its timetable; those due before its release were sent late and count as its generator's lateness"
				if !pr.Timetabled {
					why = "they had no common start instant (--start-at): the target did not see their load together as planned"
				}
				ws = append(ws, engine.Warning{Code: "segments-apart", Phase: pr.Phase.Name, Repeat: pr.Repeat, Invalidates: !pr.Timetabled && !pr.Phase.Warmup,
					Message: fmt.Sprintf("repeat %d, phase %s: the segments released it %s apart (more than %s, by their own clocks): %s", pr.Repeat, pr.Phase.Name, spread.Round(time.Millisecond), MaxStartSpread, why)})
			}
		}
	}
	hosts := map[string]bool{}
	var unsynced []string
	for k, p := range bySeg {
		hosts[p.Env.Hostname] = true
		if c := p.Segment.Clock; !c.Synchronised {
			unsynced = append(unsynced, fmt.Sprintf("%d/%d on %s", k, n, p.Env.Hostname))
		}
	}
	if len(hosts) > 1 && len(unsynced) > 0 {
		ws = append(ws, engine.Warning{Code: "clock-unsynchronised", Invalidates: true, Message: fmt.Sprintf("segments ran on %d machines and the clock of segment(s) %s was not synchronised (adjtimex): nothing bounds how far apart their start instants were, so the merged load may never have run together as planned", len(hosts), strings.Join(unsynced, ", "))})
	}
	for _, pr := range bySeg[0].Result.Phases {
		if !pr.Phase.Drop || n < 2 {
			continue
		}
		var dropped int64
		for _, p := range bySeg {
			for _, q := range p.Result.Phases {
				if q.Repeat == pr.Repeat && q.Phase.Index == pr.Phase.Index {
					dropped += q.Summary.Dropped
				}
			}
		}
		if dropped > 0 {
			ws = append(ws, engine.Warning{Code: "segment-slots", Phase: pr.Phase.Name, Repeat: pr.Repeat, Invalidates: !pr.Phase.Warmup,
				Message: fmt.Sprintf("repeat %d, phase %s: the segments dropped %d arrivals (on_saturation: drop): each segment's arrivals can use only its own connections' slots, where one generator would have used any free slot of all of them, so the merged drops are not one generator's", pr.Repeat, pr.Phase.Name, dropped)})
		}
	}
	return ws
}

func sameInstant(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func instant(t *time.Time) string {
	if t == nil {
		return "no start instant"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func name(files []string, i int) string {
	if i < len(files) {
		return files[i]
	}
	return fmt.Sprintf("report %d", i+1)
}

func fileOf(files []string, p *reports.Run, parts []*reports.Run) string {
	return name(files, slices.Index(parts, p))
}

// checkPart checks one segment's recorded result before it is merged:
// every phase's figures hold together (engine.PhaseResult.Check, which
// reports.Load has run already; again here for a Run built in memory),
// and a segment that says it ran holds every (repeat, phase) of the plan.
func checkPart(p *reports.Run, where string) error {
	pl := p.Plan
	if p.Outcome == Ran && len(p.Result.Phases) != pl.Repeats*len(pl.Phases) {
		return fmt.Errorf("%w: %s says it ran, but holds %d of the plan's %d phase results", ErrSegments, where, len(p.Result.Phases), pl.Repeats*len(pl.Phases))
	}
	for _, pr := range p.Result.Phases {
		if err := pr.Check(); err != nil {
			return fmt.Errorf("%w: %s, repeat %d, phase %s: its counts do not hold together: %v", ErrSegments, where, pr.Repeat, pr.Phase.Name, err)
		}
	}
	return nil
}

// samePlan checks that every segment's report holds the first one's
// scenario and plan, as recorded (its plan hash says what it ran; this
// says the report was not edited since).
func samePlan(bySeg []*reports.Run, files []string, parts []*reports.Run) error {
	of := func(r *reports.Run) ([]byte, error) {
		return json.Marshal(struct {
			Scenario any `json:"scenario"`
			Plan     any `json:"plan"`
		}{r.Scenario, r.Plan})
	}
	first, err := of(bySeg[0])
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSegments, fileOf(files, bySeg[0], parts), err)
	}
	for _, p := range bySeg[1:] {
		b, err := of(p)
		if err != nil || !bytes.Equal(b, first) {
			return fmt.Errorf("%w: %s records another scenario or plan than %s under the same plan hash (edited?)", ErrSegments, fileOf(files, p, parts), fileOf(files, bySeg[0], parts))
		}
	}
	return nil
}
