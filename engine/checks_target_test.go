package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/internal/clock"
	"github.com/runner-dev/runner/internal/procstat"
	"github.com/runner-dev/runner/schema"
)

// twoPhasePlan is a warmup and a measured open phase, repeated twice.
func twoPhasePlan(t *testing.T) *Plan {
	t.Helper()
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 2, Phases: []schema.Phase{
		{Name: "warm", Warmup: true, Closed: &schema.Closed{Connections: 1}, Duration: dur("1s")},
		{Name: "steady", Open: &schema.Open{Rate: constRate(50), Connections: 2}, Duration: dur("2s")},
	}}
	pl, err := Compile(sc, Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// The target meter starts when a phase's time starts and ends with it,
// once per (repeat, phase); its usage lands in the phase's result and in
// the rules as target.*; a failed measurement is reported, not fatal.
// The counters fetched before the first phase are kept as the run's
// starting counters, not those of a later phase.
func TestTargetMeterAndCountersAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(5 * time.Millisecond)}
		pl := twoPhasePlan(t)
		calls, fetches := 0, 0.0
		r := &Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper,
			Counters: func(context.Context) (map[string]float64, error) {
				fetches++
				return map[string]float64{"requests": 7 + fetches}, nil
			},
			TargetMeter: func() func() (*TargetUsage, error) {
				calls++
				n := calls
				t0 := time.Now()
				return func() (*TargetUsage, error) {
					if n == 3 {
						return nil, errors.New("no such process")
					}
					// The measurement spans the phase (fake time).
					return &TargetUsage{CPU: 0.25, CPUMaxThread: time.Since(t0).Seconds() / 10, RSS: int64(n) << 20}, nil
				}
			}}
		res, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		if calls != 4 {
			t.Fatalf("meter started %d times, want once per (repeat, phase) = 4", calls)
		}
		if got := res.ServerAtStart["requests"]; got != 8 {
			t.Errorf("counters at start %v, want the first fetch (8)", res.ServerAtStart)
		}
		// A target that counts only our scrapes: each delta holds the
		// fetches the phase says fell inside it.
		for i, pr := range res.Phases {
			if pr.Fetches != 1 || pr.Server["requests"] != 1 {
				t.Errorf("phase %d: fetches %d, scrapes counted in the delta %v", i, pr.Fetches, pr.Server["requests"])
			}
		}
		steady := res.Phases[1]
		if steady.Target == nil || steady.Target.RSS != 2<<20 || steady.Target.CPUMaxThread < 0.2 {
			t.Fatalf("steady target usage %+v, want the second measurement over its 2 s", steady.Target)
		}
		if res.Phases[2].Target != nil || res.Phases[2].TargetErr != "no such process" {
			t.Errorf("failed measurement: %+v %q", res.Phases[2].Target, res.Phases[2].TargetErr)
		}
		rule, err := rules.Compile("target.cpu < 0.5 && target.rss < 4000000")
		if err != nil {
			t.Fatal(err)
		}
		if j := rules.Judge(rule, []rules.Env{RuleEnv(steady)}); j.Status != rules.Pass {
			t.Errorf("target rule on a measured phase: %v (%s)", j.Status, j.Reason)
		}
		// Not measured: the rule cannot pass.
		if j := rules.Judge(rule, []rules.Env{RuleEnv(res.Phases[2])}); j.Status == rules.Pass {
			t.Errorf("target rule on an unmeasured phase passed")
		}
	})
}

func TestTargetThreadBoundWarning(t *testing.T) {
	pl := twoPhasePlan(t)
	res := &Result{}
	phase := func(rep, i int, wall time.Duration, u *TargetUsage) {
		res.Phases = append(res.Phases, &PhaseResult{Repeat: rep, Phase: &pl.Phases[i], Summary: emptySummary(), Wall: wall, Target: u})
	}
	phase(1, 0, time.Second, &TargetUsage{CPU: 0.2, CPUMaxThread: 0.99})    // warmup: never warned
	phase(1, 1, 2*time.Second, &TargetUsage{CPU: 0.45, CPUMaxThread: 0.95}) // pinned thread, low total: warned
	phase(2, 0, time.Second, nil)
	phase(2, 1, 2*time.Second, &TargetUsage{CPU: 0.6, CPUMaxThread: 0.95}) // the machine is busy too: not the thread's fault
	var got []Warning
	for _, w := range Checks(pl, res) {
		if w.Code == "target-thread-bound" {
			got = append(got, w)
		}
	}
	if len(got) != 1 || got[0].Repeat != 1 || got[0].Phase != "steady" || !strings.Contains(got[0].Message, "95 % of a core") || got[0].Invalidates {
		t.Fatalf("warnings %+v, want one for repeat 1 steady", got)
	}
	// Below the threshold: no warning.
	res.Phases[1].Target.CPUMaxThread = 0.85
	for _, w := range Checks(pl, res) {
		if w.Code == "target-thread-bound" {
			t.Fatalf("warned at 85 %% of a core: %+v", w)
		}
	}
}

