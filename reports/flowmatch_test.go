package reports

import (
	"fmt"
	"testing"

	"github.com/runner-dev/runner/engine"
)

// phaseOf is a judged phase result of phase name that ran steps (none:
// single requests).
func phaseOf(name string, steps ...string) *engine.PhaseResult {
	pr := &engine.PhaseResult{Phase: &engine.PhasePlan{Name: name}}
	for _, s := range steps {
		pr.Steps = append(pr.Steps, engine.StepResult{Flow: "f", Name: s})
	}
	return pr
}

// TestFlowMismatches: the phases both sides measured whose figures count
// different things, and the words that say so.
func TestFlowMismatches(t *testing.T) {
	warm := phaseOf("warm", "login")
	warm.Phase.Warmup = true
	cut := phaseOf("cut")
	cut.Interrupted = true
	base := []*engine.PhaseResult{
		phaseOf("same", "login", "pay"), phaseOf("same", "login", "pay"), // two repeats
		phaseOf("flowVsReq", "login", "pay"),
		phaseOf("reqVsFlow"),
		phaseOf("other", "login", "pay"),
		phaseOf("plain"),
		phaseOf("onlyBase", "x"),
		warm, cut,
	}
	nw := []*engine.PhaseResult{
		phaseOf("same", "pay", "login"), // the same steps in another order
		phaseOf("flowVsReq"),
		phaseOf("reqVsFlow", "look"),
		phaseOf("other", "login", "look"),
		phaseOf("plain"),
		phaseOf("warm"), // a warmup on one side: never compared
		phaseOf("cut", "a"),
	}
	var got []string
	for _, m := range FlowMismatches(base, nw) {
		got = append(got, fmt.Sprintf("%s %v/%v %v %v", m.Phase, m.BaseFlow, m.NewFlow, m.OnlyBase, m.OnlyNew))
	}
	want := "[flowVsReq true/false [login pay] [] reqVsFlow false/true [] [look] other true/true [pay] [look]]"
	if fmt.Sprint(got) != want {
		t.Errorf("mismatches %s\nwant %s", got, want)
	}
	for _, c := range []struct {
		m    FlowMismatch
		want string
	}{
		{FlowMismatch{Phase: "steady", BaseFlow: true, OnlyBase: []string{"login", "pay"}},
			"phase steady: BASE ran flows (its figures count iterations, each over all its steps and think times), NEW single requests: the phase's own figures (requests, ok, errors, error rate, throughput, achieved rate, every latency and Little's L) are not comparable; steps only BASE ran: login, pay"},
		{FlowMismatch{Phase: "steady", NewFlow: true, OnlyNew: []string{"look"}},
			"phase steady: BASE ran single requests, NEW flows (its figures count iterations, each over all its steps and think times): the phase's own figures (requests, ok, errors, error rate, throughput, achieved rate, every latency and Little's L) are not comparable; steps only NEW ran: look"},
		{FlowMismatch{Phase: "steady", BaseFlow: true, NewFlow: true, OnlyBase: []string{"pay"}, OnlyNew: []string{"look"}},
			"phase steady: BASE and NEW ran flows of different steps, so their iterations are different work: the phase's own figures (requests, ok, errors, error rate, throughput, achieved rate, every latency and Little's L) are not comparable; steps only BASE ran: pay; steps only NEW ran: look; a step both ran is comparable as a step"},
	} {
		if got := c.m.Message("BASE", "NEW"); got != c.want {
			t.Errorf("message\n%s\nwant\n%s", got, c.want)
		}
	}
}
