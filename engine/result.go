package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/procstat"
)

// TargetUsage is the target process's resource use over a phase.
type TargetUsage struct {
	// CPU is the process's CPU time over the phase's wall time as a
	// fraction of the machine (1.0: every core busy).
	CPU float64 `json:"cpu"`
	// CPUMaxThread is its busiest thread's CPU time over the phase's wall
	// time as a fraction of one core (1.0: one core fully busy).
	CPUMaxThread float64 `json:"cpu_max_thread"`
	// RSS is its resident set size at the phase's end, in bytes.
	RSS int64 `json:"rss"`
}

// PhaseResult is what one (repeat, phase) measured.
type PhaseResult struct {
	// Repeat is 1-based.
	Repeat int `json:"repeat"`
	// Phase is the plan of the phase (name, index, model, warmup, …).
	Phase *PhasePlan `json:"phase"`
	// Start is the wall-clock instant the barrier released the phase.
	Start time.Time `json:"start"`
	// Summary holds every count and distribution of the phase. With
	// flows (drivers.FlowDriver) an arrival is one iteration: its
	// response time runs from the arrival's intended start to the last
	// step's completion, think times included.
	Summary *measure.Summary `json:"summary"`
	// Steps are the figures of each flow step, in mix order; absent
	// without flows.
	Steps []StepResult `json:"steps,omitempty"`
	// Metrics are the headline figures derived from Summary.
	Metrics *Metrics `json:"metrics"`
	// Wall is the phase's wall-clock length including the end-of-phase
	// drain; Summary.Elapsed is the phase's own length (its duration when
	// bounded by time), the denominator of its rates.
	Wall time.Duration `json:"wall"`
	// ConnectionsRequested and ConnectionsEstablished compare the plan's
	// connections with those that were open when the phase started (for a
	// ramp, at its top stair).
	ConnectionsRequested   int `json:"connections_requested"`
	ConnectionsEstablished int `json:"connections_established"`
	// ConnectionsClosedEarly counts the connections the server accepted
	// and then closed or reset before the phase started (found by the
	// barrier's probe, drivers.Prober) whose one re-dial failed or was
	// closed too: they are not established (a failed re-dial is also a
	// connect failure).
	ConnectionsClosedEarly int `json:"connections_closed_early,omitempty"`
	// LatenessMax is how late the engine sent an arrival that was not
	// waiting for a connection (scheduler lateness); large values mean the
	// load generator fell behind its own schedule.
	LatenessMax time.Duration `json:"lateness_max"`
	// LateArrivals counts the arrivals the pacer dispatched more than
	// LatenessLimit after their intended start although no connection was
	// busy: the generator's own delay, not the target's.
	LateArrivals int64 `json:"late_arrivals"`
	// StepLatenessMax is how late the engine woke for a flow step after
	// its think time (past the step's due instant); 0 without flows. The
	// delay is inside that step's response time, which counts from when
	// the step came due.
	StepLatenessMax time.Duration `json:"step_lateness_max_ns,omitempty"`
	// LateSteps counts the flow steps woken more than LatenessLimit after
	// they came due: the generator's delay, not the target's. They weigh
	// against ThinkWakeups.
	LateSteps int64 `json:"late_steps,omitempty"`
	// ThinkWakeups counts the flow steps that came due after a think time
	// (a step without one is due at once when the previous completes):
	// the wake-ups that can be late.
	ThinkWakeups int64 `json:"think_wakeups,omitempty"`
	// ClientCPU is this process's CPU time over the phase divided by its
	// wall-clock time: 1.0 is one core fully busy (getrusage user+system).
	ClientCPU float64 `json:"client_cpu"`
	// ClientCores is how many cores the runner could use while it measured
	// the phase (its CPU affinity, or GOMAXPROCS when lower): client.cpu
	// and the generator's saturation are over it, so that a result judged
	// again elsewhere (a saved report, a baseline) is judged as recorded.
	// 0 in reports saved before it was recorded (clientCores).
	ClientCores int `json:"client_cores,omitempty"`
	// EventLoops is how many event loops carried the phase's
	// connections (drivers.Looper: one thread each, waiting on its
	// connections' sockets at once; an open phase has one, which keeps
	// the timetable too); 0: a goroutine per connection (and for the
	// open model the pacer).
	EventLoops int `json:"event_loops,omitempty"`
	// GCPauseMax is the longest garbage-collector stop-the-world pause of
	// this process during the phase.
	GCPauseMax time.Duration `json:"gc_pause_max"`
	// Machine is the whole machine's CPU use over the phase, in cores
	// (/proc/stat); nil where it cannot be read. Busy minus ClientCPU and
	// the target's share is other processes' (busy-machine).
	Machine *procstat.MachineUsage `json:"machine_cpu,omitempty"`
	// Server holds the deltas of the target's counters over the phase; nil
	// when not fetched. ServerErr says why they are missing.
	Server    map[string]float64 `json:"server,omitempty"`
	ServerErr string             `json:"server_error,omitempty"`
	// Target is the target process's resource use over the phase; nil
	// when not measured (a target that was not spawned). TargetErr says
	// why a measurement failed.
	Target    *TargetUsage `json:"target,omitempty"`
	TargetErr string       `json:"target_error,omitempty"`
	// ServerBefore and ServerAfter are the target's counters as fetched
	// before and after the phase (Server is their difference); nil when
	// not fetched. A merge of segments takes, counter by counter, the
	// largest reading of each (MergeResults).
	ServerBefore map[string]float64 `json:"server_before,omitempty"`
	ServerAfter  map[string]float64 `json:"server_after,omitempty"`
	// Fetches is how many of the runner's own counter fetches came after
	// the reading ServerBefore and up to the reading ServerAfter, each
	// included: the after fetch, and the ready fetch of a timetabled
	// phase (1 or 2; summed over the segments of a merge). A target that
	// counts every request it serves, its scrapes too, counts these in
	// Server whichever of the fetch's start or end it counts at (the
	// before fetch then counts in ServerBefore, or in the delta instead
	// of the after fetch): rules subtract `fetches`. 0 when not fetched.
	Fetches int `json:"fetches,omitempty"`
	// ServerReady are the counters fetched once the phase's connections
	// were dialled, before its instant on a timetable (Runner.StartAt
	// only): the counters that moved since ServerBefore are those the
	// dial-in moves, which a merge cannot attribute to one phase exactly.
	ServerReady map[string]float64 `json:"server_ready,omitempty"`
	// ServerUncertain, in a merged result, holds the counters whose delta
	// over the phase is known only within ± the value (a segment's dial-in
	// came between the segments' readings); rules on them are
	// inconclusive. nil in a run.
	ServerUncertain map[string]float64 `json:"server_uncertain,omitempty"`
	// ServerUnknown holds the counters read before and after the phase
	// whose delta cannot be known, with why (serverDeltas): one that went
	// backwards (the target restarted, or it is a level, not a count),
	// one that was missing from a reading that held none at all, or not a
	// finite number, or beyond 2⁵³ where float64 readings are inexact.
	// They are not in Server; a rule that reads one is inconclusive.
	ServerUnknown map[string]string `json:"server_unknown,omitempty"`
	// StartLag is how late the phase started after its instant on the
	// timetable (Runner.StartAt); Timetabled says it had one.
	StartLag   time.Duration `json:"start_lag,omitempty"`
	Timetabled bool          `json:"timetabled,omitempty"`
	// Interrupted is true when a signal stopped the phase early.
	Interrupted bool `json:"interrupted,omitempty"`
	// StreamCap is the smallest number of streams a server allowed at
	// once per connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, 0
	// included) when it was below the phase's in-flight per connection
	// (drivers.StreamCapper): requests past it waited in the client for
	// a stream, as arrivals queued for a free slot. nil when no server
	// capped below it; the smallest over the segments of a merge.
	StreamCap *int `json:"stream_cap,omitempty"`
}