func TestStaleCounters(t *testing.T) {
	// control_* counters are the runner's own health checks and fetches.
	res := &Result{ServerAtStart: map[string]float64{"requests": 12, "ok": 10, "errors": 0, "status_503": 2, "control_connections": 2}}
	ws := StaleCounters(res, true)
	if len(ws) != 1 || ws[0].Code != "stale-target-counters" || ws[0].Invalidates {
		t.Fatalf("%+v", ws)
	}
	// Every non-zero counter is named with its value, in order; zeros are not.
	if m := ws[0].Message; !strings.Contains(m, "(ok=10 requests=12 status_503=2)") || strings.Contains(m, "errors=") || strings.Contains(m, "control") {
		t.Errorf("message %q", m)
	}
	if ws := StaleCounters(res, false); ws != nil {
		t.Errorf("a target given by URL is long-lived: %+v", ws)
	}
	if ws := StaleCounters(&Result{ServerAtStart: map[string]float64{"requests": 0, "control_connections": 2, "tcp.control_accepts": 1}}, true); ws != nil {
		t.Errorf("zero counters warned: %+v", ws)
	}
	if ws := StaleCounters(&Result{}, true); ws != nil {
		t.Errorf("no counters fetched, warned: %+v", ws)
	}
}

func TestTimerGranularityWarning(t *testing.T) {
	open := twoPhasePlan(t) // warmup closed without think time + open
	closedThink := onePhase(t, schema.Phase{Name: "c", Closed: &schema.Closed{Connections: 1, ThinkTime: dur("10ms")}, Duration: dur("1s")}, time.Second)
	closedPlain := onePhase(t, schema.Phase{Name: "c", Closed: &schema.Closed{Connections: 1}, Duration: dur("1s")}, time.Second)
	coarseTimer := clock.Resolution{Sleep: time.Millisecond, Samples: 25, Timer: 1500 * time.Microsecond, Precise: 60 * time.Microsecond, PreciseAvailable: true}
	codes := func(ws []Warning) string {
		var s []string
		for _, w := range ws {
			s = append(s, w.Code+": "+w.Message)
		}
		return strings.Join(s, "\n")
	}
	// The open pacer uses the precise clock: a coarse Go timer does not matter.
	if ws := TimerGranularity(open, coarseTimer); len(ws) != 0 {
		t.Errorf("open plan on a fine precise clock warned:\n%s", codes(ws))
	}
	// Think time sleeps on Go timers: it does.
	if ws := TimerGranularity(closedThink, coarseTimer); len(ws) != 1 || !strings.Contains(ws[0].Message, "think time") {
		t.Errorf("think time on a coarse Go timer:\n%s", codes(ws))
	}
	if ws := TimerGranularity(closedPlain, coarseTimer); len(ws) != 0 {
		t.Errorf("a closed plan that never sleeps warned:\n%s", codes(ws))
	}
	// Without a timerfd the pacer falls back to Go timers.
	noFD := coarseTimer
	noFD.PreciseAvailable, noFD.Precise = false, noFD.Timer
	if ws := TimerGranularity(open, noFD); len(ws) != 1 || ws[0].Code != "timer-granularity" || !strings.Contains(ws[0].Message, "open-model arrivals") {
		t.Errorf("open plan without timerfd:\n%s", codes(ws))
	}
	coarsePrecise := coarseTimer
	coarsePrecise.Precise = 2 * time.Millisecond
	if ws := TimerGranularity(open, coarsePrecise); len(ws) != 1 || !strings.Contains(ws[0].Message, "2ms") {
		t.Errorf("coarse precise clock:\n%s", codes(ws))
	}
}

