package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

// MaxMixWeight bounds the sum of a mix's weights: the mix's cycle holds
// one entry per unit of weight.
const MaxMixWeight = 1_000_000

// flowMix chooses the flow of each iteration: smooth weighted
// round-robin (as nginx balances upstreams) over one cycle of Σweights
// iterations, so that in any Σweights consecutive iterations each flow
// runs exactly its weight, spread evenly, and the requests per step are
// known in advance (they reconcile exactly with a target's counters).
type flowMix struct {
	flows []drivers.Flow
	cycle []int // flow index of each iteration of one cycle
}

// newFlowMix checks flows and builds their cycle. Errors: no flow, a flow
// without steps, a weight below 1, Σweights above MaxMixWeight, an empty
// or repeated step name (step names are unique across the mix).
func newFlowMix(flows []drivers.Flow) (*flowMix, error) {
	if len(flows) == 0 {
		return nil, errors.New("a flow driver with no flow")
	}
	total := 0
	names := map[string]string{}
	for _, f := range flows {
		if f.Weight < 1 {
			return nil, fmt.Errorf("flow %q: weight %d, want ≥ 1", f.Name, f.Weight)
		}
		if total += f.Weight; total > MaxMixWeight {
			return nil, fmt.Errorf("the flows' weights add up to more than %d", MaxMixWeight)
		}
		if len(f.Steps) == 0 {
			return nil, fmt.Errorf("flow %q has no step", f.Name)
		}
		for _, st := range f.Steps {
			if st.Name == "" {
				return nil, fmt.Errorf("flow %q: a step without a name", f.Name)
			}
			if other, dup := names[st.Name]; dup {
				return nil, fmt.Errorf("step %q is in flow %q and in flow %q: step names are unique across the flows", st.Name, other, f.Name)
			}
			names[st.Name] = f.Name
		}
	}
	m := &flowMix{flows: flows, cycle: make([]int, 0, total)}
	current := make([]int, len(flows))
	for range total {
		best := 0
		for i, f := range flows {
			current[i] += f.Weight
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		m.cycle = append(m.cycle, best)
	}
	return m, nil
}

// pick returns the flow of iteration seq (1-based, global across the
// segments of a scale-out run). Iterations go in blocks of one cycle
// (Σweights); each block runs the cycle rotated by a hash of the block's
// number, so that
//   - any block runs each flow exactly its weight (one generator's mix is
//     exact in every Σweights consecutive iterations);
//   - the flow of an iteration depends on its global number alone, so the
//     segments of a scale-out run, merged, ran exactly the mix one
//     generator would have run;
//   - a segment, which runs every N-th global number, still runs the
//     whole mix: without the rotation, segments whose count shares a
//     factor with Σweights would each run only part of the cycle (with
//     1:1 and two segments, one every shop iteration, the other every
//     health check).
func (m *flowMix) pick(seq uint64) int {
	if seq == 0 {
		seq = 1
	}
	w := uint64(len(m.cycle))
	block, pos := (seq-1)/w, (seq-1)%w
	return m.cycle[(pos+mix64(block)%w)%w] // mix64: segment.go
}

// StepResult is one flow step's figures in one (repeat, phase): every
// request of that step, timed from when the step came due (see
// docs/design.md, "Flows").
type StepResult struct {
	// Flow is the name of the flow the step belongs to.
	Flow string `json:"flow"`
	// Name is the step's name.
	Name string `json:"name"`
	// Summary holds the step's counts and distributions: requests are
	// the step's requests sent, response time its completion minus its
	// due instant, service time its completion minus its send.
	Summary *measure.Summary `json:"summary"`
}

// flowRun is the flow side of a phase: the mix and a recorder per step.
type flowRun struct {
	mix  *flowMix
	recs [][]*measure.Recorder // by flow, then step
}

// stepShards bounds the shards of all a phase's step recorders together
// (each has at most the phase's own shards, at least one).
const stepShards = 64

// newFlowRun makes the recorders of a phase's steps with opts, or returns
// nil when d runs no flows.
func newFlowRun(d drivers.Driver, opts measure.Options) (*flowRun, error) {
	fd, ok := d.(drivers.FlowDriver)
	if !ok || fd.Flows() == nil {
		// A driver that can run flows runs none here (an HTTP scenario
		// of one request).
		return nil, nil
	}
	mix, err := newFlowMix(fd.Flows())
	if err != nil {
		return nil, err
	}
	fr := &flowRun{mix: mix, recs: make([][]*measure.Recorder, len(mix.flows))}
	// Each step's recorder takes a share of stepShards shards, its
	// histograms allocated as samples come (about 190 KiB each): 200 steps
	// of 16 eager shards held gigabytes. Many steps split the traffic, so
	// each needs fewer shards to keep its locks uncontended.
	steps := 0
	for _, f := range mix.flows {
		steps += len(f.Steps)
	}
	opts.Lazy = true
	n := min(recordShards(), max(1, stepShards/steps))
	for i, f := range mix.flows {
		for range f.Steps {
			fr.recs[i] = append(fr.recs[i], measure.NewRecorder(n, opts))
		}
	}
	return fr, nil
}

// results summarises every step over elapsed, in mix order.
func (fr *flowRun) results(elapsed time.Duration) []StepResult {
	if fr == nil {
		return nil
	}
	var out []StepResult
	for i, f := range fr.mix.flows {
		for j, st := range f.Steps {
			out = append(out, StepResult{Flow: f.Name, Name: st.Name, Summary: fr.recs[i][j].Summary(elapsed)})
		}
	}
	return out
}

// iteration runs one iteration of the flow chosen for this generator's
// local-th iteration (its global number is seq) and returns
// the iteration's outcome, its first send and its last completion
// (offsets from the phase start). Step 1 is due at intended (first < 0:
// the closed model, due at its own send), step k at step k−1's completion
// plus its think time, waited for with wait (false: the phase was cut
// short). Each step is recorded in its own recorder, its response time
// counted from its due instant; a failed step ends the iteration with
// that step's outcome. do performs one step (the phase's send path:
// connection, deadline, cancellation).
//
// A step the driver never wrote (drivers.Outcome.Unsent) is booked on
// its step's recorder by notSent, never as a request. Step 1 unsent: the
// iteration returns Unsent, its arrival never left the client. A later
// step: the iteration ends as one cut short before that step came due
// (class Cancelled, code "": its user had not sent it).
func (fr *flowRun) iteration(shard int, seq uint64, intended, first time.Duration, wait func(until time.Duration, thinks bool) bool,
	do func(r drivers.Request) (out drivers.Outcome, sent, done time.Duration),
	notSent func(rec *measure.Recorder, shard int, at time.Duration, out drivers.Outcome)) (it drivers.Outcome, sent, done time.Duration) {
	fi := fr.mix.pick(seq)
	f := fr.mix.flows[fi]
	vars := drivers.Vars{}
	for si, st := range f.Steps {
		due := intended
		if si > 0 {
			due = done + st.Think
			if !wait(due, st.Think > 0) {
				// Cut short while thinking: the iteration ends as the
				// phase cut it (cut fills in the class and code).
				it.Class, it.Responded = drivers.Cancelled, false
				return it, sent, done
			}
		}
		rec := fr.recs[fi][si]
		rec.AddArrivals(1) // the step came due
		out, s, d := do(drivers.Request{Seq: seq, Flow: fi, Step: si, Vars: vars})
		if out.Unsent {
			if si == 0 && first < 0 {
				due = s
			}
			notSent(rec, shard, due, out)
			if si == 0 {
				return out, s, d
			}
			it.Dialed += out.Dialed
			it.Class, it.Code, it.Err, it.Responded = drivers.Cancelled, "", nil, false
			return it, sent, done
		}
		if si == 0 {
			sent = s
			if first < 0 {
				due = s
			}
			it.FirstByte = out.FirstByte
		}
		done = d
		rec.Record(shard, &measure.Result{Seq: seq, Intended: due, Sent: s, Done: d, Outcome: out})
		it.BytesIn += out.BytesIn
		it.BytesOut += out.BytesOut
		it.Dialed += out.Dialed
		it.Resent += out.Resent
		it.Connect += out.Connect
		it.Class, it.Code, it.Err, it.Responded = out.Class, out.Code, out.Err, out.Responded
		if out.Class != drivers.OK {
			if out.Err != nil {
				// The iteration's error example names the step that
				// failed (the code is the step's: 403, timeout).
				it.Err = stepError{step: st.Name, err: out.Err}
			}
			return it, sent, done
		}
	}
	return it, sent, done
}

// stepError is a failed step's error as its iteration reports it:
// "step NAME: …".
type stepError struct {
	step string
	err  error
}

func (e stepError) Error() string { return "step " + e.step + ": " + e.err.Error() }
func (e stepError) Unwrap() error { return e.err }

// StepPhases returns what the metrics of each flow step of pr are read
// from (metric.StepPhase of its summary), by step name; nil for a phase
// without flows.
func (pr *PhaseResult) StepPhases() map[string]*metric.Phase {
	if len(pr.Steps) == 0 {
		return nil
	}
	out := make(map[string]*metric.Phase, len(pr.Steps))
	for _, st := range pr.Steps {
		out[st.Name] = metric.StepPhase(st.Summary)
	}
	return out
}

// CheckSteps checks the summary of every flow step of pr
// (measure.Summary.Check), and that each step has one and a name; the
// error names the step. A phase without flows passes.
func (pr *PhaseResult) CheckSteps() error {
	for i, st := range pr.Steps {
		switch {
		case st.Name == "":
			return fmt.Errorf("flow step %d has no name", i+1)
		case st.Summary == nil:
			return fmt.Errorf("flow step %s has no summary", st.Name)
		}
		if err := st.Summary.Check(); err != nil {
			return fmt.Errorf("flow step %s: %w", st.Name, err)
		}
	}
	return nil
}