// Result is a whole run: every (repeat, phase) that ran, in order.
type Result struct {
	Phases []*PhaseResult `json:"phases"`
	// Interrupted is true when the run was stopped by its context.
	Interrupted bool `json:"interrupted,omitempty"`
	// ServerAtStart are the target's counters fetched before the run's
	// first phase (reconcile.fetch); nil when not fetched. A freshly
	// spawned target starts at zero (StaleCounters).
	ServerAtStart map[string]float64 `json:"server_at_start,omitempty"`
}

// Check verifies that pr's recorded figures hold together, as a result
// read back from a file must before anything renders, compares, merges or
// judges it: its Summary's identities (measure.Summary.Check, the
// intervals' list included), every flow step's (CheckSteps), and its
// other counts and durations none negative, client_cpu a number ≥ 0. The
// error is the first violation found; nil when none.
func (pr *PhaseResult) Check() error {
	if pr.Summary == nil {
		return errors.New("no summary")
	}
	if err := pr.Summary.Check(); err != nil {
		return err
	}
	if err := pr.CheckSteps(); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"connections_requested", int64(pr.ConnectionsRequested)}, {"connections_established", int64(pr.ConnectionsEstablished)},
		{"connections_closed_early", int64(pr.ConnectionsClosedEarly)}, {"late_arrivals", pr.LateArrivals},
		{"lateness_max", int64(pr.LatenessMax)}, {"start_lag", int64(pr.StartLag)}, {"wall", int64(pr.Wall)},
		{"gc_pause_max", int64(pr.GCPauseMax)}, {"client_cores", int64(pr.ClientCores)}, {"fetches", int64(pr.Fetches)},
		{"event_loops", int64(pr.EventLoops)},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s is negative (%d)", f.name, f.v)
		}
	}
	if pr.ClientCPU < 0 || math.IsNaN(pr.ClientCPU) || math.IsInf(pr.ClientCPU, 0) {
		return fmt.Errorf("client_cpu is %v", pr.ClientCPU)
	}
	return nil
}