func emptySummary() *measure.Summary {
	return measure.NewRecorder(1, measure.Options{Duration: time.Second}).Summary(time.Second)
}

// TestCountersMoved: between two phases of a repeat nothing of ours runs,
// so counters that moved from one fetch to the next counted someone
// else's traffic; after a phase with timeouts our own late replies may
// still move them, and across repeats our connections close: no warning.
func TestCountersMoved(t *testing.T) {
	ph := func(rep int, name string, before, after map[string]float64, timeouts int64) *PhaseResult {
		return &PhaseResult{Repeat: rep, Phase: &PhasePlan{Name: name}, Summary: &measure.Summary{Timeouts: timeouts},
			ServerBefore: before, ServerAfter: after}
	}
	m := func(req, ctl float64) map[string]float64 {
		return map[string]float64{"requests": req, "control_connections": ctl}
	}
	res := &Result{Phases: []*PhaseResult{
		ph(1, "a", m(0, 1), m(100, 2), 0),
		ph(1, "b", m(107, 3), m(200, 4), 0),  // 7 foreign requests between a and b
		ph(1, "c", m(201, 5), m(300, 6), 3),  // a move of 1: our own fetch
		ph(1, "d", m(305, 7), m(400, 8), 0),  // after a phase with timeouts: not judged
		ph(2, "a", m(405, 9), m(500, 10), 0), // a new repeat: not compared
	}}
	ws := CountersMoved(res, 1, nil)
	if len(ws) != 1 || ws[0].Code != "shared-target-counters" || ws[0].Phase != "b" || ws[0].Repeat != 1 {
		t.Fatalf("%+v", ws)
	}
	if !strings.Contains(ws[0].Message, "requests 100 → 107") || strings.Contains(ws[0].Message, "control") {
		t.Errorf("message %q", ws[0].Message)
	}
	// Merged from 8 segments, each of which fetched: a move of up to 8
	// may be theirs.
	if ws := CountersMoved(res, 8, nil); len(ws) != 0 {
		t.Errorf("8 fetchers, a move of 7 warned: %+v", ws)
	}
	if ws := CountersMoved(&Result{Phases: []*PhaseResult{ph(1, "a", nil, nil, 0), ph(1, "b", nil, nil, 0)}}, 1, nil); ws != nil {
		t.Errorf("no counters fetched, warned: %+v", ws)
	}
	// Only the counters the rules read are looked at: a byte counter
	// moves with every fetch (HAProxy's bytes_out by the size of its
	// exposition) and says nothing about another client.
	bytes := func(req, out float64) map[string]float64 {
		return map[string]float64{"requests": req, "bytes_out": out}
	}
	fetchMoves := &Result{Phases: []*PhaseResult{
		ph(1, "a", bytes(0, 0), bytes(100, 9000), 0),
		ph(1, "b", bytes(101, 14000), bytes(200, 23000), 0),
	}}
	if ws := CountersMoved(fetchMoves, 1, []string{"requests"}); len(ws) != 0 {
		t.Errorf("a counter no rule reads warned: %+v", ws)
	}
	if ws := CountersMoved(fetchMoves, 1, []string{"bytes_out", "requests"}); len(ws) != 1 || !strings.Contains(ws[0].Message, "bytes_out 9000 → 14000") || strings.Contains(ws[0].Message, "requests") {
		t.Errorf("bytes_out read by a rule: %+v", ws)
	}
}

// machineChecks returns, for the measured phase of pl, a phase result of
// 2 s with the machine's, the client's and the target's CPU, and a
// function that runs the checks on one such result and returns the
// warnings' messages by code.
func machineChecks(pl *Plan) (func(procstat.MachineUsage, float64, *TargetUsage) *PhaseResult, func(*PhaseResult) map[string]string) {
	ph := func(m procstat.MachineUsage, client float64, target *TargetUsage) *PhaseResult {
		return &PhaseResult{Repeat: 1, Phase: &pl.Phases[1], Summary: emptySummary(), Wall: 2 * time.Second,
			ClientCPU: client, Target: target, Machine: &m}
	}
	codes := func(pr *PhaseResult) map[string]string {
		out := map[string]string{}
		for _, w := range Checks(pl, &Result{Phases: []*PhaseResult{pr}}) {
			out[w.Code] = w.Message
		}
		return out
	}
	return ph, codes
}

