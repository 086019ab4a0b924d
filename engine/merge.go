package engine

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
)

// MergeResults combines the results of the segments of one plan (each
// ran Segment.Phase of every phase) into the result one generator would
// have recorded, phase by phase: every count adds up and every
// distribution merges exactly (measure.Summary.Merge: the HdrHistograms
// bucket by bucket, the exact count, min, max and sums alike); the
// connections add up; the lateness is the worst segment's and the late
// arrivals add up; the client CPU, its cores, and the machine's load are
// those of the busiest segment (the highest share of its own cores), so
// that a saturated generator shows in the merged result as it did in its
// segment; the target's counters are, counter by counter, the largest
// reading before and the largest after (below); a phase is interrupted
// when any segment's was, and its start lag is the largest.
//
// Counters: each segment reads the target's counters before and after
// each of its phases. Segments started together (Runner.StartAt) start
// each phase at one instant of the timetable, and every segment's reading
// after a phase comes before the next phase's instant. Counters are
// cumulative, so the largest reading before a phase includes every
// request of the earlier phases (every segment's had ended when it read)
// and none of this one's, and the largest reading after it includes every
// request of this phase and none of the next: their difference is the
// phase's, exactly, when nothing else uses the target. Except for the
// counters a dial-in moves (connections accepted): a segment dials
// between its own readings and the phase's instant, so another segment's
// reading may fall on either side of that dial-in. Each segment reads the
// counters once more after its dial-in (ServerReady); a counter that
// moved there, before this phase or the next, and whose readings differ
// between segments, is known only within the spread of those readings
// (ServerUncertain), and rules on it are inconclusive.
//
// parts are in segment order; each holds the same (repeat, phase) list
// as the others, or a prefix of it when a segment was interrupted: the
// merge holds the phases every part completed (and is then interrupted).
// It returns an error when the parts disagree on which phases ran, or a
// histogram could not hold a sample of another's (it never drops one
// silently).
func MergeResults(pl *Plan, parts []*Result) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("no result to merge")
	}
	n := len(parts[0].Phases)
	for _, p := range parts[1:] {
		n = min(n, len(p.Phases))
	}
	out := &Result{}
	for _, p := range parts {
		out.Interrupted = out.Interrupted || p.Interrupted
		out.ServerAtStart = maxReadings(out.ServerAtStart, p.ServerAtStart, p == parts[0])
	}
	var rows [][]*PhaseResult
	for j := range n {
		row := make([]*PhaseResult, len(parts))
		cut := false
		for k, p := range parts {
			row[k] = p.Phases[j]
			cut = cut || row[k].Interrupted
			a, b := row[0], row[k]
			if a.Phase == nil || b.Phase == nil || a.Repeat != b.Repeat || a.Phase.Index != b.Phase.Index || a.Phase.Name != b.Phase.Name {
				return nil, fmt.Errorf("result %d of the merge: its phase %d is not the first result's (repeat %d, phase %q)", k, j+1, a.Repeat, a.Phase.Name)
			}
		}
		if cut {
			// A phase some segment did not complete is no phase of the
			// merged run: its figures would be another load's.
			out.Interrupted = true
			break
		}
		idx := row[0].Phase.Index
		if idx < 0 || idx >= len(pl.Phases) || pl.Phases[idx].Name != row[0].Phase.Name {
			return nil, fmt.Errorf("phase %q (index %d) is not in the plan", row[0].Phase.Name, idx)
		}
		pr, err := mergePhase(&pl.Phases[idx], row)
		if err != nil {
			return nil, fmt.Errorf("repeat %d, phase %s: %w", row[0].Repeat, row[0].Phase.Name, err)
		}
		out.Phases = append(out.Phases, pr)
		rows = append(rows, row)
	}
	for j, m := range out.Phases {
		moved := dialMoved(rows[j])
		if j+1 < n {
			for c := range dialMoved(allRow(parts, j+1)) {
				moved[c] = true
			}
		}
		for c := range moved {
			if u := spread(rows[j], c, func(pr *PhaseResult) map[string]float64 { return pr.ServerBefore }) +
				spread(rows[j], c, func(pr *PhaseResult) map[string]float64 { return pr.ServerAfter }); u > 0 {
				if m.ServerUncertain == nil {
					m.ServerUncertain = map[string]float64{}
				}
				m.ServerUncertain[c] = u
			}
		}
	}
	return out, nil
}

// allRow is row j of every part.
func allRow(parts []*Result, j int) []*PhaseResult {
	row := make([]*PhaseResult, len(parts))
	for k, p := range parts {
		row[k] = p.Phases[j]
	}
	return row
}

// dialMoved are the counters a segment's dial-in moved before a phase
// (ServerReady above ServerBefore in any segment): the segments' readings
// of them may fall on either side of another segment's dial-in, so their
// merged delta is exact only where all the readings agree.
func dialMoved(row []*PhaseResult) map[string]bool {
	moved := map[string]bool{}
	for _, pr := range row {
		for c, v := range pr.ServerReady {
			if b, ok := pr.ServerBefore[c]; ok && v != b {
				moved[c] = true
			}
		}
	}
	return moved
}

