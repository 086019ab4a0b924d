package drivers

import "time"

// FlowDriver is implemented by drivers whose arrivals run flows: each
// arrival is one iteration of one flow, an ordered list of steps sent one
// after the other on one connection (one virtual user), each step one
// Conn.Do with Request.Flow and Request.Step set. The engine stamps every
// step (docs/design.md, "Flows"): step 1 is due at the arrival's intended
// instant, step k at step k−1's completion plus step k's think time; a
// failed step ends the iteration.
type FlowDriver interface {
	// Flows lists the flows in mix order; at least one, each with at
	// least one step, weights ≥ 1, step names unique across flows.
	Flows() []Flow
}

// Flow is one flow of a mix.
type Flow struct {
	// Name names the flow in reports.
	Name string
	// Weight is the flow's share of the mix, ≥ 1: in any Σweights
	// consecutive iterations the flow runs exactly Weight times.
	Weight int
	// Steps are the flow's steps in order.
	Steps []Step
}

// Step is one step of a flow as the engine sees it: a name for the
// per-step figures and the pause before it.
type Step struct {
	// Name names the step (step.NAME.* metrics); unique across a mix.
	Name string
	// Think is the pause between the previous step's completion and
	// this step's due instant; the first step's is ignored (it is due at
	// the arrival).
	Think time.Duration
}

// Vars are the values one iteration carries from step to step: what
// earlier steps captured, by name. The engine makes one per iteration and
// hands it to every step of it; a step's Do reads what it needs and adds
// what it captures. One goroutine uses it at a time.
type Vars map[string]string