// Other processes' CPU: machine busy minus the runner and the target.
// The fresh user's contended run failed with only "a hiccup of the client
// machine" to explain it.
func TestBusyMachineWarning(t *testing.T) {
	pl := twoPhasePlan(t)
	const cores = 2 // the machine's, of which the fractions are
	ph, codes := machineChecks(pl)
	// 1.5 cores busy, the runner 0.5 and the target 0.5 core: 0.5 other.
	w := codes(ph(procstat.MachineUsage{Busy: 1.5, Cores: cores}, 0.5, &TargetUsage{CPU: 0.5 / cores}))
	if m, ok := w["busy-machine"]; !ok || !strings.Contains(m, "other processes kept 0.50 cores") || strings.Contains(m, "target.pid") {
		t.Errorf("busy machine: %q", m)
	}
	// The same without a measured target: it may be the target.
	if m := codes(ph(procstat.MachineUsage{Busy: 1.5, Cores: cores}, 0.5, nil))["busy-machine"]; !strings.Contains(m, "unless target.pid names it") {
		t.Errorf("unmeasured target: %q", m)
	}
	// Everything busy is ours: no warning.
	if _, ok := codes(ph(procstat.MachineUsage{Busy: 1.1, Cores: cores}, 0.6, &TargetUsage{CPU: 0.5 / cores}))["busy-machine"]; ok {
		t.Error("warned with no other process")
	}
	if m := codes(ph(procstat.MachineUsage{Busy: 1, Steal: 0.3, Cores: cores}, 1, nil))["cpu-steal"]; !strings.Contains(m, "0.30 cores") {
		t.Errorf("steal: %q", m)
	}
}

// Under a CPU affinity mask (taskset -c 0 on a 2-core machine) the runner
// may use 1 core of the machine's 2. Machine-wide figures are over the
// machine's 2 cores: the target's fraction of the machine, the other
// processes' load, "this 2-core machine"; the client's saturation is over
// the 1 core it may use (client-cpu, client.cpu).
func TestCoresUnderAffinity(t *testing.T) {
	pl := twoPhasePlan(t)
	mc, codes := machineChecks(pl)
	cores := 1 // the runner may use (recorded with the phase)
	ph := func(m procstat.MachineUsage, client float64, target *TargetUsage) *PhaseResult {
		pr := mc(m, client, target)
		pr.ClientCores = cores
		return pr
	}
	// 1.9 of 2 cores busy: the runner 0.95 core, the target a quarter of
	// the machine (0.5 core): 0.45 other.
	w := codes(ph(procstat.MachineUsage{Busy: 1.9, Cores: 2}, 0.95, &TargetUsage{CPU: 0.25}))
	if m := w["busy-machine"]; !strings.Contains(m, "other processes kept 0.45 cores of this 2-core machine") || !strings.Contains(m, "the runner and the target 1.45") {
		t.Errorf("busy-machine: %q", m)
	}
	if m := w["client-cpu"]; !strings.Contains(m, "client CPU 95 % of the 1 core") {
		t.Errorf("client-cpu: %q, want 95 %% of the 1 core the runner may use", m)
	}
	// The open phase paced one arrival at a time is told of the dispatch
	// window; with a window it is not told again.
	if m := w["client-cpu"]; !strings.Contains(m, "open.dispatch_window") {
		t.Errorf("client-cpu of an open phase without a window: %q, want the dispatch_window hint", m)
	}
	pl.Phases[1].DispatchWindow = time.Millisecond
	if m := codes(ph(procstat.MachineUsage{Busy: 1.9, Cores: 2}, 0.95, nil))["client-cpu"]; m == "" || strings.Contains(m, "dispatch_window") {
		t.Errorf("client-cpu with a window: %q, want the warning without the hint", m)
	}
	pl.Phases[1].DispatchWindow = 0
	rule, err := rules.Compile("client.cpu > 0.9")
	if err != nil {
		t.Fatal(err)
	}
	if v := rule.Eval(RuleEnv(ph(procstat.MachineUsage{Busy: 1.9, Cores: 2}, 0.95, nil))); v.Status != rules.Pass || v.Observed != "client.cpu=0.95" {
		t.Errorf("client.cpu > 0.9: %v %s, want a pass with 0.95 (of the 1 core)", v.Status, v.Observed)
	}
	// Allowed both cores: 0.95 of a core is not saturation.
	cores = 2
	if m, ok := codes(ph(procstat.MachineUsage{Busy: 1.9, Cores: 2}, 0.95, &TargetUsage{CPU: 0.25}))["client-cpu"]; ok {
		t.Errorf("client-cpu with 2 cores allowed: %q", m)
	}
}