// spread is how far apart the segments' readings of counter c are
// (largest − smallest); 0 when fewer than two read it.
func spread(row []*PhaseResult, c string, of func(*PhaseResult) map[string]float64) float64 {
	lo, hi, seen := 0.0, 0.0, false
	for _, pr := range row {
		v, ok := of(pr)[c]
		if !ok {
			continue
		}
		if !seen || v < lo {
			lo = v
		}
		if !seen || v > hi {
			hi = v
		}
		seen = true
	}
	return hi - lo
}

func mergePhase(p *PhasePlan, row []*PhaseResult) (*PhaseResult, error) {
	first := row[0]
	m := &PhaseResult{
		Repeat: first.Repeat, Phase: p, Start: first.Start,
		Summary: first.Summary.Clone(),
	}
	for _, st := range first.Steps {
		m.Steps = append(m.Steps, StepResult{Flow: st.Flow, Name: st.Name, Summary: st.Summary.Clone()})
	}
	busiest := first
	fetched := true
	for k, pr := range row {
		if k > 0 {
			if err := m.Summary.Merge(pr.Summary); err != nil {
				return nil, fmt.Errorf("segment result %d: %w", k, err)
			}
			if err := mergeSteps(m.Steps, pr.Steps); err != nil {
				return nil, fmt.Errorf("segment result %d: %w", k, err)
			}
			if pr.Start.Before(m.Start) {
				m.Start = pr.Start
			}
		}
		m.Wall = max(m.Wall, pr.Wall)
		m.ConnectionsRequested += pr.ConnectionsRequested
		m.ConnectionsEstablished += pr.ConnectionsEstablished
		m.ConnectionsClosedEarly += pr.ConnectionsClosedEarly
		m.LatenessMax = max(m.LatenessMax, pr.LatenessMax)
		m.LateArrivals += pr.LateArrivals
		m.StepLatenessMax = max(m.StepLatenessMax, pr.StepLatenessMax)
		m.LateSteps += pr.LateSteps
		m.ThinkWakeups += pr.ThinkWakeups
		m.GCPauseMax = max(m.GCPauseMax, pr.GCPauseMax)
		m.Interrupted = m.Interrupted || pr.Interrupted
		m.StartLag = max(m.StartLag, pr.StartLag)
		m.Timetabled = m.Timetabled || pr.Timetabled
		if c := pr.StreamCap; c != nil && (m.StreamCap == nil || *c < *m.StreamCap) {
			m.StreamCap = c
		}
		if pr.ClientCPU/pr.clientCores() > busiest.ClientCPU/busiest.clientCores() {
			busiest = pr
		}
		if m.Target == nil && pr.Target != nil {
			// A target process measured by pid: every segment on its
			// machine measured the same process over the same time.
			m.Target = pr.Target
		}
		if pr.ServerErr != "" {
			m.ServerErr = joinErr(m.ServerErr, "segment result "+strconv.Itoa(k)+": "+pr.ServerErr)
		}
		fetched = fetched && pr.ServerBefore != nil && pr.ServerAfter != nil
		m.ServerBefore = maxReadings(m.ServerBefore, pr.ServerBefore, k == 0)
		m.ServerAfter = maxReadings(m.ServerAfter, pr.ServerAfter, k == 0)
		m.Fetches += pr.Fetches
	}
	m.ClientCPU, m.ClientCores, m.Machine = busiest.ClientCPU, busiest.ClientCores, busiest.Machine
	if !fetched || m.ServerErr != "" {
		m.Fetches = 0
	} else {
		m.Server, m.ServerUnknown = serverDeltas(m.ServerBefore, m.ServerAfter)
	}
	m.Metrics = MetricsOf(m)
	return m, nil
}

// maxReadings is the counter-by-counter largest of two readings of the
// target's counters (a counter one reading lacks is taken from the
// other); nil when both are. first starts from b alone.
func maxReadings(a, b map[string]float64, first bool) map[string]float64 {
	if first || a == nil {
		return maps.Clone(b)
	}
	for c, v := range b {
		if old, ok := a[c]; !ok || v > old {
			a[c] = v
		}
	}
	return a
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// mergeSteps adds the flow steps of another segment's phase (src) into
// dst, step by step: every segment runs the same mix, so the steps are
// the same, in the same order. The error says they are not.
func mergeSteps(dst, src []StepResult) error {
	if len(dst) != len(src) {
		return fmt.Errorf("%d flow steps, the first segment has %d", len(src), len(dst))
	}
	for i := range dst {
		if dst[i].Flow != src[i].Flow || dst[i].Name != src[i].Name {
			return fmt.Errorf("flow step %d is %s/%s, the first segment's %s/%s", i+1, src[i].Flow, src[i].Name, dst[i].Flow, dst[i].Name)
		}
		if err := dst[i].Summary.Merge(src[i].Summary); err != nil {
			return fmt.Errorf("flow step %s: %w", dst[i].Name, err)
		}
	}
	return nil
}
