package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runner-dev/runner/engine"
)

// FlowMismatch is one phase, measured in two results (a run and its
// baseline, or the two sides of `runner compare`), whose own figures
// count different things: a phase that ran flows counts iterations (an
// iteration's response time runs from its intended start to its last
// step's completion, think times included), one that did not counts
// single requests; and the iterations of flows with other steps are other
// iterations. Its figures (requests, ok, errors, throughput and rates,
// every latency, Little's L) compared across the two say nothing.
type FlowMismatch struct {
	// Phase is the phase's name.
	Phase string
	// BaseFlow and NewFlow say whether each side ran flows in the phase.
	BaseFlow, NewFlow bool
	// OnlyBase and OnlyNew are the flow steps only that side ran in the
	// phase, in mix order; a step both ran is comparable as a step.
	OnlyBase, OnlyNew []string
}

// FlowMismatches compares the phases that both base and new measured,
// by name, in base's order, and returns those whose figures count
// different things (FlowMismatch); nil when none does. Each side may pool
// the phase results of several runs: a phase ran flows on a side when
// any of its results has steps, and its steps are the union of theirs.
// Warmup and interrupted phase results are left out, as neither is
// judged nor compared.
func FlowMismatches(base, new []*engine.PhaseResult) []FlowMismatch {
	bOrder, bSteps := phaseStepNames(base)
	_, nSteps := phaseStepNames(new)
	var out []FlowMismatch
	for _, name := range bOrder {
		ns, ok := nSteps[name]
		if !ok {
			continue
		}
		bs := bSteps[name]
		m := FlowMismatch{Phase: name, BaseFlow: len(bs) > 0, NewFlow: len(ns) > 0}
		for _, s := range bs {
			if !slices.Contains(ns, s) {
				m.OnlyBase = append(m.OnlyBase, s)
			}
		}
		for _, s := range ns {
			if !slices.Contains(bs, s) {
				m.OnlyNew = append(m.OnlyNew, s)
			}
		}
		if len(m.OnlyBase)+len(m.OnlyNew) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// phaseStepNames lists the judged phases of prs by name in order of first
// appearance, each with the names of the flow steps its results ran (the
// union, in mix order; empty for a phase of single requests).
func phaseStepNames(prs []*engine.PhaseResult) ([]string, map[string][]string) {
	var order []string
	steps := map[string][]string{}
	for _, pr := range prs {
		if pr == nil || pr.Phase == nil || pr.Phase.Warmup || pr.Interrupted {
			continue
		}
		name := pr.Phase.Name
		if _, ok := steps[name]; !ok {
			order = append(order, name)
			steps[name] = []string{}
		}
		for _, st := range pr.Steps {
			if !slices.Contains(steps[name], st.Name) {
				steps[name] = append(steps[name], st.Name)
			}
		}
	}
	return order, steps
}

// notComparable names the figures a FlowMismatch makes meaningless.
const notComparable = "requests, ok, errors, error rate, throughput, achieved rate, every latency and Little's L"

// Message says, for people, what m means, naming the sides base and new
// ("BASE", "the baseline"): which side counts what, which figures are not
// comparable, and the steps only one side ran.
func (m FlowMismatch) Message(base, new string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s: ", m.Phase)
	switch {
	case m.BaseFlow && !m.NewFlow:
		fmt.Fprintf(&b, "%s ran flows (its figures count iterations, each over all its steps and think times), %s single requests: ", base, new)
	case !m.BaseFlow && m.NewFlow:
		fmt.Fprintf(&b, "%s ran single requests, %s flows (its figures count iterations, each over all its steps and think times): ", base, new)
	default:
		fmt.Fprintf(&b, "%s and %s ran flows of different steps, so their iterations are different work: ", base, new)
	}
	fmt.Fprintf(&b, "the phase's own figures (%s) are not comparable", notComparable)
	if len(m.OnlyBase) > 0 {
		fmt.Fprintf(&b, "; steps only %s ran: %s", base, strings.Join(m.OnlyBase, ", "))
	}
	if len(m.OnlyNew) > 0 {
		fmt.Fprintf(&b, "; steps only %s ran: %s", new, strings.Join(m.OnlyNew, ", "))
	}
	if m.BaseFlow && m.NewFlow {
		b.WriteString("; a step both ran is comparable as a step")
	}
	return b.String()
}