// TestJudgeReadsRecordedClientCores: the client's saturation is judged on
// the cores recorded with the phase (ClientCores), not on this process's:
// a result saved on a one-core runner and judged again on a larger
// machine is judged as it was measured.
func TestJudgeReadsRecordedClientCores(t *testing.T) {
	pr := &PhaseResult{ClientCPU: 0.95, ClientCores: 1, Wall: 2 * time.Second}
	if !cpuSaturated(pr) {
		t.Errorf("0.95 of the 1 recorded core: not saturated")
	}
	pr.ClientCores = 8
	if cpuSaturated(pr) {
		t.Errorf("0.95 of 8 recorded cores: saturated")
	}
}

// Counts in warnings agree with their noun: "1 arrival", "2 arrivals".
func TestCountOf(t *testing.T) {
	for n, want := range map[int64]string{0: "0 arrivals", 1: "1 arrival", 2: "2 arrivals", 48: "48 arrivals"} {
		if got := countOf(n, "arrival"); got != want {
			t.Errorf("countOf(%d) = %q, want %q", n, got, want)
		}
	}
}

// Replies that answered no request (unknown or duplicate ids) mean the
// target or the layout's id field is wrong: a run with 1000 of them and
// no error PASSed with nothing in its warnings. They warn, and the
// warning keeps a measured phase from a pass unless a rule on each count
// alone accepts it; late replies (a timeout's own) do not warn.
func TestUnsolicitedRepliesWarn(t *testing.T) {
	pl := twoPhasePlan(t)
	ph, _ := machineChecks(pl)
	for _, c := range []struct {
		unknown, dup, late int64
		want               string
	}{
		{1000, 0, 0, "1000 replies answered no request (unknown id 1000, duplicate id 0)"},
		{0, 7, 0, "7 replies answered no request (unknown id 0, duplicate id 7)"},
		{0, 0, 5, ""},
	} {
		pr := ph(procstat.MachineUsage{}, 0, nil)
		pr.Summary.UnknownID, pr.Summary.DuplicateID, pr.Summary.Late = c.unknown, c.dup, c.late
		ws := Checks(pl, &Result{Phases: []*PhaseResult{pr}})
		var got *Warning
		for i := range ws {
			if ws[i].Code == "unsolicited-replies" {
				got = &ws[i]
			}
		}
		switch {
		case c.want == "" && got != nil:
			t.Errorf("late %d: warned %q", c.late, got.Message)
		case c.want == "":
		case got == nil:
			t.Errorf("unknown %d, duplicate %d: no warning among %+v", c.unknown, c.dup, ws)
		case !strings.Contains(got.Message, c.want) || !got.Invalidates || !Invalidating(ws):
			t.Errorf("warning %+v; want %q, invalidating", *got, c.want)
		}
	}
	// Accepted by a rule on each nonzero count alone; one that merely
	// mentions it (it could pass whatever the count) accepts nothing.
	for _, c := range []struct {
		rules    []string
		accepted bool
	}{
		{[]string{"unknown_id == 0", "worst(duplicate_id) < 10"}, true},
		{[]string{"unknown_id == 0"}, false},
		{[]string{"unknown_id == 0", "errors == 0 or duplicate_id == 0"}, false},
	} {
		pl := twoPhasePlan(t)
		for _, src := range c.rules {
			r, err := rules.Compile(src)
			if err != nil {
				t.Fatal(err)
			}
			pl.Rules = append(pl.Rules, &ScopedRule{Source: src, Rule: r})
		}
		ph, _ := machineChecks(pl)
		pr := ph(procstat.MachineUsage{}, 0, nil)
		pr.Summary.UnknownID, pr.Summary.DuplicateID = 3, 4
		if inv := Invalidating(Checks(pl, &Result{Phases: []*PhaseResult{pr}})); inv == c.accepted {
			t.Errorf("rules %q: invalidating %v, want %v", c.rules, inv, !c.accepted)
		}
	}
}
